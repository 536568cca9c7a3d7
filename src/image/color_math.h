// YUV <-> RGB arithmetic shared by the color-conversion ops, the fused preprocess and their CPU
// references (written once, used on both sides).
//
// Y'CbCr per ITU-R BT.601 (Kr 0.299, Kb 0.114) and BT.709 (Kr 0.2126, Kb 0.0722).
// Limited ("TV") range: Y in 16..235, chroma in 16..240 (8-bit); full range: 0..255.
// Samples are handled on the 8-bit scale as float; 16-bit P016 samples (10/12-bit MSB-aligned)
// map to it by dividing by 256, which keeps limited-range levels (64..940 in 10-bit = 16..235).
#pragma once

#include "core/host_device.h"

namespace fovea::image {

enum class ColorMatrix { kBt601, kBt709 };
enum class ColorRange { kLimited, kFull };

struct YuvCoefficients {
  float y_offset;  // 16 (limited) or 0 (full)
  float y_scale;   // 255/219 (limited) or 1
  float c_scale;   // 255/224 (limited) or 1, applied to chroma - 128
  float r_v;       // R = Y + r_v * V
  float g_u;       // G = Y - g_u * U - g_v * V
  float g_v;
  float b_u;  // B = Y + b_u * U
};

FOVEA_HD YuvCoefficients yuv_coefficients(ColorMatrix matrix, ColorRange range) {
  const float kr = matrix == ColorMatrix::kBt601 ? 0.299f : 0.2126f;
  const float kb = matrix == ColorMatrix::kBt601 ? 0.114f : 0.0722f;
  const float kg = 1.0f - kr - kb;
  const bool limited = range == ColorRange::kLimited;
  return YuvCoefficients{
      limited ? 16.0f : 0.0f, limited ? 255.0f / 219.0f : 1.0f, limited ? 255.0f / 224.0f : 1.0f,
      2.0f * (1.0f - kr),     2.0f * kb * (1.0f - kb) / kg,     2.0f * kr * (1.0f - kr) / kg,
      2.0f * (1.0f - kb)};
}

struct Rgb {
  float r, g, b;
};

// y, u, v on the 8-bit scale (0..255); the result is on 0..255, not clamped.
FOVEA_HD Rgb yuv_to_rgb(float y, float u, float v, const YuvCoefficients& c) {
  const float luma = (y - c.y_offset) * c.y_scale;
  const float cb = (u - 128.0f) * c.c_scale;
  const float cr = (v - 128.0f) * c.c_scale;
  return Rgb{luma + c.r_v * cr, luma - c.g_u * cb - c.g_v * cr, luma + c.b_u * cb};
}

struct Yuv {
  float y, u, v;
};

// The inverse of yuv_to_rgb: r, g, b on 0..255; the result is on the 8-bit scale, not clamped.
FOVEA_HD Yuv rgb_to_yuv(float r, float g, float b, ColorMatrix matrix, ColorRange range) {
  const float kr = matrix == ColorMatrix::kBt601 ? 0.299f : 0.2126f;
  const float kb = matrix == ColorMatrix::kBt601 ? 0.114f : 0.0722f;
  const float kg = 1.0f - kr - kb;
  const float luma = kr * r + kg * g + kb * b;
  const float cb = (b - luma) / (2.0f * (1.0f - kb));
  const float cr = (r - luma) / (2.0f * (1.0f - kr));
  const bool limited = range == ColorRange::kLimited;
  const float y_scale = limited ? 219.0f / 255.0f : 1.0f;
  const float c_scale = limited ? 224.0f / 255.0f : 1.0f;
  return Yuv{luma * y_scale + (limited ? 16.0f : 0.0f), cb * c_scale + 128.0f, cr * c_scale + 128.0f};
}

// Round half away from zero and clamp to 0..255, the one rounding step uint8 outputs take.
FOVEA_HD unsigned char to_u8(float v) {
  const float clamped = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
  return static_cast<unsigned char>(clamped + 0.5f);
}

}  // namespace fovea::image
