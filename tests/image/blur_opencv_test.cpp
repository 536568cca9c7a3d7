#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

#include "image/blur.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

cv::Mat as_mat(const ImageView& view, int type) {
  return cv::Mat(view.height, view.width, type, view.planes[0].data, view.planes[0].pitch);
}

int cv_border(BorderMode border) {
  switch (border) {
    case BorderMode::kReplicate: return cv::BORDER_REPLICATE;
    case BorderMode::kReflect: return cv::BORDER_REFLECT;
    case BorderMode::kConstant: return cv::BORDER_CONSTANT;
    default: return cv::BORDER_REFLECT_101;
  }
}

int cv_type(PixelFormat format) {
  switch (format) {
    case PixelFormat::kRGBA8: return CV_8UC4;
    case PixelFormat::kGRAY8: return CV_8UC1;
    case PixelFormat::kPlanarF32: return CV_32FC1;
    default: return CV_8UC3;
  }
}

double max_difference(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat a64, b64;
  a.convertTo(a64, CV_64F);
  b.convertTo(b64, CV_64F);
  double worst = 0.0;
  cv::minMaxLoc(cv::abs(a64.reshape(1) - b64.reshape(1)), nullptr, &worst);
  return worst;
}

cv::Mat opencv_blur(const cv::Mat& src, const BlurParams& params) {
  cv::Mat out;
  const cv::Size ksize(params.kernel_width, params.kernel_height);
  if (params.kind == BlurKind::kGaussian) {
    cv::GaussianBlur(src, out, ksize, params.sigma_x, params.sigma_y, cv_border(params.border));
  } else {
    cv::blur(src, out, ksize, cv::Point(-1, -1), cv_border(params.border));
  }
  return out;
}

// Blurs a random image with fovea and OpenCV (which pads kBorderConstant with 0) and checks parity.
// OpenCV's uint8 Gaussian quantizes its weights to fixed point, which for wide kernels moves its
// own result up to 2 steps from its float path; fovea rounds the float sums once, so it is held to
// ±1 of OpenCV's uint8 result or to OpenCV's own fixed-point error, whichever is larger, and to one
// rounding step of OpenCV's float path.
void expect_parity(PixelFormat format, int width, int height, const BlurParams& params) {
  const int extra_pitch = format == PixelFormat::kPlanarF32 ? 8 : 5;
  HostImage in(format, width, height, 1, extra_pitch);
  in.fill_random(static_cast<std::uint32_t>(width * 31 + height));
  HostImage out(format, width, height, 1, extra_pitch);
  ASSERT_TRUE(run_blur_cpu({{in.view()}, {}}, {{out.view()}, {}}, params).is_ok());
  const cv::Mat src = as_mat(in.view(), cv_type(format));
  const cv::Mat got = as_mat(out.view(), cv_type(format));
  const cv::Mat expected = opencv_blur(src, params);
  const std::string what =
      fmt::format("{} {}x{} kernel {}x{} sigma {},{}", pixel_format_name(format), width, height,
                  params.kernel_width, params.kernel_height, params.sigma_x, params.sigma_y);
  if (format == PixelFormat::kPlanarF32) {
    EXPECT_LE(max_difference(got, expected), kF32Tolerance) << what;
    return;
  }
  cv::Mat src_f;
  src.convertTo(src_f, CV_32F);
  cv::Mat float_path;
  opencv_blur(src_f, params).convertTo(float_path, src.type());
  const double opencv_self = max_difference(expected, float_path);
  EXPECT_LE(max_difference(got, float_path), kU8RoundingTolerance) << what;
  EXPECT_LE(max_difference(got, expected), std::max(kU8ParityTolerance, opencv_self)) << what;
}

BlurParams make(BlurKind kind, int kw, int kh, BorderMode border, double sx = 0.0, double sy = 0.0) {
  BlurParams params;
  params.kind = kind;
  params.kernel_width = kw;
  params.kernel_height = kh;
  params.sigma_x = sx;
  params.sigma_y = sy;
  params.border = border;
  return params;
}

TEST(BlurOpenCv, GaussianMatchesWithinOneOnUint8) {
  for (BorderMode border :
       {BorderMode::kReplicate, BorderMode::kReflect101, BorderMode::kConstant, BorderMode::kReflect}) {
    for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kRGBA8, PixelFormat::kGRAY8}) {
      expect_parity(format, 13, 127, make(BlurKind::kGaussian, 3, 3, border));
      expect_parity(format, 127, 13, make(BlurKind::kGaussian, 7, 5, border));
      expect_parity(format, 64, 45, make(BlurKind::kGaussian, 15, 15, border));
      expect_parity(format, 64, 45, make(BlurKind::kGaussian, 9, 21, border, 2.5, 4.0));
      expect_parity(format, 31, 29, make(BlurKind::kGaussian, 31, 31, border, 6.0));
    }
  }
}

TEST(BlurOpenCv, GaussianKernelWiderThanTheImage) {
  expect_parity(PixelFormat::kGRAY8, 5, 4, make(BlurKind::kGaussian, 11, 9, BorderMode::kReflect101));
  expect_parity(PixelFormat::kGRAY8, 5, 4, make(BlurKind::kGaussian, 11, 9, BorderMode::kReflect));
  // OpenCV's own uint8 result is 2 steps off its float path here (fixed-point weights).
  expect_parity(PixelFormat::kGRAY8, 64, 45, make(BlurKind::kGaussian, 41, 41, BorderMode::kReflect101));
}

TEST(BlurOpenCv, BoxMatchesWithinOneOnUint8) {
  for (BorderMode border :
       {BorderMode::kReplicate, BorderMode::kReflect101, BorderMode::kConstant, BorderMode::kReflect}) {
    expect_parity(PixelFormat::kRGB8, 13, 127, make(BlurKind::kBox, 5, 5, border));
    expect_parity(PixelFormat::kGRAY8, 50, 37, make(BlurKind::kBox, 3, 11, border));
  }
}

TEST(BlurOpenCv, PlanarFloatMatches) {
  expect_parity(PixelFormat::kPlanarF32, 40, 33, make(BlurKind::kGaussian, 9, 9, BorderMode::kReflect101));
  expect_parity(PixelFormat::kPlanarF32, 40, 33, make(BlurKind::kBox, 5, 7, BorderMode::kReplicate));
}

}  // namespace
}  // namespace fovea::image::testing
