#include <gtest/gtest.h>

#include "image/bilateral.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

BilateralParams make(int diameter, float sigma_color, float sigma_space) {
  BilateralParams params;
  params.diameter = diameter;
  params.sigma_color = sigma_color;
  params.sigma_space = sigma_space;
  return params;
}

TEST(JointBilateral, FlatGuideAveragesOverTheDisc) {
  HostImage mask(PixelFormat::kGRAY8, 5, 5, 3, 3);
  HostImage guide(PixelFormat::kRGB8, 5, 5);
  HostImage out(PixelFormat::kGRAY8, 5, 5);
  mask.view().row(0, 2)[2] = 255;
  // Diameter 3 is the disc of radius 1 (center and 4 neighbors); a huge sigma_space makes the
  // weights 1, so the center becomes 255 / 5 and its diagonal neighbors (outside the disc) 0.
  ASSERT_TRUE(run_joint_bilateral_cpu({{mask.view()}, {}}, {{guide.view()}, {}}, {{out.view()}, {}},
                                      make(3, 10.0f, 1e6f))
                  .is_ok());
  EXPECT_EQ(out.view().row(0, 2)[2], 51);
  EXPECT_EQ(out.view().row(0, 1)[2], 51);
  EXPECT_EQ(out.view().row(0, 1)[1], 0);
}

TEST(JointBilateral, KeepsMaskEdgesThatFollowTheGuide) {
  HostImage mask(PixelFormat::kGRAY8, 8, 6);
  HostImage guide(PixelFormat::kBGR8, 8, 6, 3, 4);
  HostImage out(PixelFormat::kGRAY8, 8, 6);
  for (int y = 0; y < 6; ++y)
    for (int x = 4; x < 8; ++x) {
      mask.view().row(0, y)[x] = 255;
      for (int c = 0; c < 3; ++c) guide.view().row(0, y)[x * 3 + c] = 200;
    }
  ASSERT_TRUE(run_joint_bilateral_cpu({{mask.view()}, {}}, {{guide.view()}, {}}, {{out.view()}, {}},
                                      make(7, 10.0f, 3.0f))
                  .is_ok());
  // A color distance of 600 at sigma_color 10 gives weights of exp(-1800): the edge stays exact.
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 8; ++x) EXPECT_EQ(out.view().row(0, y)[x], x < 4 ? 0 : 255) << x << "," << y;
  // Without the guide's edge (a flat gray guide) the same mask is smoothed across it.
  HostImage flat(PixelFormat::kGRAY8, 8, 6);
  ASSERT_TRUE(run_joint_bilateral_cpu({{mask.view()}, {}}, {{flat.view()}, {}}, {{out.view()}, {}},
                                      make(7, 10.0f, 3.0f))
                  .is_ok());
  EXPECT_GT(out.view().row(0, 2)[3], 0);
  EXPECT_LT(out.view().row(0, 2)[4], 255);
}

TEST(JointBilateral, RejectsBadInput) {
  HostImage mask(PixelFormat::kGRAY8, 8, 8);
  HostImage guide(PixelFormat::kRGB8, 8, 8);
  HostImage small_guide(PixelFormat::kRGB8, 8, 7);
  HostImage out(PixelFormat::kGRAY8, 8, 8);
  HostImage nv12(PixelFormat::kNV12, 8, 8);
  const ImageBatch M{{mask.view()}, {}};
  const ImageBatch G{{guide.view()}, {}};
  const ImageBatch O{{out.view()}, {}};
  auto code = [](const Status& s) { return s.code(); };
  EXPECT_EQ(code(run_joint_bilateral_cpu(M, G, O, make(5, 0.0f, 3.0f))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_joint_bilateral_cpu(M, {{small_guide.view()}, {}}, O, make(5, 10.0f, 3.0f))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_joint_bilateral_cpu(M, {{guide.view(), guide.view()}, {}}, O, make(5, 10.0f, 3.0f))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_joint_bilateral_cpu(M, {{nv12.view()}, {}}, O, make(5, 10.0f, 3.0f))),
            StatusCode::kUnsupported);
  EXPECT_EQ(code(run_joint_bilateral_cpu(M, G, M, make(5, 10.0f, 3.0f))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_joint_bilateral_cpu({{mask.view()}, {Roi{2, 2, 8, 8}}}, G, O, make(5, 10.0f, 3.0f))),
            StatusCode::kInvalidArgument);
  BilateralParams constant = make(5, 10.0f, 3.0f);
  constant.border = BorderMode::kConstant;
  EXPECT_EQ(code(run_joint_bilateral_cpu(M, G, O, constant)), StatusCode::kInvalidArgument);
  EXPECT_TRUE(plan_joint_bilateral(M, G, make(0, 10.0f, 3.0f)).is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
