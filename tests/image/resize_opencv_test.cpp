// Resize in the OpenCV-compatible modes against cv::resize on uint8, within ±1.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "image/image_test_util.h"
#include "image/resize.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Case {
  int src_width, src_height, dst_width, dst_height;
};

cv::Mat as_mat(const ImageView& view, int channels) {
  return cv::Mat(view.height, view.width, CV_8UC(channels), view.planes[0].data, view.planes[0].pitch);
}

int cv_interpolation(ResizeFilter filter) {
  switch (filter) {
    case ResizeFilter::kNearest: return cv::INTER_NEAREST;
    case ResizeFilter::kBilinear: return cv::INTER_LINEAR;
    case ResizeFilter::kArea: return cv::INTER_AREA;
    default: return cv::INTER_CUBIC;
  }
}

// The largest difference to cv::resize of the (ROI of the) image, for one filter and format.
double difference_to_opencv(PixelFormat format, int channels, ResizeFilter filter, const Case& c,
                            const Roi& roi, std::uint32_t seed) {
  HostImage src(format, c.src_width, c.src_height, 3, 5);
  src.fill_random(seed);
  HostImage dst(format, c.dst_width, c.dst_height, 3, 3);
  ResizeParams params;
  params.filter = filter;
  ImageBatch input{{src.view()}, {roi}};
  ImageBatch output{{dst.view()}, {}};
  const Status status = run_resize_cpu(input, output, params);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  const Roi r = input.roi(0);
  cv::Mat expected;
  cv::resize(as_mat(src.view(), channels)(cv::Rect(r.x, r.y, r.width, r.height)), expected,
             cv::Size(c.dst_width, c.dst_height), 0, 0, cv_interpolation(filter));
  double worst = 0;
  cv::Mat actual = as_mat(dst.view(), channels);
  for (int y = 0; y < c.dst_height; ++y) {
    for (int x = 0; x < c.dst_width * channels; ++x) {
      worst = std::max(worst,
                       std::abs(double(actual.ptr<std::uint8_t>(y)[x]) - expected.ptr<std::uint8_t>(y)[x]));
    }
  }
  return worst;
}

const std::vector<Case> kUpAndDown = {{13, 127, 50, 31},     {127, 13, 31, 50},  {1920, 1080, 960, 544},
                                      {640, 480, 1280, 960}, {97, 61, 300, 200}, {300, 200, 97, 61},
                                      {64, 64, 32, 32},      {7, 5, 7, 5}};
const std::vector<Case> kDown = {{1920, 1080, 960, 544}, {300, 200, 97, 61}, {127, 131, 50, 31},
                                 {64, 64, 32, 32},       {90, 90, 30, 30},   {13, 127, 13, 20}};

TEST(ResizeOpenCv, NearestBilinearBicubicMatchUpAndDown) {
  for (ResizeFilter filter : {ResizeFilter::kNearest, ResizeFilter::kBilinear, ResizeFilter::kBicubic}) {
    for (const Case& c : kUpAndDown) {
      SCOPED_TRACE(::testing::Message() << "filter " << static_cast<int>(filter) << " " << c.src_width << "x"
                                        << c.src_height << " -> " << c.dst_width << "x" << c.dst_height);
      EXPECT_LE(difference_to_opencv(PixelFormat::kRGB8, 3, filter, c, Roi{}, 1), kU8ParityTolerance);
    }
  }
}

TEST(ResizeOpenCv, AreaMatchesDownscaling) {
  for (const Case& c : kDown) {
    SCOPED_TRACE(::testing::Message()
                 << c.src_width << "x" << c.src_height << " -> " << c.dst_width << "x" << c.dst_height);
    EXPECT_LE(difference_to_opencv(PixelFormat::kRGB8, 3, ResizeFilter::kArea, c, Roi{}, 2),
              kU8ParityTolerance);
  }
}

TEST(ResizeOpenCv, GrayRgbaAndRoisMatch) {
  const Case c{201, 151, 77, 120};
  for (ResizeFilter filter : {ResizeFilter::kNearest, ResizeFilter::kBilinear, ResizeFilter::kBicubic}) {
    SCOPED_TRACE(::testing::Message() << "filter " << static_cast<int>(filter));
    EXPECT_LE(difference_to_opencv(PixelFormat::kGRAY8, 1, filter, c, Roi{}, 3), kU8ParityTolerance);
    EXPECT_LE(difference_to_opencv(PixelFormat::kRGBA8, 4, filter, c, Roi{}, 4), kU8ParityTolerance);
    EXPECT_LE(difference_to_opencv(PixelFormat::kBGR8, 3, filter, c, Roi{17, 9, 101, 77}, 5),
              kU8ParityTolerance);
  }
  EXPECT_LE(difference_to_opencv(PixelFormat::kRGB8, 3, ResizeFilter::kArea, Case{201, 151, 33, 40},
                                 Roi{17, 9, 101, 77}, 6),
            kU8ParityTolerance);
}

}  // namespace
}  // namespace fovea::image::testing
