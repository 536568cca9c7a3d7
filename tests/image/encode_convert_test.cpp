// The CPU reference of RGB -> YUV for encoding, and the checks of the CUDA entry point (which run
// before anything touches the device).
#include <string>

#include <gtest/gtest.h>

#include "image/encode_convert.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

using enum PixelFormat;

TEST(EncodeConvert, CpuEqualsColorConversion) {
  HostImage rgb(kBGR8, 126, 78, 3, 3);
  rgb.fill_random(1);
  for (PixelFormat format : {kNV12, kYUV420P}) {
    const EncodeConvertParams params{format, ColorMatrix::kBt709, ColorRange::kLimited};
    const ImageBatch input{{rgb.view()}, {Roi{2, 4, 100, 60}}};
    auto plan = plan_rgb_to_yuv_for_encode(input, params);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    ASSERT_EQ(plan->output_sizes[0].width, 100);
    HostImage encoded(format, 100, 60, 3, 1);
    HostImage converted(format, 100, 60);
    ImageBatch encoded_batch{{encoded.view()}, {}};
    ImageBatch converted_batch{{converted.view()}, {}};
    ASSERT_TRUE(run_rgb_to_yuv_for_encode_cpu(input, encoded_batch, params).is_ok());
    ASSERT_TRUE(run_color_convert_cpu(input, converted_batch, color_convert_params(params)).is_ok());
    EXPECT_EQ(max_abs_difference(encoded.view(), converted.view()), 0);
  }
}

ImageView in_memory(ImageView view, MemoryKind memory) {
  view.memory = memory;
  return view;
}

std::string check_error(const ImageView& rgb, const ImageView& scratch, const ImageView& output,
                        PixelFormat format = kNV12) {
  const Status status =
      check_rgb_to_yuv_for_encode({{rgb}, {}}, {{scratch}, {}}, {{output}, {}}, EncodeConvertParams{format});
  return status.is_ok() ? std::string() : status.message();
}

TEST(EncodeConvert, ChecksFormatsSizesAndMemory) {
  HostImage rgb(kRGB8, 64, 48);
  HostImage nv12(kNV12, 64, 48);
  HostImage small(kNV12, 32, 48);
  HostImage i420(kYUV420P, 64, 48);
  const ImageView d_rgb = in_memory(rgb.view(), MemoryKind::kDevice);
  const ImageView d_nv12 = in_memory(nv12.view(), MemoryKind::kDevice);
  const ImageView h_nv12 = in_memory(nv12.view(), MemoryKind::kPinnedHost);
  EXPECT_EQ(check_error(d_rgb, d_nv12, h_nv12), "");
  EXPECT_NE(check_error(d_rgb, d_nv12, nv12.view()).find("pinned host"), std::string::npos);
  EXPECT_NE(check_error(d_rgb, h_nv12, h_nv12).find("device memory"), std::string::npos);
  EXPECT_NE(check_error(d_rgb, d_nv12, in_memory(small.view(), MemoryKind::kPinnedHost)).find("size 32x48"),
            std::string::npos);
  EXPECT_NE(check_error(d_rgb, d_nv12, in_memory(i420.view(), MemoryKind::kPinnedHost)).find("not supported"),
            std::string::npos);
  EXPECT_NE(check_error(d_nv12, d_nv12, h_nv12).find("not supported"), std::string::npos);
  EXPECT_NE(check_error(d_rgb, d_nv12, h_nv12, kP016).find("NV12 or YUV420P"), std::string::npos);
  const Status sizes = check_rgb_to_yuv_for_encode({{d_rgb}, {}}, {{d_nv12}, {}}, {{h_nv12, h_nv12}, {}}, {});
  EXPECT_NE(sizes.message().find("batch sizes differ"), std::string::npos) << sizes.message();
  HostImage odd(kRGB8, 63, 48);
  EXPECT_NE(check_error(in_memory(odd.view(), MemoryKind::kDevice), d_nv12, h_nv12).find("even"),
            std::string::npos);
}

}  // namespace
}  // namespace fovea::image::testing
