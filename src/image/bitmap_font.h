// fovea's built-in bitmap font for OSD labels: printable ASCII (32..126) in 8x8 cells, each glyph
// a hand-drawn 5x7 shape in columns 1..5 and rows 0..6, so adjacent cells keep a blank column and
// row between characters. Row r of a glyph is one byte, bit 7 the leftmost pixel.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace fovea::image {

inline constexpr int kGlyphWidth = 8;
inline constexpr int kGlyphHeight = 8;
inline constexpr int kFirstGlyph = 32;
inline constexpr int kGlyphCount = 95;  // 32..126

// kGlyphCount x kGlyphHeight bytes, glyph by glyph.
extern const std::uint8_t kBitmapFont[kGlyphCount][kGlyphHeight];

// The glyph of `c`; characters outside 32..126 draw as '?'.
FOVEA_HD int glyph_index(char c) {
  const int code = static_cast<unsigned char>(c);
  return code >= kFirstGlyph && code < kFirstGlyph + kGlyphCount ? code - kFirstGlyph : '?' - kFirstGlyph;
}

// Whether pixel (column, row) of glyph `glyph` is ink, from a font table laid out as kBitmapFont
// (host or device copy).
FOVEA_HD bool glyph_ink(const std::uint8_t* font, int glyph, int column, int row) {
  return (font[glyph * kGlyphHeight + row] >> (kGlyphWidth - 1 - column)) & 1;
}

}  // namespace fovea::image
