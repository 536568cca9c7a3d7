#include <gtest/gtest.h>

#include "image/composite.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

void fill(HostImage& image, int plane, std::uint8_t value) {
  auto layout = format_layout(image.view().format, image.view().width, image.view().height);
  for (int y = 0; y < layout->planes[plane].height; ++y)
    for (int x = 0; x < layout->planes[plane].width_bytes; ++x) image.view().row(plane, y)[x] = value;
}

TEST(Blend, MixesByTheMask) {
  HostImage fg(PixelFormat::kRGB8, 3, 1, 3, 2);
  HostImage bg(PixelFormat::kRGB8, 3, 1);
  HostImage mask(PixelFormat::kGRAY8, 3, 1, 3, 1);
  HostImage out(PixelFormat::kRGB8, 3, 1);
  fill(fg, 0, 200);
  fill(bg, 0, 100);
  const std::uint8_t m[3] = {0, 255, 51};
  for (int x = 0; x < 3; ++x) mask.view().row(0, 0)[x] = m[x];
  ASSERT_TRUE(
      run_blend_cpu({{fg.view()}, {}}, {{bg.view()}, {}}, {{mask.view()}, {}}, {{out.view()}, {}}).is_ok());
  EXPECT_EQ(out.view().row(0, 0)[0], 100);  // background
  EXPECT_EQ(out.view().row(0, 0)[3], 200);  // foreground
  EXPECT_EQ(out.view().row(0, 0)[6], 120);  // 0.2 * 200 + 0.8 * 100
}

TEST(Blend, Nv12ChromaTakesTheMeanOfTwoByTwoMask) {
  HostImage fg(PixelFormat::kNV12, 2, 2);
  HostImage bg(PixelFormat::kNV12, 2, 2);
  HostImage mask(PixelFormat::kGRAY8, 2, 2);
  HostImage out(PixelFormat::kNV12, 2, 2);
  fill(fg, 0, 255);
  fill(fg, 1, 255);
  fill(bg, 0, 0);
  fill(bg, 1, 0);
  mask.view().row(0, 0)[0] = 255;
  mask.view().row(0, 1)[1] = 255;  // mean 127.5 rounds to 128
  ASSERT_TRUE(
      run_blend_cpu({{fg.view()}, {}}, {{bg.view()}, {}}, {{mask.view()}, {}}, {{out.view()}, {}}).is_ok());
  EXPECT_EQ(out.view().row(0, 0)[0], 255);
  EXPECT_EQ(out.view().row(0, 0)[1], 0);
  EXPECT_EQ(out.view().row(1, 0)[0], 128);
  EXPECT_EQ(out.view().row(1, 0)[1], 128);
}

TEST(Blend, InPlaceOverTheBackgroundAndRois) {
  HostImage fg(PixelFormat::kRGBA8, 4, 4);
  HostImage bg(PixelFormat::kRGBA8, 6, 6);
  HostImage mask(PixelFormat::kGRAY8, 2, 2);
  fill(fg, 0, 9);
  fill(mask, 0, 255);
  const ImageBatch background{{bg.view()}, {Roi{3, 1, 2, 2}}};
  ASSERT_TRUE(
      run_blend_cpu({{fg.view()}, {Roi{0, 0, 2, 2}}}, background, {{mask.view()}, {}}, background).is_ok());
  EXPECT_EQ(bg.view().row(0, 1)[3 * 4], 9);
  EXPECT_EQ(bg.view().row(0, 2)[4 * 4 + 3], 9);
  EXPECT_EQ(bg.view().row(0, 1)[2 * 4], 0);
  EXPECT_EQ(bg.view().row(0, 3)[3 * 4], 0);
}

TEST(Overlay, PaintsTheColorByAlphaTimesMask) {
  HostImage image(PixelFormat::kBGR8, 2, 1);
  HostImage mask(PixelFormat::kGRAY8, 2, 1);
  fill(image, 0, 100);
  mask.view().row(0, 0)[1] = 255;
  OverlayParams params;
  params.color = {250, 0, 0};  // red
  params.alpha = 0.5f;
  ASSERT_TRUE(
      run_overlay_cpu({{image.view()}, {}}, {{mask.view()}, {}}, {{image.view()}, {}}, params).is_ok());
  const std::uint8_t* row = image.view().row(0, 0);
  EXPECT_EQ(row[0], 100);  // mask 0: unchanged
  EXPECT_EQ(row[3], 50);   // blue: 0.5 * 100 + 0.5 * 0
  EXPECT_EQ(row[4], 50);
  EXPECT_EQ(row[5], 175);  // red: 0.5 * 100 + 0.5 * 250
}

TEST(Overlay, RgbaKeepsAlphaAndNv12UsesYuv) {
  HostImage rgba(PixelFormat::kRGBA8, 1, 1);
  HostImage mask(PixelFormat::kGRAY8, 2, 2);
  fill(rgba, 0, 7);
  fill(mask, 0, 255);
  OverlayParams params;
  params.color = {255, 255, 255};
  params.alpha = 1.0f;
  ASSERT_TRUE(
      run_overlay_cpu({{rgba.view()}, {}}, {{mask.view()}, {Roi{0, 0, 1, 1}}}, {{rgba.view()}, {}}, params)
          .is_ok());
  EXPECT_EQ(rgba.view().row(0, 0)[0], 255);
  EXPECT_EQ(rgba.view().row(0, 0)[3], 7);
  HostImage nv12(PixelFormat::kNV12, 2, 2);
  ASSERT_TRUE(run_overlay_cpu({{nv12.view()}, {}}, {{mask.view()}, {}}, {{nv12.view()}, {}}, params).is_ok());
  EXPECT_EQ(nv12.view().row(0, 1)[1], 235);  // white in BT.709 limited range
  EXPECT_EQ(nv12.view().row(1, 0)[0], 128);
  EXPECT_EQ(nv12.view().row(1, 0)[1], 128);
}

TEST(Composite, RejectsBadInput) {
  HostImage a(PixelFormat::kRGB8, 8, 8);
  HostImage b(PixelFormat::kRGB8, 8, 8);
  HostImage bgr(PixelFormat::kBGR8, 8, 8);
  HostImage mask(PixelFormat::kGRAY8, 8, 8);
  HostImage small_mask(PixelFormat::kGRAY8, 4, 8);
  HostImage gray(PixelFormat::kGRAY8, 8, 8);
  HostImage nv12(PixelFormat::kNV12, 8, 8);
  const ImageBatch A{{a.view()}, {}};
  const ImageBatch B{{b.view()}, {}};
  const ImageBatch M{{mask.view()}, {}};
  auto code = [](const Status& s) { return s.code(); };
  EXPECT_EQ(code(run_blend_cpu(A, B, {{small_mask.view()}, {}}, A)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blend_cpu(A, B, {{mask.view(), mask.view()}, {}}, A)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blend_cpu(A, {{bgr.view()}, {}}, M, A)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_blend_cpu({{gray.view()}, {}}, {{gray.view()}, {}}, M, {{gray.view()}, {}})),
            StatusCode::kUnsupported);
  EXPECT_EQ(code(run_blend_cpu(A, B, {{a.view()}, {}}, A)), StatusCode::kUnsupported);  // RGB mask
  EXPECT_EQ(code(run_blend_cpu({{a.view()}, {Roi{4, 4, 5, 5}}}, B, M, A)), StatusCode::kInvalidArgument);
  const ImageBatch N{{nv12.view()}, {Roi{1, 0, 4, 4}}};
  EXPECT_EQ(code(run_overlay_cpu(N, {{mask.view()}, {Roi{0, 0, 4, 4}}}, N, OverlayParams{})),
            StatusCode::kInvalidArgument);  // odd NV12 ROI origin
  OverlayParams bad;
  bad.alpha = 1.5f;
  EXPECT_EQ(code(run_overlay_cpu(A, M, A, bad)), StatusCode::kInvalidArgument);
  ImageView empty = a.view();
  empty.height = 0;
  EXPECT_EQ(code(run_overlay_cpu({{empty}, {}}, M, A, OverlayParams{})), StatusCode::kInvalidArgument);
  auto plan = plan_blend(A, B, M);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->output_sizes, (std::vector<std::array<int, 2>>{{8, 8}}));
}

}  // namespace
}  // namespace fovea::image::testing
