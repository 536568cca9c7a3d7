// The CPU reference of color conversion: known values, exact channel reorders, YUV round trips,
// chroma averaging, ROIs, mixed batches and bad input.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "image/color_convert.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

using enum PixelFormat;

ColorConvertParams params_for(PixelFormat output, ColorMatrix matrix = ColorMatrix::kBt601,
                              ColorRange range = ColorRange::kLimited) {
  return ColorConvertParams{output, matrix, range};
}

// Converts one image (or its ROI) on the CPU into a new image with `extra_pitch` padding.
HostImage convert(const HostImage& input, const ColorConvertParams& params, Roi roi = {},
                  int extra_pitch = 3) {
  ImageBatch in{{input.view()}, {roi}};
  const Roi r = in.roi(0);
  HostImage output(params.output_format, r.width, r.height, 3, extra_pitch);
  ImageBatch out{{output.view()}, {}};
  const Status status = run_color_convert_cpu(in, out, params);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return output;
}

void fill_constant_yuv(HostImage& image, std::uint8_t y, std::uint8_t u, std::uint8_t v) {
  ImageView& view = image.view();
  for (int row = 0; row < view.height; ++row) {
    for (int x = 0; x < view.width; ++x) view.row(0, row)[x] = y;
  }
  for (int row = 0; row < view.height / 2; ++row) {
    for (int x = 0; x < view.width / 2; ++x) {
      if (view.format == kYUV420P) {
        view.row(1, row)[x] = u;
        view.row(2, row)[x] = v;
      } else {
        view.row(1, row)[2 * x] = u;
        view.row(1, row)[2 * x + 1] = v;
      }
    }
  }
}

void fill_constant_rgb(HostImage& image, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  ImageView& view = image.view();
  for (int y = 0; y < view.height; ++y) {
    for (int x = 0; x < view.width; ++x) {
      std::uint8_t* p = view.row(0, y) + 3 * x;
      p[0] = r;
      p[1] = g;
      p[2] = b;
    }
  }
}

std::array<int, 3> rgb_at(const HostImage& image, int x, int y) {
  const std::uint8_t* p = image.view().row(0, y) + 3 * x;
  return {p[0], p[1], p[2]};
}

TEST(ColorConvert, Nv12KnownValues) {
  HostImage nv12(kNV12, 4, 2);
  fill_constant_yuv(nv12, 16, 128, 128);
  EXPECT_EQ(rgb_at(convert(nv12, params_for(kRGB8)), 1, 1), (std::array<int, 3>{0, 0, 0}));
  fill_constant_yuv(nv12, 235, 128, 128);
  EXPECT_EQ(rgb_at(convert(nv12, params_for(kRGB8)), 1, 1), (std::array<int, 3>{255, 255, 255}));
  fill_constant_yuv(nv12, 255, 128, 128);
  EXPECT_EQ(rgb_at(convert(nv12, params_for(kRGB8, ColorMatrix::kBt709, ColorRange::kFull)), 3, 0),
            (std::array<int, 3>{255, 255, 255}));
  // BT.601 limited red: Y 81, U 90, V 240 (ITU-R BT.601 table of primaries).
  fill_constant_yuv(nv12, 81, 90, 240);
  const std::array<int, 3> red = rgb_at(convert(nv12, params_for(kRGB8)), 0, 0);
  EXPECT_NEAR(red[0], 255, 1);
  EXPECT_NEAR(red[1], 0, 1);
  EXPECT_NEAR(red[2], 0, 1);
}

TEST(ColorConvert, RgbToYuvKnownValues) {
  HostImage red(kRGB8, 4, 4);
  fill_constant_rgb(red, 255, 0, 0);
  const HostImage bt601 = convert(red, params_for(kNV12));
  EXPECT_EQ(bt601.view().row(0, 3)[3], 81);
  EXPECT_EQ(bt601.view().row(1, 1)[0], 90);
  EXPECT_EQ(bt601.view().row(1, 1)[1], 240);
  // BT.709 limited red: Y 63, Cb 102, Cr 240.
  const HostImage bt709 = convert(red, params_for(kYUV420P, ColorMatrix::kBt709));
  EXPECT_EQ(bt709.view().row(0, 0)[0], 63);
  EXPECT_EQ(bt709.view().row(1, 0)[1], 102);
  EXPECT_EQ(bt709.view().row(2, 1)[0], 240);
  // P016 stores the same levels MSB-aligned: 16 (8-bit) is 4096.
  HostImage black(kRGB8, 2, 2);
  const HostImage p016 = convert(black, params_for(kP016));
  EXPECT_EQ(p016.view().row<std::uint16_t>(0, 1)[1], 16 * 256);
  EXPECT_EQ(p016.view().row<std::uint16_t>(1, 0)[0], 128 * 256);
}

TEST(ColorConvert, ChannelReordersAreExact) {
  HostImage rgb(kRGB8, 13, 127, 3, 5);
  rgb.fill_random(1);
  const HostImage bgr = convert(rgb, params_for(kBGR8));
  const HostImage rgba = convert(rgb, params_for(kRGBA8));
  for (int y = 0; y < 127; ++y) {
    for (int x = 0; x < 13; ++x) {
      const std::uint8_t* s = rgb.view().row(0, y) + 3 * x;
      const std::uint8_t* b = bgr.view().row(0, y) + 3 * x;
      const std::uint8_t* a = rgba.view().row(0, y) + 4 * x;
      ASSERT_EQ(b[0], s[2]);
      ASSERT_EQ(b[1], s[1]);
      ASSERT_EQ(b[2], s[0]);
      ASSERT_EQ(a[0], s[0]);
      ASSERT_EQ(a[1], s[1]);
      ASSERT_EQ(a[2], s[2]);
      ASSERT_EQ(a[3], 255);
    }
  }
  EXPECT_EQ(max_abs_difference(convert(bgr, params_for(kRGB8)).view(), rgb.view()), 0);
  EXPECT_EQ(max_abs_difference(convert(rgba, params_for(kRGB8)).view(), rgb.view()), 0);
  EXPECT_EQ(
      max_abs_difference(convert(convert(rgba, params_for(kBGR8)), params_for(kRGB8)).view(), rgb.view()), 0);
  EXPECT_EQ(max_abs_difference(convert(rgb, params_for(kRGB8)).view(), rgb.view()), 0);
}

TEST(ColorConvert, GrayUsesTheMatrixWeightsAndReplicates) {
  HostImage rgb(kRGB8, 13, 127, 3, 1);
  rgb.fill_random(2);
  for (ColorMatrix matrix : {ColorMatrix::kBt601, ColorMatrix::kBt709}) {
    const HostImage gray = convert(rgb, params_for(kGRAY8, matrix));
    const HostImage gray_from_bgr = convert(convert(rgb, params_for(kBGR8)), params_for(kGRAY8, matrix));
    EXPECT_EQ(max_abs_difference(gray.view(), gray_from_bgr.view()), 0);
    for (int y = 0; y < 127; y += 7) {
      for (int x = 0; x < 13; ++x) {
        const std::array<int, 3> c = rgb_at(rgb, x, y);
        const float kr = matrix == ColorMatrix::kBt601 ? 0.299f : 0.2126f;
        const float kb = matrix == ColorMatrix::kBt601 ? 0.114f : 0.0722f;
        const float luma = kr * static_cast<float>(c[0]) + (1 - kr - kb) * static_cast<float>(c[1]) +
                           kb * static_cast<float>(c[2]);
        ASSERT_NEAR(gray.view().row(0, y)[x], luma, 0.5 + 1e-3);
      }
    }
    const HostImage replicated = convert(gray, params_for(kRGBA8));
    for (int x = 0; x < 13; ++x) {
      const std::uint8_t* p = replicated.view().row(0, 5) + 4 * x;
      const std::uint8_t g = gray.view().row(0, 5)[x];
      ASSERT_EQ(p[0], g);
      ASSERT_EQ(p[1], g);
      ASSERT_EQ(p[2], g);
      ASSERT_EQ(p[3], 255);
    }
    EXPECT_EQ(max_abs_difference(convert(gray, params_for(kGRAY8)).view(), gray.view()), 0);
  }
}

TEST(ColorConvert, GrayFromYuvIsTheYPlane) {
  HostImage nv12(kNV12, 126, 78, 3, 2);
  nv12.fill_random(3);
  const HostImage full = convert(nv12, params_for(kGRAY8, ColorMatrix::kBt601, ColorRange::kFull));
  const HostImage limited = convert(nv12, params_for(kGRAY8, ColorMatrix::kBt709, ColorRange::kLimited));
  for (int y = 0; y < 78; ++y) {
    for (int x = 0; x < 126; ++x) {
      const std::uint8_t luma = nv12.view().row(0, y)[x];
      ASSERT_EQ(full.view().row(0, y)[x], luma);
      ASSERT_EQ(limited.view().row(0, y)[x], to_u8((static_cast<float>(luma) - 16.0f) * 255.0f / 219.0f));
    }
  }
}

// RGB images whose 2x2 blocks are constant survive the chroma subsampling, so RGB -> YUV -> RGB
// loses only quantization.
TEST(ColorConvert, YuvRoundTrip) {
  HostImage rgb(kRGB8, 126, 78, 3, 7);
  rgb.fill_random(4);
  for (int y = 0; y < 78; ++y) {
    for (int x = 0; x < 126; ++x) {
      std::uint8_t* p = rgb.view().row(0, y) + 3 * x;
      const std::uint8_t* block = rgb.view().row(0, y & ~1) + 3 * (x & ~1);
      for (int c = 0; c < 3; ++c) p[c] = block[c];
    }
  }
  for (PixelFormat yuv : {kNV12, kP016, kYUV420P}) {
    for (ColorMatrix matrix : {ColorMatrix::kBt601, ColorMatrix::kBt709}) {
      for (ColorRange range : {ColorRange::kLimited, ColorRange::kFull}) {
        const HostImage encoded = convert(rgb, params_for(yuv, matrix, range));
        const HostImage decoded = convert(encoded, params_for(kRGB8, matrix, range));
        EXPECT_LE(max_abs_difference(decoded.view(), rgb.view()), kU8YuvRoundTripTolerance)
            << pixel_format_name(yuv) << " matrix " << static_cast<int>(matrix) << " range "
            << static_cast<int>(range);
      }
    }
  }
}

TEST(ColorConvert, ChromaIsTheBlockAverage) {
  HostImage rgb(kRGB8, 2, 2);
  const std::uint8_t colors[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {40, 200, 90}};
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 3; ++c) rgb.view().row(0, i / 2)[3 * (i % 2) + c] = colors[i][c];
  }
  const HostImage nv12 = convert(rgb, params_for(kNV12, ColorMatrix::kBt709));
  float u = 0;
  float v = 0;
  for (int i = 0; i < 4; ++i) {
    const Yuv yuv =
        rgb_to_yuv(colors[i][0], colors[i][1], colors[i][2], ColorMatrix::kBt709, ColorRange::kLimited);
    u += yuv.u / 4;
    v += yuv.v / 4;
    EXPECT_NEAR(nv12.view().row(0, i / 2)[i % 2], yuv.y, 0.5 + 1e-3);
  }
  EXPECT_NEAR(nv12.view().row(1, 0)[0], u, 0.5 + 1e-3);
  EXPECT_NEAR(nv12.view().row(1, 0)[1], v, 0.5 + 1e-3);
}

// P016 holds the same levels as NV12, shifted into the high byte.
TEST(ColorConvert, P016MatchesNv12) {
  HostImage nv12(kNV12, 126, 78);
  nv12.fill_random(5);
  HostImage p016(kP016, 126, 78, 3, 4);
  for (int p = 0; p < 2; ++p) {
    for (int y = 0; y < (p == 0 ? 78 : 39); ++y) {
      for (int x = 0; x < 126; ++x)
        p016.view().row<std::uint16_t>(p, y)[x] = static_cast<std::uint16_t>(nv12.view().row(p, y)[x] << 8);
    }
  }
  for (PixelFormat out : {kRGB8, kBGR8, kGRAY8}) {
    const ColorConvertParams params = params_for(out, ColorMatrix::kBt709);
    EXPECT_EQ(max_abs_difference(convert(p016, params).view(), convert(nv12, params).view()), 0);
  }
}

TEST(ColorConvert, Yuv420pMatchesNv12) {
  HostImage nv12(kNV12, 126, 78);
  nv12.fill_random(6);
  HostImage i420(kYUV420P, 126, 78, 3, 2);
  for (int y = 0; y < 78; ++y) {
    for (int x = 0; x < 126; ++x) i420.view().row(0, y)[x] = nv12.view().row(0, y)[x];
  }
  for (int y = 0; y < 39; ++y) {
    for (int x = 0; x < 63; ++x) {
      i420.view().row(1, y)[x] = nv12.view().row(1, y)[2 * x];
      i420.view().row(2, y)[x] = nv12.view().row(1, y)[2 * x + 1];
    }
  }
  const ColorConvertParams params = params_for(kRGB8, ColorMatrix::kBt601, ColorRange::kFull);
  EXPECT_EQ(max_abs_difference(convert(i420, params).view(), convert(nv12, params).view()), 0);
}

// A 4:2:0 input's ROI keeps the image's chroma pairing, so converting a ROI at an odd offset equals
// cropping the converted image.
TEST(ColorConvert, RoiOfYuvInputEqualsCrop) {
  HostImage nv12(kNV12, 126, 78, 3, 6);
  nv12.fill_random(7);
  const ColorConvertParams params = params_for(kBGR8, ColorMatrix::kBt709);
  const HostImage full = convert(nv12, params);
  const Roi roi{5, 3, 61, 40};
  const HostImage cropped = convert(nv12, params, roi);
  for (int y = 0; y < roi.height; ++y) {
    for (int x = 0; x < 3 * roi.width; ++x) {
      ASSERT_EQ(cropped.view().row(0, y)[x], full.view().row(0, roi.y + y)[3 * roi.x + x]) << x << "," << y;
    }
  }
}

// A ROI of an RGB input converted to 4:2:0 equals converting a copy of that region.
TEST(ColorConvert, RoiOfRgbInputEqualsCopy) {
  HostImage rgb(kRGB8, 13, 127, 3, 2);
  rgb.fill_random(8);
  const Roi roi{3, 7, 10, 100};
  HostImage copy(kRGB8, roi.width, roi.height);
  for (int y = 0; y < roi.height; ++y) {
    for (int x = 0; x < 3 * roi.width; ++x)
      copy.view().row(0, y)[x] = rgb.view().row(0, roi.y + y)[3 * roi.x + x];
  }
  for (PixelFormat out : {kNV12, kP016, kYUV420P, kGRAY8}) {
    const ColorConvertParams params = params_for(out, ColorMatrix::kBt601, ColorRange::kFull);
    EXPECT_EQ(max_abs_difference(convert(rgb, params, roi).view(), convert(copy, params).view()), 0)
        << pixel_format_name(out);
  }
}

TEST(ColorConvert, BatchWithPerImageSizesPitchesAndRois) {
  HostImage a(kYUV420P, 126, 78, 3, 0);
  HostImage b(kYUV420P, 64, 34, 3, 9);
  HostImage c(kYUV420P, 2, 2, 3, 1);
  a.fill_random(9);
  b.fill_random(10);
  c.fill_random(11);
  const std::vector<Roi> rois = {Roi{}, Roi{1, 1, 33, 21}, Roi{}};
  ImageBatch input{{a.view(), b.view(), c.view()}, rois};
  const ColorConvertParams params = params_for(kRGBA8, ColorMatrix::kBt709, ColorRange::kLimited);
  auto plan = plan_color_convert(input, params);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->output_sizes.size(), 3u);
  EXPECT_EQ(plan->output_sizes[1].width, 33);
  EXPECT_EQ(plan->output_sizes[1].height, 21);
  EXPECT_EQ(plan->workspace_bytes, 0u);
  std::vector<HostImage> outputs;
  ImageBatch output;
  for (const auto& size : plan->output_sizes) outputs.emplace_back(kRGBA8, size.width, size.height, 3, 5);
  for (HostImage& image : outputs) output.images.push_back(image.view());
  ASSERT_TRUE(run_color_convert_cpu(input, output, params).is_ok());
  const HostImage* singles[] = {&a, &b, &c};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(max_abs_difference(outputs[i].view(), convert(*singles[i], params, rois[i]).view()), 0) << i;
  }
}

TEST(ColorConvert, SupportTable) {
  for (PixelFormat yuv : {kNV12, kP016, kYUV420P}) {
    for (PixelFormat packed : {kRGB8, kBGR8, kRGBA8}) {
      EXPECT_TRUE(color_conversion_supported(yuv, packed));
      EXPECT_TRUE(color_conversion_supported(packed, yuv));
    }
    EXPECT_TRUE(color_conversion_supported(yuv, kGRAY8));
    EXPECT_FALSE(color_conversion_supported(kGRAY8, yuv));
    EXPECT_FALSE(color_conversion_supported(yuv, kNV12));
    EXPECT_FALSE(color_conversion_supported(yuv, kPlanarF32));
  }
  EXPECT_TRUE(color_conversion_supported(kGRAY8, kRGB8));
  EXPECT_FALSE(color_conversion_supported(kPlanarF32, kRGB8));
}

// Runs the conversion and returns its error message ("" when it succeeded).
std::string error_of(const ImageBatch& input, const ImageBatch& output, const ColorConvertParams& params) {
  const Status status = run_color_convert_cpu(input, output, params);
  return status.is_ok() ? std::string() : status.message();
}

TEST(ColorConvert, RejectsBadInput) {
  HostImage nv12(kNV12, 64, 48);
  HostImage odd(kNV12, 63, 48);
  HostImage rgb_out(kRGB8, 64, 48);
  HostImage small_out(kRGB8, 32, 48);
  const ColorConvertParams to_rgb = params_for(kRGB8);
  ImageBatch one_out{{rgb_out.view()}, {}};

  EXPECT_NE(error_of({{odd.view()}, {}}, {{small_out.view()}, {}}, to_rgb).find("odd"), std::string::npos);
  EXPECT_NE(error_of({{nv12.view(), nv12.view()}, {}}, one_out, to_rgb).find("batch sizes differ"),
            std::string::npos);
  EXPECT_NE(error_of({{nv12.view()}, {Roi{40, 0, 32, 48}}}, {{small_out.view()}, {}}, to_rgb).find("outside"),
            std::string::npos);
  EXPECT_NE(error_of({{nv12.view()}, {Roi{0, 0, 0, 5}}}, one_out, to_rgb).find("empty"), std::string::npos);
  EXPECT_NE(error_of({{nv12.view()}, {}}, {{small_out.view()}, {}}, to_rgb).find("size 32x48"),
            std::string::npos);
  EXPECT_NE(error_of({{nv12.view()}, {}}, one_out, params_for(kBGR8)).find("not supported"),
            std::string::npos);
  EXPECT_NE(error_of({{nv12.view()}, {}}, one_out, params_for(kNV12)).find("nv12 to nv12"),
            std::string::npos);
  EXPECT_NE(error_of({{nv12.view()}, {}}, {{rgb_out.view()}, {Roi{0, 0, 8, 8}}}, to_rgb).find("ROIs"),
            std::string::npos);
  EXPECT_NE(error_of(ImageBatch{}, one_out, to_rgb).find("empty"), std::string::npos);

  // A ROI of odd size cannot become a 4:2:0 image.
  HostImage rgb(kRGB8, 64, 48);
  HostImage nv12_out(kNV12, 64, 48);
  EXPECT_NE(
      error_of({{rgb.view()}, {Roi{0, 0, 63, 48}}}, {{nv12_out.view()}, {}}, params_for(kNV12)).find("even"),
      std::string::npos);
  // Mixed input formats in one batch.
  HostImage i420(kYUV420P, 64, 48);
  EXPECT_NE(error_of({{nv12.view(), i420.view()}, {}}, {{rgb_out.view(), rgb_out.view()}, {}}, to_rgb)
                .find("in one batch"),
            std::string::npos);
  // Device memory cannot be read by the CPU reference.
  ImageView device = nv12.view();
  device.memory = MemoryKind::kDevice;
  EXPECT_NE(error_of({{device}, {}}, one_out, to_rgb).find("host or pinned"), std::string::npos);
}

}  // namespace
}  // namespace fovea::image::testing
