// Parity of color conversion with OpenCV's cv::cvtColor in the modes OpenCV implements: its
// NV12/I420 conversions are BT.601 limited range with nearest chroma; its gray weights are
// BT.601's; YUV -> GRAY copies the Y plane (fovea's full range). Two differences keep the inputs
// of some cases in a domain where both agree:
//   - YUV -> RGB: OpenCV clamps luma below 16 (max(0, Y - 16)) before applying chroma, fovea does
//     not (it clamps only the result), so the Y planes hold Y >= 16.
//   - RGB -> I420: OpenCV 4.6 takes the chroma of each 2x2 block's top-left pixel, fovea averages
//     the four (as encoders' scalers do, which avoids chroma aliasing), so the RGB images are made
//     of constant 2x2 blocks, where both give the same chroma.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

#include "image/color_convert.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

using enum PixelFormat;

// A packed image as a cv::Mat over the same memory (pitch as the step).
cv::Mat as_mat(const HostImage& image) {
  const ImageView& view = image.view();
  const int type = view.format == kGRAY8 ? CV_8UC1 : (view.format == kRGBA8 ? CV_8UC4 : CV_8UC3);
  return cv::Mat(view.height, view.width, type, view.planes[0].data, view.planes[0].pitch);
}

// A 4:2:0 image in OpenCV's layout: one (h * 3/2) x w single-channel Mat with the planes back to back.
cv::Mat to_opencv_yuv(const HostImage& image) {
  const ImageView& view = image.view();
  cv::Mat mat(view.height * 3 / 2, view.width, CV_8UC1);
  std::uint8_t* out = mat.data;
  auto layout = format_layout(view.format, view.width, view.height);
  for (int p = 0; p < view.num_planes; ++p) {
    for (int y = 0; y < layout->planes[p].height; ++y) {
      std::memcpy(out, view.row(p, y), static_cast<std::size_t>(layout->planes[p].width_bytes));
      out += layout->planes[p].width_bytes;
    }
  }
  return mat;
}

// The inverse of to_opencv_yuv.
HostImage from_opencv_yuv(const cv::Mat& mat, PixelFormat format, int width, int height) {
  HostImage image(format, width, height);
  const std::uint8_t* in = mat.data;
  auto layout = format_layout(format, width, height);
  for (int p = 0; p < image.view().num_planes; ++p) {
    for (int y = 0; y < layout->planes[p].height; ++y) {
      std::memcpy(image.view().row(p, y), in, static_cast<std::size_t>(layout->planes[p].width_bytes));
      in += layout->planes[p].width_bytes;
    }
  }
  return image;
}

HostImage fovea_convert(const HostImage& input, PixelFormat output_format,
                        ColorRange range = ColorRange::kLimited) {
  HostImage output(output_format, input.view().width, input.view().height, 3, 3);
  ImageBatch out{{output.view()}, {}};
  const Status status =
      run_color_convert_cpu({{input.view()}, {}}, out, {output_format, ColorMatrix::kBt601, range});
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return output;
}

// OpenCV's result as a HostImage of `format` (copied out of the Mat).
HostImage from_mat(const cv::Mat& mat, PixelFormat format) {
  HostImage image(format, mat.cols, mat.rows);
  for (int y = 0; y < mat.rows; ++y) {
    std::memcpy(image.view().row(0, y), mat.ptr(y), mat.elemSize() * static_cast<std::size_t>(mat.cols));
  }
  return image;
}

// Lifts Y samples below 16 to 16..31 (see the header comment).
void keep_luma_above_footroom(HostImage& image) {
  ImageView& view = image.view();
  for (int y = 0; y < view.height; ++y) {
    for (int x = 0; x < view.width; ++x) view.row(0, y)[x] = std::max<std::uint8_t>(view.row(0, y)[x], 16);
  }
}

// Copies the top-left pixel of every 2x2 block over the block (see the header comment).
void make_blocks_constant(HostImage& image) {
  ImageView& view = image.view();
  for (int y = 0; y < view.height; ++y) {
    for (int x = 0; x < view.width; ++x) {
      for (int c = 0; c < 3; ++c) view.row(0, y)[3 * x + c] = view.row(0, y & ~1)[3 * (x & ~1) + c];
    }
  }
}

struct Size {
  int width;
  int height;
};
constexpr Size kSizes[] = {{126, 78}, {1920, 1080}};

TEST(ColorConvertOpenCV, YuvToRgbMatchesCvtColor) {
  struct Case {
    PixelFormat input;
    PixelFormat output;
    int code;
  };
  const Case cases[] = {{kNV12, kRGB8, cv::COLOR_YUV2RGB_NV12},
                        {kNV12, kBGR8, cv::COLOR_YUV2BGR_NV12},
                        {kNV12, kRGBA8, cv::COLOR_YUV2RGBA_NV12},
                        {kYUV420P, kRGB8, cv::COLOR_YUV2RGB_I420},
                        {kYUV420P, kBGR8, cv::COLOR_YUV2BGR_I420}};
  for (const Size size : kSizes) {
    for (const Case& c : cases) {
      HostImage input(c.input, size.width, size.height, 3, 7);
      input.fill_random(21);
      keep_luma_above_footroom(input);
      cv::Mat expected;
      cv::cvtColor(to_opencv_yuv(input), expected, c.code);
      EXPECT_LE(
          max_abs_difference(fovea_convert(input, c.output).view(), from_mat(expected, c.output).view()),
          kU8ParityTolerance)
          << pixel_format_name(c.input) << " -> " << pixel_format_name(c.output) << " " << size.width;
    }
  }
}

TEST(ColorConvertOpenCV, YuvToGrayMatchesCvtColor) {
  HostImage input(kNV12, 126, 78, 3, 1);
  input.fill_random(22);
  cv::Mat expected;
  cv::cvtColor(to_opencv_yuv(input), expected, cv::COLOR_YUV2GRAY_NV12);
  EXPECT_EQ(max_abs_difference(fovea_convert(input, kGRAY8, ColorRange::kFull).view(),
                               from_mat(expected, kGRAY8).view()),
            0);
}

TEST(ColorConvertOpenCV, RgbToI420MatchesCvtColor) {
  for (const Size size : kSizes) {
    for (PixelFormat input_format : {kRGB8, kBGR8}) {
      HostImage input(input_format, size.width, size.height, 3, 5);
      input.fill_random(23);
      make_blocks_constant(input);
      cv::Mat expected;
      cv::cvtColor(as_mat(input), expected,
                   input_format == kRGB8 ? cv::COLOR_RGB2YUV_I420 : cv::COLOR_BGR2YUV_I420);
      const HostImage reference = from_opencv_yuv(expected, kYUV420P, size.width, size.height);
      EXPECT_LE(max_abs_difference(fovea_convert(input, kYUV420P).view(), reference.view()),
                kU8ParityTolerance)
          << pixel_format_name(input_format) << " " << size.width;
    }
  }
}

TEST(ColorConvertOpenCV, PackedConversionsMatchCvtColor) {
  struct Case {
    PixelFormat input;
    PixelFormat output;
    int code;
  };
  const Case cases[] = {{kRGB8, kBGR8, cv::COLOR_RGB2BGR},    {kBGR8, kRGB8, cv::COLOR_BGR2RGB},
                        {kRGB8, kGRAY8, cv::COLOR_RGB2GRAY},  {kBGR8, kGRAY8, cv::COLOR_BGR2GRAY},
                        {kRGB8, kRGBA8, cv::COLOR_RGB2RGBA},  {kRGBA8, kRGB8, cv::COLOR_RGBA2RGB},
                        {kRGBA8, kBGR8, cv::COLOR_RGBA2BGR},  {kGRAY8, kRGB8, cv::COLOR_GRAY2RGB},
                        {kRGBA8, kGRAY8, cv::COLOR_RGBA2GRAY}};
  for (const Case& c : cases) {
    HostImage input(c.input, 13, 127, 3, 3);
    input.fill_random(24);
    cv::Mat expected;
    cv::cvtColor(as_mat(input), expected, c.code);
    EXPECT_LE(max_abs_difference(fovea_convert(input, c.output).view(), from_mat(expected, c.output).view()),
              kU8ParityTolerance)
        << pixel_format_name(c.input) << " -> " << pixel_format_name(c.output);
  }
}

}  // namespace
}  // namespace fovea::image::testing
