#include <gtest/gtest.h>

#include "image/batch.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

TEST(ImageBatch, RejectsBadRoisOddChromaAndMixedBatches) {
  HostImage a(PixelFormat::kNV12, 64, 48);
  HostImage odd(PixelFormat::kNV12, 63, 48);
  ImageBatch batch{{a.view()}, {}};
  EXPECT_TRUE(check_batch(batch, {PixelFormat::kNV12}, "input").is_ok());
  batch.rois = {Roi{60, 0, 8, 8}};
  Status outside = check_batch(batch, {PixelFormat::kNV12}, "input");
  EXPECT_FALSE(outside.is_ok());
  EXPECT_NE(outside.message().find("outside"), std::string::npos) << outside.message();
  batch.rois = {Roi{0, 0, 0, 5}};
  EXPECT_FALSE(check_batch(batch, {PixelFormat::kNV12}, "input").is_ok());
  ImageBatch odd_batch{{odd.view()}, {}};
  Status odd_status = check_batch(odd_batch, {PixelFormat::kNV12}, "input");
  EXPECT_NE(odd_status.message().find("odd"), std::string::npos) << odd_status.message();
  EXPECT_FALSE(check_batch(ImageBatch{}, {PixelFormat::kNV12}, "input").is_ok());
  EXPECT_FALSE(check_batch(batch, {PixelFormat::kRGB8}, "input").is_ok());
  ImageBatch two{{a.view(), a.view()}, {}};
  EXPECT_FALSE(check_same_batch_size(batch, two, "input", "output").is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
