// Resize on the CPU: bad input, placements (letterbox, keep-aspect), the Pillow-compatible modes
// and planar float32.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/resize.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

Status resize(const ImageView& src, const ImageView& dst, const ResizeParams& params, Roi roi = {}) {
  return run_resize_cpu(ImageBatch{{src}, {roi}}, ImageBatch{{dst}, {}}, params);
}

TEST(Resize, RejectsBadInput) {
  HostImage src(PixelFormat::kRGB8, 64, 48);
  HostImage dst(PixelFormat::kRGB8, 32, 24);
  const ResizeParams params;
  EXPECT_EQ(resize(src.view(), dst.view(), params, Roi{0, 0, 0, 10}).code(), StatusCode::kInvalidArgument);
  const Status outside = resize(src.view(), dst.view(), params, Roi{40, 0, 30, 10});
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outside.message().find("outside"), std::string::npos) << outside.message();
  ImageView empty = dst.view();
  empty.width = 0;
  EXPECT_EQ(resize(src.view(), empty, params).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      run_resize_cpu(ImageBatch{{src.view(), src.view()}, {}}, ImageBatch{{dst.view()}, {}}, params).code(),
      StatusCode::kInvalidArgument);
  HostImage nv12(PixelFormat::kNV12, 64, 48);
  EXPECT_EQ(resize(nv12.view(), nv12.view(), params).code(), StatusCode::kUnsupported);
  HostImage gray(PixelFormat::kGRAY8, 32, 24);
  EXPECT_EQ(resize(src.view(), gray.view(), params).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run_resize_cpu(ImageBatch{{src.view(), gray.view()}, {}},
                           ImageBatch{{dst.view(), gray.view()}, {}}, params)
                .code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(run_resize_cpu(ImageBatch{{src.view()}, {}}, ImageBatch{{dst.view()}, {Roi{0, 0, 8, 8}}}, params)
                .code(),
            StatusCode::kInvalidArgument);
  ResizeParams area;
  area.filter = ResizeFilter::kArea;
  const Status upscale = resize(dst.view(), src.view(), area);
  EXPECT_EQ(upscale.code(), StatusCode::kUnsupported);
  EXPECT_NE(upscale.message().find("upscales"), std::string::npos) << upscale.message();
  area.compat = ResizeCompat::kPil;  // Pillow's box filter upscales fine
  EXPECT_TRUE(resize(dst.view(), src.view(), area).is_ok());
}

TEST(Resize, LetterboxAndKeepAspectPlaceAndPad) {
  HostImage src(PixelFormat::kRGB8, 1920, 1080);
  src.fill_random(7);
  HostImage dst(PixelFormat::kRGB8, 640, 640);
  ResizeParams params;
  params.fit = ResizeFit::kLetterbox;
  params.pad_value = {114.0f, 115.0f, 116.0f, 0.0f};
  auto plan = plan_resize(ImageBatch{{src.view()}, {}}, ImageBatch{{dst.view()}, {}}, params);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const ResizePlacement p = plan->placements[0];
  EXPECT_EQ(p.offset_x, 0);
  EXPECT_EQ(p.offset_y, 140);
  EXPECT_EQ(p.width, 640);
  EXPECT_EQ(p.height, 360);
  EXPECT_FLOAT_EQ(p.scale_x, 1.0f / 3.0f);
  ASSERT_TRUE(resize(src.view(), dst.view(), params).is_ok());
  EXPECT_EQ(dst.view().row(0, 139)[0], 114);
  EXPECT_EQ(dst.view().row(0, 500)[3 * 639 + 2], 116);
  // Box-filtered random data lands near the mean, far from the pad value.
  const int inside = dst.view().row(0, 320)[3 * 320] + dst.view().row(0, 321)[3 * 320];
  EXPECT_NE(inside, 2 * 114);

  params.fit = ResizeFit::kKeepAspectTopLeft;
  plan = plan_resize(ImageBatch{{src.view()}, {Roi{0, 0, 100, 400}}}, ImageBatch{{dst.view()}, {}}, params);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->placements[0].offset_x, 0);
  EXPECT_EQ(plan->placements[0].offset_y, 0);
  EXPECT_EQ(plan->placements[0].width, 160);
  EXPECT_EQ(plan->placements[0].height, 640);
}

// Every filter in both modes reproduces a constant image (weights sum to 1), up and down.
TEST(Resize, ConstantImagesStayConstant) {
  HostImage src(PixelFormat::kRGBA8, 37, 23, 3, 2);
  for (int y = 0; y < 23; ++y) {
    for (int x = 0; x < 37 * 4; ++x) src.view().row(0, y)[x] = static_cast<std::uint8_t>(40 + x % 4 * 50);
  }
  for (ResizeCompat compat : {ResizeCompat::kOpenCv, ResizeCompat::kPil}) {
    for (ResizeFilter filter :
         {ResizeFilter::kNearest, ResizeFilter::kBilinear, ResizeFilter::kArea, ResizeFilter::kBicubic}) {
      for (auto [w, h] : {std::pair{11, 7}, std::pair{80, 61}}) {
        if (filter == ResizeFilter::kArea && compat == ResizeCompat::kOpenCv && w > 37) continue;
        HostImage dst(PixelFormat::kRGBA8, w, h);
        ResizeParams params{filter, compat};
        ASSERT_TRUE(resize(src.view(), dst.view(), params).is_ok());
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w * 4; ++x)
            ASSERT_EQ(dst.view().row(0, y)[x], 40 + x % 4 * 50) << x << "," << y;
        }
      }
    }
  }
}

// Pillow's BOX halving is the rounded 2x2 mean; its BILINEAR at an integer 2x downscale spans
// 4 taps with weights 1/8, 3/8, 3/8, 1/8 (the triangle stretched by 2).
TEST(Resize, PillowBoxAndBilinearWeights) {
  HostImage src(PixelFormat::kGRAY8, 8, 8);
  src.fill_random(3);
  HostImage dst(PixelFormat::kGRAY8, 4, 4);
  ASSERT_TRUE(resize(src.view(), dst.view(), ResizeParams{ResizeFilter::kArea, ResizeCompat::kPil}).is_ok());
  auto at = [&](int x, int y) { return static_cast<double>(src.view().row(0, y)[x]); };
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      const double mean =
          (at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) + at(2 * x + 1, 2 * y + 1)) / 4;
      EXPECT_NEAR(dst.view().row(0, y)[x], mean, 0.5 + 1e-9);
    }
  }
  ASSERT_TRUE(
      resize(src.view(), dst.view(), ResizeParams{ResizeFilter::kBilinear, ResizeCompat::kPil}).is_ok());
  const double w[4] = {1.0 / 8, 3.0 / 8, 3.0 / 8, 1.0 / 8};
  double expected = 0;
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 4; ++i) expected += w[j] * w[i] * at(1 + i, 1 + j);
  }
  EXPECT_NEAR(dst.view().row(0, 1)[1], expected, 0.5 + 1e-6);
}

// Planar float32 follows the same arithmetic as 8-bit, without the rounding.
TEST(Resize, PlanarFloatMatchesU8BeforeRounding) {
  HostImage u8(PixelFormat::kRGB8, 13, 127, 3, 3);
  u8.fill_random(11);
  HostImage f32(PixelFormat::kPlanarF32, 13, 127, 3, 8);
  for (int y = 0; y < 127; ++y) {
    for (int x = 0; x < 13; ++x) {
      for (int c = 0; c < 3; ++c) f32.view().row<float>(c, y)[x] = u8.view().row(0, y)[3 * x + c];
    }
  }
  for (ResizeFilter filter : {ResizeFilter::kBilinear, ResizeFilter::kBicubic}) {
    HostImage out_u8(PixelFormat::kRGB8, 50, 31);
    HostImage out_f32(PixelFormat::kPlanarF32, 50, 31, 3, 4);
    const ResizeParams params{filter, ResizeCompat::kOpenCv, ResizeFit::kLetterbox, {1, 2, 3, 0}};
    ASSERT_TRUE(resize(u8.view(), out_u8.view(), params, Roi{1, 2, 11, 120}).is_ok());
    ASSERT_TRUE(resize(f32.view(), out_f32.view(), params, Roi{1, 2, 11, 120}).is_ok());
    for (int y = 0; y < 31; ++y) {
      for (int x = 0; x < 50; ++x) {
        for (int c = 0; c < 3; ++c) {
          ASSERT_EQ(out_u8.view().row(0, y)[3 * x + c], to_u8(out_f32.view().row<float>(c, y)[x]))
              << x << "," << y;
        }
      }
    }
  }
}

}  // namespace
}  // namespace fovea::image::testing
