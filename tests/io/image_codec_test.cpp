// CPU image decode and encode against known pixels: PNG exactly (every kind of PNG), JPEG within
// the tolerances below, gray and CMYK/YCCK JPEG, all 8 EXIF orientations, BMP and WebP, and the
// atomic, never-over-an-input file writer.
#include <gtest/gtest.h>
#include <png.h>
#include <webp/encode.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/output_file.h"
#include "io/image_codec.h"
#include "io/image_test_files.h"
#include "support/test_media.h"

extern "C" {
#include <jpeglib.h>
}

namespace fovea::io {
namespace {

using testing::to_bytes;

// JPEG tolerances per 8-bit channel, decoded against the pixels that were encoded.
struct JpegTolerance {
  int max_abs;
  double mean_abs;
};
// Quality 95, 4:2:0 chroma (libjpeg's defaults), pattern_rgb8: its hashed texture (0..7) is
// finer than the quantization of the high-frequency coefficients and 4:2:0 halves the chroma
// resolution, so single pixels move by several levels while the mean stays near 1 (measured with
// libjpeg-turbo 2.1.5: max 6, mean 1.41; the margin allows another libjpeg build's rounding).
constexpr JpegTolerance kJpegQ95{10, 2.0};
// Solid 16x16-aligned blocks (one color per MCU), read away from their edges: only the DC
// coefficient and the color conversion round (measured: 1 for RGB, gray, CMYK and YCCK, where
// the K scaling rounds once more).
constexpr int kJpegSolidBlocks = 3;

struct Difference {
  int max_abs = 0;
  double mean_abs = 0;
};

Difference compare_rgb8(const ImageView& a, const ImageView& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  Difference d;
  long long sum = 0;
  for (int y = 0; y < std::min(a.height, b.height); ++y) {
    for (int x = 0; x < 3 * std::min(a.width, b.width); ++x) {
      const int diff = std::abs(a.row(0, y)[x] - b.row(0, y)[x]);
      d.max_abs = std::max(d.max_abs, diff);
      sum += diff;
    }
  }
  d.mean_abs = static_cast<double>(sum) / (3.0 * a.width * a.height);
  return d;
}

bool same_pixels(const ImageView& a, const ImageView& b) {
  if (a.format != b.format || a.width != b.width || a.height != b.height) return false;
  const std::size_t row_bytes = static_cast<std::size_t>(a.width) * pixel_bytes(a.format);
  for (int y = 0; y < a.height; ++y) {
    if (!std::equal(a.row(0, y), a.row(0, y) + row_bytes, b.row(0, y))) return false;
  }
  return true;
}

DecodedImage decode_ok(const std::string& bytes, const ImageDecodeOptions& options = {}) {
  Result<DecodedImage> decoded = decode_image(to_bytes(bytes), "test", options);
  EXPECT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  return std::move(decoded).value();
}

std::string encode_ok(const ImageView& image, ImageEncodeOptions options) {
  Result<std::string> bytes = encode_image(image, options);
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  return std::move(bytes).value();
}

ImageEncodeOptions png(int level = 6) {
  return {ImageFileFormat::kPng, 90, level};
}
ImageEncodeOptions jpeg(int quality) {
  return {ImageFileFormat::kJpeg, quality, 6};
}

TEST(ImageCodec, SniffsTheFormatFromTheBytes) {
  HostImage image = testing::pattern_rgb8(8, 8);
  const std::string png_bytes = encode_ok(image.view(), png());
  EXPECT_EQ(sniff_image_format(to_bytes(png_bytes)), ImageFileFormat::kPng);
  EXPECT_EQ(sniff_image_format(to_bytes(encode_ok(image.view(), jpeg(90)))), ImageFileFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(to_bytes(std::string("RIFF\0\0\0\0WEBPVP8 ", 16))), ImageFileFormat::kWebp);
  EXPECT_EQ(sniff_image_format(to_bytes("hello")), std::nullopt);
  // A PNG named .jpg is a PNG.
  const std::string path = fovea::testing::test_temp_dir() + "/really-a-png.jpg";
  testing::write_file(path, png_bytes);
  Result<DecodedImage> decoded = decode_image_file(path);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  EXPECT_EQ(decoded->file_format, ImageFileFormat::kPng);
  EXPECT_TRUE(same_pixels(decoded->image.view(), image.view()));
}

TEST(ImageCodec, PngRoundTripsExactly) {
  for (int level : {0, 1, 6, 9}) {
    HostImage image = testing::pattern_rgb8(37, 23);  // odd sizes: no row may assume alignment
    const DecodedImage decoded = decode_ok(encode_ok(image.view(), png(level)));
    EXPECT_EQ(decoded.image.view().format, PixelFormat::kRGB8);
    EXPECT_TRUE(same_pixels(decoded.image.view(), image.view())) << "level " << level;
  }
}

TEST(ImageCodec, PngRgbaKeepsOrDropsAlpha) {
  Result<HostImage> rgba = HostImage::allocate(PixelFormat::kRGBA8, 19, 7);
  ASSERT_TRUE(rgba.is_ok());
  for (int y = 0; y < 7; ++y) {
    for (int x = 0; x < 19 * 4; ++x) rgba->row(y)[x] = static_cast<std::uint8_t>(x * 13 + y * 7);
  }
  const std::string bytes = encode_ok(rgba->view(), png());
  ImageDecodeOptions keep;
  keep.keep_alpha = true;
  const DecodedImage kept = decode_ok(bytes, keep);
  EXPECT_TRUE(kept.source_has_alpha);
  EXPECT_TRUE(same_pixels(kept.image.view(), rgba->view()));
  const DecodedImage dropped = decode_ok(bytes);
  ASSERT_EQ(dropped.image.view().format, PixelFormat::kRGB8);
  for (int y = 0; y < 7; ++y) {
    for (int x = 0; x < 19; ++x) {
      for (int c = 0; c < 3; ++c) ASSERT_EQ(dropped.image.row(y)[3 * x + c], rgba->row(y)[4 * x + c]);
    }
  }
}

TEST(ImageCodec, PngBgrAndGrayEncode) {
  HostImage rgb = testing::pattern_rgb8(11, 5);
  Result<HostImage> bgr = HostImage::allocate(PixelFormat::kBGR8, 11, 5);
  Result<HostImage> gray = HostImage::allocate(PixelFormat::kGRAY8, 11, 5);
  ASSERT_TRUE(bgr.is_ok() && gray.is_ok());
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 11; ++x) {
      for (int c = 0; c < 3; ++c) bgr->row(y)[3 * x + c] = rgb.row(y)[3 * x + 2 - c];
      gray->row(y)[x] = rgb.row(y)[3 * x];
    }
  }
  EXPECT_TRUE(same_pixels(decode_ok(encode_ok(bgr->view(), png())).image.view(), rgb.view()));
  const DecodedImage from_gray = decode_ok(encode_ok(gray->view(), png()));
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 11; ++x) {
      for (int c = 0; c < 3; ++c) ASSERT_EQ(from_gray.image.row(y)[3 * x + c], gray->row(y)[x]);
    }
  }
}

TEST(ImageCodec, Png16BitKeptOrNarrowed) {
  for (PixelFormat format : {PixelFormat::kRGB16, PixelFormat::kRGBA16}) {
    const int channels = format == PixelFormat::kRGB16 ? 3 : 4;
    Result<HostImage> wide = HostImage::allocate(format, 9, 4);
    ASSERT_TRUE(wide.is_ok());
    for (int y = 0; y < 4; ++y) {
      auto* row = reinterpret_cast<std::uint16_t*>(wide->row(y));
      for (int i = 0; i < 9 * channels; ++i) row[i] = static_cast<std::uint16_t>(i * 7919 + y * 104729);
    }
    const std::string bytes = encode_ok(wide->view(), png());
    ImageDecodeOptions keep;
    keep.keep_16bit = true;
    keep.keep_alpha = true;
    const DecodedImage kept = decode_ok(bytes, keep);
    EXPECT_EQ(kept.source_bit_depth, 16);
    EXPECT_TRUE(same_pixels(kept.image.view(), wide->view())) << pixel_format_name(format);
    const DecodedImage narrowed = decode_ok(bytes);
    ASSERT_EQ(narrowed.image.view().format, PixelFormat::kRGB8);
    for (int y = 0; y < 4; ++y) {
      const auto* in = reinterpret_cast<const std::uint16_t*>(wide->row(y));
      for (int x = 0; x < 9; ++x) {
        for (int c = 0; c < 3; ++c) {
          // png_set_scale_16: v * 255 / 65535 rounded to nearest.
          const int expected = (in[channels * x + c] * 255 + 32767) / 65535;
          ASSERT_EQ(narrowed.image.row(y)[3 * x + c], expected) << x << "," << y;
        }
      }
    }
  }
}

// Every PNG color type and depth fovea's encoder never writes, from libpng directly.
TEST(ImageCodec, EveryKindOfPng) {
  const int w = 13;
  const int h = 6;
  struct Case {
    const char* name;
    testing::RawPng raw;
    // expected RGBA of pixel (x, y)
    std::array<int, 4> (*expect)(int x, int y);
  };
  auto gray8 = [](int x, int y) { return std::array<int, 4>{x * 19 + y, x * 19 + y, x * 19 + y, 255}; };
  std::vector<Case> cases;
  {
    testing::RawPng raw{w, h, PNG_COLOR_TYPE_GRAY, 8};
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) raw.samples.push_back(static_cast<std::uint8_t>(x * 19 + y));
    cases.push_back({"gray8", raw, gray8});
  }
  {
    testing::RawPng raw{w, h, PNG_COLOR_TYPE_GRAY, 8, true};  // Adam7 interlaced
    raw.samples = cases[0].raw.samples;
    cases.push_back({"gray8 interlaced", raw, gray8});
  }
  {
    // 1-bit gray: one bit per pixel, rows padded to whole bytes; 1 is white.
    testing::RawPng raw{w, h, PNG_COLOR_TYPE_GRAY, 1};
    for (int y = 0; y < h; ++y) {
      for (int byte = 0; byte < (w + 7) / 8; ++byte) {
        int v = 0;
        for (int bit = 0; bit < 8; ++bit) {
          const int x = byte * 8 + bit;
          v |= (x < w && (x + y) % 2 == 1 ? 1 : 0) << (7 - bit);
        }
        raw.samples.push_back(static_cast<std::uint8_t>(v));
      }
    }
    cases.push_back({"gray1", raw, [](int x, int y) {
                       const int v = (x + y) % 2 == 1 ? 255 : 0;
                       return std::array<int, 4>{v, v, v, 255};
                     }});
  }
  {
    testing::RawPng raw{w, h, PNG_COLOR_TYPE_GRAY, 16};
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int v = (x * 19 + y) * 257;  // 8-bit value v/257 exactly after scaling
        raw.samples.push_back(static_cast<std::uint8_t>(v >> 8));
        raw.samples.push_back(static_cast<std::uint8_t>(v & 0xFF));
      }
    }
    cases.push_back({"gray16", raw, gray8});
  }
  {
    testing::RawPng raw{w, h, PNG_COLOR_TYPE_GRAY_ALPHA, 8};
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        raw.samples.push_back(static_cast<std::uint8_t>(x * 19 + y));
        raw.samples.push_back(static_cast<std::uint8_t>(255 - x * 10));
      }
    }
    cases.push_back({"gray+alpha", raw, [](int x, int y) {
                       return std::array<int, 4>{x * 19 + y, x * 19 + y, x * 19 + y, 255 - x * 10};
                     }});
  }
  {
    testing::RawPng raw{w, h, PNG_COLOR_TYPE_PALETTE, 8};
    raw.palette_rgb = {0, 200, 0, 60, 170, 11, 120, 140, 22, 180, 110, 33};  // entry i: i*60, 200-i*30, i*11
    raw.trns = {255, 128, 0, 255};
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) raw.samples.push_back(static_cast<std::uint8_t>((x + 2 * y) % 4));
    cases.push_back({"palette+tRNS", raw, [](int x, int y) {
                       const int i = (x + 2 * y) % 4;
                       constexpr std::array<int, 4> kAlpha = {255, 128, 0, 255};
                       return std::array<int, 4>{i * 60, 200 - i * 30, i * 11, kAlpha[i]};
                     }});
  }
  for (const Case& c : cases) {
    const std::string bytes = testing::write_png_bytes(c.raw);
    for (bool keep_alpha : {false, true}) {
      ImageDecodeOptions options;
      options.keep_alpha = keep_alpha;
      const DecodedImage decoded = decode_ok(bytes, options);
      const ImageView& v = decoded.image.view();
      const bool has_alpha = keep_alpha && decoded.source_has_alpha;
      ASSERT_EQ(v.format, has_alpha ? PixelFormat::kRGBA8 : PixelFormat::kRGB8) << c.name;
      ASSERT_EQ(v.width, w);
      ASSERT_EQ(v.height, h);
      const int channels = has_alpha ? 4 : 3;
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          const std::array<int, 4> expected = c.expect(x, y);
          for (int ch = 0; ch < channels; ++ch) {
            ASSERT_EQ(v.row(0, y)[channels * x + ch], expected[ch])
                << c.name << " (" << x << "," << y << ") " << ch;
          }
        }
      }
    }
  }
}

TEST(ImageCodec, JpegRoundTripWithinTolerance) {
  HostImage image = testing::pattern_rgb8(64, 48);
  const DecodedImage decoded = decode_ok(encode_ok(image.view(), jpeg(95)));
  EXPECT_EQ(decoded.file_format, ImageFileFormat::kJpeg);
  const Difference d = compare_rgb8(decoded.image.view(), image.view());
  EXPECT_LE(d.max_abs, kJpegQ95.max_abs);
  EXPECT_LE(d.mean_abs, kJpegQ95.mean_abs);
  // Odd sizes and BGR input give the same picture.
  HostImage odd = testing::pattern_rgb8(13, 127);
  EXPECT_LE(compare_rgb8(decode_ok(encode_ok(odd.view(), jpeg(95))).image.view(), odd.view()).mean_abs,
            kJpegQ95.mean_abs);
}

// Four solid quadrants (MCU-aligned) in known colors, as packed RGB.
constexpr std::array<std::array<std::uint8_t, 3>, 4> kQuadrants = {
    {{220, 30, 30}, {30, 200, 40}, {40, 50, 210}, {240, 240, 240}}};  // TL, TR, BL, BR

std::vector<std::uint8_t> quadrant_samples(int w, int h) {
  std::vector<std::uint8_t> samples;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const auto& color = kQuadrants[(y >= h / 2 ? 2 : 0) + (x >= w / 2 ? 1 : 0)];
      samples.insert(samples.end(), color.begin(), color.end());
    }
  }
  return samples;
}

// The color at the middle of a quadrant (0 TL, 1 TR, 2 BL, 3 BR) of a decoded image.
std::array<int, 3> quadrant_color(const ImageView& v, int quadrant) {
  const int x = quadrant % 2 == 0 ? v.width / 4 : 3 * v.width / 4;
  const int y = quadrant < 2 ? v.height / 4 : 3 * v.height / 4;
  const std::uint8_t* p = v.row(0, y) + 3 * x;
  return {p[0], p[1], p[2]};
}

void expect_near_color(const std::array<int, 3>& got, const std::array<std::uint8_t, 3>& want, int tolerance,
                       const std::string& what) {
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(got[c], want[c], tolerance) << what << " channel " << c;
}

TEST(ImageCodec, JpegExifOrientationAllEight) {
  const int w = 64;
  const int h = 32;  // not square: orientations 5..8 swap the sides
  const std::string plain =
      testing::write_jpeg_bytes(w, h, quadrant_samples(w, h), JCS_RGB, 3, JCS_YCbCr, 95);
  // Which stored quadrant appears at the visual TL, TR, BL, BR, from EXIF's definitions (the
  // 0th row / 0th column each orientation names).
  constexpr std::array<std::array<int, 4>, 9> kVisual = {{
      {},
      {0, 1, 2, 3},  // 1: as stored
      {1, 0, 3, 2},  // 2: mirrored left-right
      {3, 2, 1, 0},  // 3: turned 180
      {2, 3, 0, 1},  // 4: mirrored top-bottom
      {0, 2, 1, 3},  // 5: transposed
      {2, 0, 3, 1},  // 6: turned 90 clockwise
      {3, 1, 2, 0},  // 7: transversed
      {1, 3, 0, 2},  // 8: turned 90 counter-clockwise
  }};
  for (int orientation = 1; orientation <= 8; ++orientation) {
    for (bool little : {false, true}) {
      const std::string bytes = testing::with_exif_orientation(plain, orientation, little);
      const DecodedImage decoded = decode_ok(bytes);
      const std::string what = "orientation " + std::to_string(orientation) + (little ? " II" : " MM");
      EXPECT_EQ(decoded.orientation, orientation) << what;
      const ImageView& v = decoded.image.view();
      EXPECT_EQ(v.width, orientation >= 5 ? h : w) << what;
      EXPECT_EQ(v.height, orientation >= 5 ? w : h) << what;
      for (int q = 0; q < 4; ++q) {
        expect_near_color(quadrant_color(v, q), kQuadrants[kVisual[orientation][q]], kJpegSolidBlocks,
                          what + " quadrant " + std::to_string(q));
      }
      ImageDecodeOptions stored;
      stored.apply_orientation = false;
      const DecodedImage as_stored = decode_ok(bytes, stored);
      EXPECT_EQ(as_stored.image.view().width, w);
      EXPECT_EQ(as_stored.orientation, orientation);
    }
  }
}

TEST(ImageCodec, GrayJpegBecomesRgb) {
  Result<HostImage> gray = HostImage::allocate(PixelFormat::kGRAY8, 32, 16);
  ASSERT_TRUE(gray.is_ok());
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 32; ++x) gray->row(y)[x] = static_cast<std::uint8_t>(x < 16 ? 40 : 200);
  const DecodedImage decoded = decode_ok(encode_ok(gray->view(), jpeg(95)));
  const ImageView& v = decoded.image.view();
  ASSERT_EQ(v.format, PixelFormat::kRGB8);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 32; ++x) {
      const std::uint8_t* p = v.row(0, y) + 3 * x;
      ASSERT_EQ(p[0], p[1]);
      ASSERT_EQ(p[1], p[2]);
      if (x % 16 > 1 && x % 16 < 14) {
        ASSERT_NEAR(p[0], x < 16 ? 40 : 200, kJpegSolidBlocks) << x << "," << y;
      }
    }
  }
}

// CMYK and YCCK JPEGs as Adobe's writers make them: libjpeg marks them with an APP14 "Adobe"
// segment and the samples are stored inverted (255 = no ink), so R = C * K / 255.
TEST(ImageCodec, CmykAndYcckJpegBecomeRgb) {
  const int w = 32;
  const int h = 32;
  constexpr std::array<std::array<int, 4>, 4> kInverted = {
      {{255, 40, 40, 255}, {40, 255, 40, 200}, {40, 40, 255, 128}, {255, 255, 255, 60}}};
  std::vector<std::uint8_t> samples;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const auto& cmyk = kInverted[(y >= h / 2 ? 2 : 0) + (x >= w / 2 ? 1 : 0)];
      for (int v : cmyk) samples.push_back(static_cast<std::uint8_t>(v));
    }
  }
  for (int stored : {JCS_CMYK, JCS_YCCK}) {
    const DecodedImage decoded = decode_ok(testing::write_jpeg_bytes(w, h, samples, JCS_CMYK, 4, stored, 98));
    for (int q = 0; q < 4; ++q) {
      const auto& cmyk = kInverted[q];
      std::array<std::uint8_t, 3> rgb{};
      for (int c = 0; c < 3; ++c) rgb[c] = static_cast<std::uint8_t>((cmyk[c] * cmyk[3] + 127) / 255);
      expect_near_color(quadrant_color(decoded.image.view(), q), rgb, kJpegSolidBlocks,
                        (stored == JCS_CMYK ? "CMYK quadrant " : "YCCK quadrant ") + std::to_string(q));
    }
  }
}

TEST(ImageCodec, JpegRefusesAlpha) {
  Result<HostImage> rgba = HostImage::allocate(PixelFormat::kRGBA8, 4, 4);
  ASSERT_TRUE(rgba.is_ok());
  const Result<std::string> bytes = encode_image(rgba->view(), jpeg(90));
  EXPECT_EQ(bytes.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(bytes.status().message().find("no alpha"), std::string::npos);
  EXPECT_EQ(encode_image(rgba->view(), jpeg(0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encode_image(rgba->view(), png(10)).status().code(), StatusCode::kInvalidArgument);
}

std::string bmp_bytes(int w, int h, int bits, bool top_down, bool alpha_bitfields) {
  const int stride = (w * bits + 31) / 32 * 4;
  const int header = alpha_bitfields ? 56 : 40;  // BITMAPV3INFOHEADER carries the four masks
  const int offset = 14 + header;
  std::string b;
  auto u16 = [&b](int v) { b += static_cast<char>(v & 0xFF), b += static_cast<char>(v >> 8 & 0xFF); };
  auto u32 = [&](std::uint32_t v) { u16(static_cast<int>(v & 0xFFFF)), u16(static_cast<int>(v >> 16)); };
  b += "BM";
  u32(static_cast<std::uint32_t>(offset + stride * h));
  u32(0);
  u32(static_cast<std::uint32_t>(offset));
  u32(static_cast<std::uint32_t>(header));
  u32(static_cast<std::uint32_t>(w));
  u32(static_cast<std::uint32_t>(top_down ? -h : h));
  u16(1);
  u16(bits);
  u32(alpha_bitfields ? 3 : 0);
  u32(static_cast<std::uint32_t>(stride * h));
  u32(2835), u32(2835), u32(0), u32(0);
  if (alpha_bitfields) u32(0x00FF0000), u32(0x0000FF00), u32(0x000000FF), u32(0xFF000000);
  for (int row = 0; row < h; ++row) {
    const int y = top_down ? row : h - 1 - row;
    std::string line;
    for (int x = 0; x < w; ++x) {
      line += static_cast<char>(x * 7 + y);   // B
      line += static_cast<char>(x + y * 11);  // G
      line += static_cast<char>(200 - x);     // R
      if (bits == 32) line += static_cast<char>(x * 17);
    }
    line.resize(stride, '\0');
    b += line;
  }
  return b;
}

TEST(ImageCodec, BmpUncompressed) {
  const int w = 13;
  const int h = 5;
  for (int bits : {24, 32}) {
    for (bool top_down : {false, true}) {
      const bool alpha = bits == 32 && top_down;
      ImageDecodeOptions options;
      options.keep_alpha = true;
      const DecodedImage decoded = decode_ok(bmp_bytes(w, h, bits, top_down, alpha), options);
      const ImageView& v = decoded.image.view();
      ASSERT_EQ(v.format, alpha ? PixelFormat::kRGBA8 : PixelFormat::kRGB8);
      const int channels = alpha ? 4 : 3;
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          const std::uint8_t* p = v.row(0, y) + channels * x;
          ASSERT_EQ(p[0], 200 - x) << bits << " " << top_down;
          ASSERT_EQ(p[1], static_cast<std::uint8_t>(x + y * 11));
          ASSERT_EQ(p[2], static_cast<std::uint8_t>(x * 7 + y));
          if (alpha) {
            ASSERT_EQ(p[3], static_cast<std::uint8_t>(x * 17));
          }
        }
      }
    }
  }
}

TEST(ImageCodec, WebpLosslessExact) {
  const int w = 21;
  const int h = 9;
  std::vector<std::uint8_t> rgba;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      // Alpha never 0: lossless WebP may change the color of fully transparent pixels.
      rgba.insert(rgba.end(), {static_cast<std::uint8_t>(x * 12), static_cast<std::uint8_t>(y * 25),
                               static_cast<std::uint8_t>(x * y), static_cast<std::uint8_t>(255 - x * 5)});
    }
  }
  std::uint8_t* out = nullptr;
  const std::size_t size = WebPEncodeLosslessRGBA(rgba.data(), w, h, w * 4, &out);
  ASSERT_GT(size, 0u);
  const std::string bytes(reinterpret_cast<const char*>(out), size);
  WebPFree(out);
  ImageDecodeOptions options;
  options.keep_alpha = true;
  const DecodedImage decoded = decode_ok(bytes, options);
  EXPECT_EQ(decoded.file_format, ImageFileFormat::kWebp);
  ASSERT_EQ(decoded.image.view().format, PixelFormat::kRGBA8);
  for (int y = 0; y < h; ++y) {
    ASSERT_TRUE(std::equal(rgba.begin() + y * w * 4, rgba.begin() + (y + 1) * w * 4, decoded.image.row(y)));
  }
  const DecodedImage rgb = decode_ok(bytes);
  ASSERT_EQ(rgb.image.view().format, PixelFormat::kRGB8);
  EXPECT_EQ(rgb.image.row(2)[3 * 4 + 1], rgba[(2 * w + 4) * 4 + 1]);
}

TEST(ImageCodec, WritesAtomicallyAndNeverOverAnInput) {
  const std::string dir = fovea::testing::test_temp_dir();
  HostImage image = testing::pattern_rgb8(16, 16);
  const std::filesystem::path out = dir + "/nested/out.png";
  ASSERT_TRUE(write_image_file(out, image.view(), png(), {}).is_ok());
  EXPECT_FALSE(std::filesystem::exists(partial_path(out)));
  Result<DecodedImage> back = decode_image_file(out);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_TRUE(same_pixels(back->image.view(), image.view()));

  // The input, also through a symbolic link: refused, and the input is untouched.
  const std::string input = dir + "/input.png";
  testing::write_file(input, encode_ok(image.view(), png()));
  const std::string before = testing::read_file(input);
  std::filesystem::create_symlink(input, dir + "/link.png");
  HostImage other = testing::pattern_rgb8(8, 8);
  for (const std::string& target : {input, dir + "/link.png"}) {
    const Status status = write_image_file(target, other.view(), png(), {input});
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
    EXPECT_NE(status.message().find("never overwrites"), std::string::npos) << status.to_string();
  }
  EXPECT_EQ(testing::read_file(input), before);

  // A failed encode leaves no file and no partial file behind.
  Result<HostImage> rgba = HostImage::allocate(PixelFormat::kRGBA8, 4, 4);
  ASSERT_TRUE(rgba.is_ok());
  const std::filesystem::path refused = dir + "/refused.jpg";
  EXPECT_FALSE(write_image_file(refused, rgba->view(), jpeg(90), {input}).is_ok());
  EXPECT_FALSE(std::filesystem::exists(refused));
  EXPECT_FALSE(std::filesystem::exists(partial_path(refused)));
}

}  // namespace
}  // namespace fovea::io

namespace fovea::io {
namespace {

// fancy_upsampling off replicates each chroma sample over its 2x2 block (nvJPEG's way): on a
// 4:2:0 file of a sharp pattern the two decodes differ near color edges, and only in chroma's
// effect.
TEST(ImageCodec, JpegChromaUpsamplingIsInterpolatedOrReplicated) {
  const HostImage rgb = testing::pattern_rgb8(64, 32);
  const Result<std::string> jpeg =
      encode_image(rgb.view(), {.format = ImageFileFormat::kJpeg, .jpeg_quality = 95});
  ASSERT_TRUE(jpeg.is_ok());
  const std::vector<std::uint8_t> bytes(jpeg->begin(), jpeg->end());
  ImageDecodeOptions replicated;
  replicated.fancy_upsampling = false;
  const DecodedImage fancy = decode_image(bytes, "fancy.jpg").value();
  const DecodedImage plain = decode_image(bytes, "plain.jpg", replicated).value();
  int differing = 0;
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 64 * 3; ++x) differing += fancy.image.row(y)[x] != plain.image.row(y)[x];
  }
  EXPECT_GT(differing, 0);
}

}  // namespace
}  // namespace fovea::io
