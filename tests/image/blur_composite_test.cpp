#include <gtest/gtest.h>

#include "image/blur_composite.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

BlurParams gaussian(int size) {
  BlurParams params;
  params.kernel_width = params.kernel_height = size;
  return params;
}

void fill_mask(HostImage& mask, std::uint8_t value) {
  for (int y = 0; y < mask.view().height; ++y)
    for (int x = 0; x < mask.view().width; ++x) mask.view().row(0, y)[x] = value;
}

TEST(BlurComposite, OpaqueMaskKeepsTheFrameAndClearMaskGivesTheBlur) {
  HostImage frame(PixelFormat::kRGB8, 17, 11, 3, 5);
  frame.fill_random(3);
  HostImage mask(PixelFormat::kGRAY8, 17, 11, 3, 2);
  HostImage out(PixelFormat::kRGB8, 17, 11, 3, 1);
  HostImage blurred(PixelFormat::kRGB8, 17, 11);
  const ImageBatch f{{frame.view()}, {}};
  const ImageBatch m{{mask.view()}, {}};
  const ImageBatch o{{out.view()}, {}};
  fill_mask(mask, 255);
  ASSERT_TRUE(run_blur_composite_cpu(f, m, o, gaussian(7)).is_ok());
  EXPECT_EQ(max_abs_difference(out.view(), frame.view()), 0.0);
  fill_mask(mask, 0);
  ASSERT_TRUE(run_blur_composite_cpu(f, m, o, gaussian(7)).is_ok());
  ASSERT_TRUE(run_blur_cpu(f, {{blurred.view()}, {}}, gaussian(7)).is_ok());
  EXPECT_EQ(max_abs_difference(out.view(), blurred.view()), 0.0);
}

TEST(BlurComposite, HalfMaskAveragesSharpAndBlurred) {
  HostImage frame(PixelFormat::kRGBA8, 9, 9);
  HostImage mask(PixelFormat::kGRAY8, 9, 9);
  HostImage out(PixelFormat::kRGBA8, 9, 9);
  frame.view().row(0, 4)[4 * 4] = 255;  // red impulse at the center
  fill_mask(mask, 51);                  // m = 0.2
  BlurParams params = gaussian(3);
  ASSERT_TRUE(
      run_blur_composite_cpu({{frame.view()}, {}}, {{mask.view()}, {}}, {{out.view()}, {}}, params).is_ok());
  // Blurred center: 255 * 0.25 = 63.75 -> 64; out = (51 * 255 + 204 * 64) / 255 = 102.2 -> 102.
  EXPECT_EQ(out.view().row(0, 4)[4 * 4], 102);
  // A neighbor: blurred 255 * 0.125 = 31.875 -> 32; out = 204 * 32 / 255 = 25.6 -> 26.
  EXPECT_EQ(out.view().row(0, 4)[5 * 4], 26);
}

TEST(BlurComposite, PlanReturnsRoiSizesAndRejectsBadInput) {
  HostImage frame(PixelFormat::kRGB8, 20, 10);
  HostImage mask(PixelFormat::kGRAY8, 20, 10);
  HostImage small_mask(PixelFormat::kGRAY8, 19, 10);
  HostImage nv12(PixelFormat::kNV12, 20, 10);
  const ImageBatch f{{frame.view()}, {Roi{1, 2, 15, 7}}};
  const ImageBatch m{{mask.view()}, {Roi{0, 0, 15, 7}}};
  auto plan = plan_blur_composite(f, m, gaussian(5));
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->output_sizes[0], (std::array<int, 2>{15, 7}));
  EXPECT_FALSE(plan_blur_composite(f, m, gaussian(33)).is_ok());  // above the unrolled radii
  EXPECT_FALSE(plan_blur_composite(f, m, gaussian(4)).is_ok());   // even
  BlurParams constant = gaussian(5);
  constant.border = BorderMode::kConstant;
  constant.border_value = 0.5f;  // the kernel stages bytes
  EXPECT_FALSE(plan_blur_composite(f, m, constant).is_ok());
  constant.border_value = 200.0f;
  EXPECT_TRUE(plan_blur_composite(f, m, constant).is_ok());
  const ImageBatch whole{{frame.view()}, {}};
  EXPECT_FALSE(plan_blur_composite(whole, {{small_mask.view()}, {}}, gaussian(5)).is_ok());
  EXPECT_FALSE(plan_blur_composite({{nv12.view()}, {}}, {{mask.view()}, {}}, gaussian(5)).is_ok());
  EXPECT_FALSE(run_blur_composite_cpu(whole, {{mask.view()}, {}}, whole, gaussian(5)).is_ok());  // aliases
}

}  // namespace
}  // namespace fovea::image::testing
