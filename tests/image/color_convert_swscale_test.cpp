// Parity of 4:2:0 -> RGB with libswscale (FFmpeg's converter) in every matrix and range.
//
// swscale is asked for the conversion fovea implements: SWS_POINT (nearest chroma: the 2x2 block
// shares its chroma sample), SWS_FULL_CHR_H_INT (chroma brought to full width before the
// per-pixel YUV -> RGB step, instead of the lower-precision table path that differs by up to 3)
// and SWS_ACCURATE_RND (the exact-rounding C path rather than the fast approximations).
// Limited-range inputs keep to the legal levels (Y 16..235, chroma 16..240): far outside them,
// swscale's full-chroma path overflows its fixed-point intermediates and wraps to 0.
#include <cstdint>
#include <memory>
#include <random>

#include <gtest/gtest.h>

extern "C" {
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
}

#include "image/color_convert.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

using enum PixelFormat;

struct SwsContextDeleter {
  void operator()(SwsContext* context) const { sws_freeContext(context); }
};

// Random samples, kept to the legal levels of limited range when `range` is kLimited.
void fill_yuv(HostImage& image, ColorRange range, std::uint32_t seed) {
  image.fill_random(seed);
  if (range == ColorRange::kFull) return;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> luma(16, 235);
  std::uniform_int_distribution<int> chroma(16, 240);
  ImageView& view = image.view();
  for (int p = 0; p < view.num_planes; ++p) {
    const int rows = p == 0 ? view.height : view.height / 2;
    const int samples = p == 0 || view.format == kNV12 ? view.width : view.width / 2;
    for (int y = 0; y < rows; ++y) {
      for (int x = 0; x < samples; ++x)
        view.row(p, y)[x] = static_cast<std::uint8_t>(p == 0 ? luma(rng) : chroma(rng));
    }
  }
}

// Converts with swscale into a packed RGB/BGR image.
HostImage swscale_convert(const HostImage& input, PixelFormat output_format, ColorMatrix matrix,
                          ColorRange range) {
  const ImageView& in = input.view();
  const AVPixelFormat src_format = in.format == kNV12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P;
  const AVPixelFormat dst_format = output_format == kRGB8 ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_BGR24;
  std::unique_ptr<SwsContext, SwsContextDeleter> context(
      sws_getContext(in.width, in.height, src_format, in.width, in.height, dst_format,
                     SWS_POINT | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND, nullptr, nullptr, nullptr));
  EXPECT_NE(context, nullptr);
  const int* coefficients =
      sws_getCoefficients(matrix == ColorMatrix::kBt601 ? SWS_CS_ITU601 : SWS_CS_ITU709);
  // brightness 0, contrast and saturation 1.0 (16.16 fixed point); the RGB side is full range.
  EXPECT_GE(sws_setColorspaceDetails(context.get(), coefficients, range == ColorRange::kFull ? 1 : 0,
                                     coefficients, 1, 0, 1 << 16, 1 << 16),
            0);
  HostImage output(output_format, in.width, in.height, 3, 5);
  const std::uint8_t* src[4] = {};
  int src_stride[4] = {};
  for (int p = 0; p < in.num_planes; ++p) {
    src[p] = static_cast<const std::uint8_t*>(in.planes[p].data);
    src_stride[p] = static_cast<int>(in.planes[p].pitch);
  }
  std::uint8_t* dst[4] = {static_cast<std::uint8_t*>(output.view().planes[0].data)};
  int dst_stride[4] = {static_cast<int>(output.view().planes[0].pitch)};
  EXPECT_EQ(sws_scale(context.get(), src, src_stride, 0, in.height, dst, dst_stride), in.height);
  return output;
}

HostImage fovea_convert(const HostImage& input, PixelFormat output_format, ColorMatrix matrix,
                        ColorRange range) {
  HostImage output(output_format, input.view().width, input.view().height, 3, 2);
  ImageBatch out{{output.view()}, {}};
  const Status status = run_color_convert_cpu({{input.view()}, {}}, out, {output_format, matrix, range});
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return output;
}

struct Case {
  PixelFormat input;
  int width;
  int height;
};

TEST(ColorConvertSwscale, YuvToRgbMatchesSwscale) {
  for (const Case c : {Case{kNV12, 126, 78}, Case{kNV12, 1920, 1080}, Case{kYUV420P, 126, 78}}) {
    for (ColorMatrix matrix : {ColorMatrix::kBt601, ColorMatrix::kBt709}) {
      for (ColorRange range : {ColorRange::kLimited, ColorRange::kFull}) {
        HostImage input(c.input, c.width, c.height, 3, 3);
        fill_yuv(input, range, 17);
        for (PixelFormat output : {kRGB8, kBGR8}) {
          const double diff = max_abs_difference(fovea_convert(input, output, matrix, range).view(),
                                                 swscale_convert(input, output, matrix, range).view());
          EXPECT_LE(diff, kU8ParityTolerance)
              << pixel_format_name(c.input) << " " << c.width << "x" << c.height << " -> "
              << pixel_format_name(output) << " matrix " << static_cast<int>(matrix) << " range "
              << static_cast<int>(range);
        }
      }
    }
  }
}

}  // namespace
}  // namespace fovea::image::testing
