// Image files for the image I/O tests, written with the libraries' own APIs (or byte by byte), so
// the decoders are checked against files fovea's encoders did not make.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/image_codec.h"

namespace fovea::io::testing {

// Deterministic RGB8 pixels: smooth ramps (so JPEG keeps them closely) plus a small hashed
// texture (so a misplaced row or column shows).
HostImage pattern_rgb8(int width, int height);

struct RawPng {
  int width = 0;
  int height = 0;
  int color_type = 0;  // PNG_COLOR_TYPE_*
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<std::uint8_t> samples;      // packed rows as the PNG stores them (16-bit big-endian)
  std::vector<std::uint8_t> palette_rgb;  // palette images: 3 bytes per entry
  std::vector<std::uint8_t> trns;         // tRNS chunk payload when not empty
};
std::string write_png_bytes(const RawPng& png);

// How a YCbCr JPEG is laid out: luma's sampling factors (chroma's are 1x1: 2x2 is 4:2:0, 1x1 4:4:4,
// 2x1 4:2:2, 4x1 4:1:1) and baseline or progressive. The nvJPEG tests choose them.
struct JpegShape {
  int luma_h = 2;
  int luma_v = 2;
  bool progressive = false;
  int quality = 90;
};

// A JPEG through libjpeg with the given input color space (JCS_RGB, JCS_GRAYSCALE, JCS_CMYK) and
// stored color space (JCS_YCbCr, JCS_GRAYSCALE, JCS_CMYK, JCS_YCCK); `samples` packed rows.
// `shape`, when given, sets the sampling and progression (its quality wins over `quality`).
std::string write_jpeg_bytes(int width, int height, const std::vector<std::uint8_t>& samples, int in_space,
                             int components, int stored_space, int quality, const JpegShape* shape = nullptr);
// `rgb` (kRGB8, host) as a YCbCr JPEG of that shape.
std::string encode_shaped_jpeg(const HostImage& rgb, const JpegShape& shape);

// `jpeg` with an APP1 EXIF segment holding orientation `orientation`, in big- or little-endian
// TIFF order, inserted right after SOI.
std::string with_exif_orientation(const std::string& jpeg, int orientation, bool little_endian);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);
std::vector<std::uint8_t> to_bytes(const std::string& bytes);

}  // namespace fovea::io::testing
