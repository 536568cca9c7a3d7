#include <gtest/gtest.h>

#include "image/blur.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

BlurParams box(int size, BorderMode border = BorderMode::kReflect101) {
  BlurParams params;
  params.kind = BlurKind::kBox;
  params.kernel_width = size;
  params.kernel_height = size;
  params.border = border;
  return params;
}

TEST(BlurWeights, MatchOpenCvsSmallTablesAndSumToOne) {
  EXPECT_EQ(blur_weights(BlurKind::kGaussian, 3, 0.0), (std::vector<float>{0.25f, 0.5f, 0.25f}));
  EXPECT_EQ(blur_weights(BlurKind::kGaussian, 5, 0.0),
            (std::vector<float>{0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f}));
  EXPECT_EQ(blur_weights(BlurKind::kGaussian, 9, 0.0)[0], 0.015625f);  // OpenCV's fixed 9-tap table
  const std::vector<float> wide = blur_weights(BlurKind::kGaussian, 15, 0.0);
  float sum = 0.0f;
  for (float w : wide) sum += w;
  EXPECT_NEAR(sum, 1.0f, 1e-6f);
  EXPECT_FLOAT_EQ(wide[0], wide[14]);
  EXPECT_GT(wide[7], wide[6]);
}

TEST(BorderIndex, FollowsOpenCvsBorderInterpolate) {
  EXPECT_EQ(border_index(-1, 5, BorderMode::kReflect101), 1);
  EXPECT_EQ(border_index(5, 5, BorderMode::kReflect101), 3);
  EXPECT_EQ(border_index(-1, 5, BorderMode::kReflect), 0);
  EXPECT_EQ(border_index(6, 5, BorderMode::kReflect), 3);
  EXPECT_EQ(border_index(-3, 5, BorderMode::kReplicate), 0);
  EXPECT_EQ(border_index(9, 5, BorderMode::kReplicate), 4);
  EXPECT_EQ(border_index(-1, 5, BorderMode::kConstant), -1);
  EXPECT_EQ(border_index(2, 5, BorderMode::kConstant), 2);
  // Wider than the row: reflects more than once.
  EXPECT_EQ(border_index(-6, 3, BorderMode::kReflect101), 2);
  EXPECT_EQ(border_index(-4, 1, BorderMode::kReflect101), 0);
}

TEST(Blur, BoxBlur5x5OfAnImpulseIsASquare) {
  HostImage in(PixelFormat::kGRAY8, 9, 9, 3, 3);
  HostImage out(PixelFormat::kGRAY8, 9, 9, 3, 5);
  in.view().row(0, 4)[4] = 250;
  ASSERT_TRUE(run_blur_cpu({{in.view()}, {}}, {{out.view()}, {}}, box(5)).is_ok());
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 9; ++x) {
      const bool inside = std::abs(x - 4) <= 2 && std::abs(y - 4) <= 2;
      EXPECT_EQ(out.view().row(0, y)[x], inside ? 10 : 0) << x << "," << y;
    }
  }
}

TEST(Blur, Gaussian3x3OfAnImpulseIsTheOuterProductOfTheWeights) {
  HostImage in(PixelFormat::kRGB8, 5, 5);
  HostImage out(PixelFormat::kRGB8, 5, 5);
  in.view().row(0, 2)[2 * 3 + 1] = 160;  // green at the center
  BlurParams params;
  params.kernel_width = params.kernel_height = 3;
  ASSERT_TRUE(run_blur_cpu({{in.view()}, {}}, {{out.view()}, {}}, params).is_ok());
  EXPECT_EQ(out.view().row(0, 2)[2 * 3 + 1], 40);  // 160 * 0.5 * 0.5
  EXPECT_EQ(out.view().row(0, 1)[2 * 3 + 1], 20);  // 160 * 0.25 * 0.5
  EXPECT_EQ(out.view().row(0, 1)[1 * 3 + 1], 10);  // 160 * 0.25 * 0.25
  EXPECT_EQ(out.view().row(0, 2)[2 * 3 + 0], 0);   // red stays 0
}

TEST(Blur, ConstantBorderBringsInTheBorderValue) {
  HostImage in(PixelFormat::kGRAY8, 3, 3);
  HostImage out(PixelFormat::kGRAY8, 3, 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) in.view().row(0, y)[x] = 90;
  BlurParams params = box(3, BorderMode::kConstant);
  params.border_value = 0.0f;
  ASSERT_TRUE(run_blur_cpu({{in.view()}, {}}, {{out.view()}, {}}, params).is_ok());
  EXPECT_EQ(out.view().row(0, 1)[1], 90);
  EXPECT_EQ(out.view().row(0, 0)[0], 40);  // 4 of 9 taps inside: 360 / 9
  EXPECT_EQ(out.view().row(0, 0)[1], 60);  // 6 of 9
  for (BorderMode border : {BorderMode::kReplicate, BorderMode::kReflect, BorderMode::kReflect101}) {
    ASSERT_TRUE(run_blur_cpu({{in.view()}, {}}, {{out.view()}, {}}, box(3, border)).is_ok());
    EXPECT_EQ(out.view().row(0, 0)[0], 90);  // a flat image stays flat
  }
}

TEST(Blur, PlanarFloatBlursEachPlane) {
  HostImage in(PixelFormat::kPlanarF32, 7, 4, 2);
  HostImage out(PixelFormat::kPlanarF32, 7, 4, 2);
  in.view().row<float>(1, 2)[3] = 9.0f;
  ASSERT_TRUE(run_blur_cpu({{in.view()}, {}}, {{out.view()}, {}}, box(3)).is_ok());
  EXPECT_FLOAT_EQ(out.view().row<float>(1, 1)[2], 1.0f);
  EXPECT_FLOAT_EQ(out.view().row<float>(0, 1)[2], 0.0f);
}

TEST(Blur, RoiIsBlurredAsItsOwnImage) {
  HostImage big(PixelFormat::kRGB8, 20, 11);
  big.fill_random(3);
  HostImage crop(PixelFormat::kRGB8, 9, 6);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 27; ++x) crop.view().row(0, y)[x] = big.view().row(0, y + 4)[x + 15];
  HostImage out_roi(PixelFormat::kRGB8, 12, 8);
  HostImage out_crop(PixelFormat::kRGB8, 9, 6);
  BlurParams params;
  params.kernel_width = 7;
  params.kernel_height = 3;
  ASSERT_TRUE(
      run_blur_cpu({{big.view()}, {Roi{5, 4, 9, 6}}}, {{out_roi.view()}, {Roi{2, 1, 9, 6}}}, params).is_ok());
  ASSERT_TRUE(run_blur_cpu({{crop.view()}, {}}, {{out_crop.view()}, {}}, params).is_ok());
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 27; ++x) ASSERT_EQ(out_roi.view().row(0, y + 1)[x + 6], out_crop.view().row(0, y)[x]);
}

TEST(Blur, RejectsBadInput) {
  HostImage in(PixelFormat::kRGB8, 8, 8);
  HostImage out(PixelFormat::kRGB8, 8, 8);
  HostImage small(PixelFormat::kRGB8, 4, 4);
  HostImage gray(PixelFormat::kGRAY8, 8, 8);
  HostImage nv12(PixelFormat::kNV12, 8, 8);
  const ImageBatch input{{in.view()}, {}};
  const ImageBatch output{{out.view()}, {}};
  auto code = [](const Status& s) { return s.code(); };
  EXPECT_EQ(code(run_blur_cpu(input, output, box(4))), StatusCode::kInvalidArgument);  // even size
  EXPECT_EQ(code(run_blur_cpu(input, output, box(257))), StatusCode::kInvalidArgument);
  ImageView empty = in.view();
  empty.width = 0;
  EXPECT_EQ(code(run_blur_cpu({{empty}, {}}, output, box(3))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blur_cpu(input, {{out.view(), out.view()}, {}}, box(3))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blur_cpu(input, {{small.view()}, {}}, box(3))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blur_cpu(input, {{gray.view()}, {}}, box(3))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blur_cpu({{in.view()}, {Roi{6, 6, 4, 4}}}, output, box(3))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blur_cpu({{nv12.view()}, {}}, {{nv12.view()}, {}}, box(3))), StatusCode::kUnsupported);
  EXPECT_EQ(code(run_blur_cpu(input, input, box(3))), StatusCode::kInvalidArgument);  // aliasing
  EXPECT_FALSE(plan_blur(input, box(2)).is_ok());
  auto plan = plan_blur({{in.view(), small.view()}, {Roi{1, 2, 3, 4}, Roi{}}}, box(3));
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->output_sizes, (std::vector<std::array<int, 2>>{{3, 4}, {4, 4}}));
}

}  // namespace
}  // namespace fovea::image::testing
