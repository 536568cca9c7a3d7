// On-screen display: rectangles, lines and text labels drawn in place on frames.
//
// | image format | what is painted                                                     |
// |--------------|---------------------------------------------------------------------|
// | kRGB8, kBGR8 | every covered pixel                                                 |
// | kNV12        | Y of every covered pixel; UV of a 2x2 block when its top-left pixel  |
// |              | is covered. RGB colors become Y'CbCr with DrawParams' matrix/range. |
//
// Commands are applied in list order; each covered pixel becomes (1 - alpha) * pixel + alpha *
// color. Coverage, in image pixels (ROIs are not used):
//   kRectangle  [x0, x1) x [y0, y1); thickness <= 0 fills it, else a border of `thickness` pixels
//               inside those edges.
//   kLine       pixels whose center lies within thickness / 2 of the segment (x0, y0)-(x1, y1),
//               tested in exact integer arithmetic.
//   kText       a label whose box has its top-left corner at (x0, y0): `scale` pixels of padding
//               around the text, each character an 8x8 cell of the built-in font (bitmap_font.h)
//               magnified `scale` times. Ink takes `color` and `alpha`; the rest of the box takes
//               `background` and `background_alpha` (0: no box).
// Shapes partly outside the image are drawn clipped; shapes fully outside change nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"
#include "image/bitmap_font.h"
#include "image/color_math.h"

namespace fovea::image {

enum class DrawKind : std::int32_t { kRectangle, kLine, kText };

inline constexpr int kMaxDrawText = 63;  // characters per label
// Coordinates are limited so that every bound computation fits an int with room to spare.
inline constexpr int kMaxDrawCoordinate = 1 << 24;
inline constexpr int kMaxTextScale = 64;

// Trivially copyable: the CUDA run copies the list into device memory as it is.
struct DrawCommand {
  DrawKind kind = DrawKind::kRectangle;
  int image = 0;  // index into the batch
  int x0 = 0;
  int y0 = 0;
  int x1 = 0;
  int y1 = 0;
  std::uint8_t color[3] = {255, 255, 255};  // R, G, B
  float alpha = 1.0f;                       // 0..1
  int thickness = 1;                        // rectangle: <= 0 fills; line: >= 1
  char text[kMaxDrawText + 1] = {};         // kText, NUL-terminated
  int scale = 1;                            // kText: 1..kMaxTextScale
  std::uint8_t background[3] = {0, 0, 0};   // kText box
  float background_alpha = 0.0f;            // 0..1
};

struct DrawParams {
  ColorMatrix matrix = ColorMatrix::kBt709;  // RGB -> Y'CbCr for kNV12
  ColorRange range = ColorRange::kLimited;
};

struct DrawPlan {
  // Device bytes run_draw_cuda needs for the font table and the command list.
  std::size_t buffer_bytes = 0;
};

Result<DrawPlan> plan_draw(const ImageBatch& images, std::span<const DrawCommand> commands);
Status run_draw_cpu(const ImageBatch& images, std::span<const DrawCommand> commands,
                    const DrawParams& params);
// Copies the font table and `commands` into `d_buffer` (plan.buffer_bytes of device memory) on
// `stream` (from pageable memory CUDA stages the copy, so `commands` may be freed on return), then
// draws. `d_buffer` must stay untouched until the stream has run the draw.
Status run_draw_cuda(cudaStream_t stream, const ImageBatch& images, std::span<const DrawCommand> commands,
                     const DrawParams& params, void* d_buffer, std::size_t buffer_bytes);

namespace detail {

// Font table first, rounded to 256 bytes so the commands that follow stay aligned.
inline constexpr std::size_t kDrawFontBytes = 1024;
static_assert(kDrawFontBytes >= sizeof(std::uint8_t) * kGlyphCount * kGlyphHeight);

Status check_draw(const ImageBatch& images, std::span<const DrawCommand> commands);

struct PixelBox {
  int x_begin, y_begin, x_end, y_end;  // [begin, end), possibly empty
};

FOVEA_HD int text_length(const DrawCommand& c) {
  int n = 0;
  while (n < kMaxDrawText && c.text[n] != '\0') ++n;
  return n;
}

// The pixels a command may cover, before clipping.
FOVEA_HD PixelBox command_box(const DrawCommand& c) {
  switch (c.kind) {
    case DrawKind::kRectangle: return {c.x0, c.y0, c.x1, c.y1};
    case DrawKind::kLine: {
      const int reach = (c.thickness + 1) / 2;
      return {(c.x0 < c.x1 ? c.x0 : c.x1) - reach, (c.y0 < c.y1 ? c.y0 : c.y1) - reach,
              (c.x0 > c.x1 ? c.x0 : c.x1) + reach + 1, (c.y0 > c.y1 ? c.y0 : c.y1) + reach + 1};
    }
    default: {
      const int pad = c.scale;
      return {c.x0, c.y0, c.x0 + 2 * pad + text_length(c) * kGlyphWidth * c.scale,
              c.y0 + 2 * pad + kGlyphHeight * c.scale};
    }
  }
}

FOVEA_HD PixelBox clip_box(PixelBox b, int width, int height) {
  return {b.x_begin < 0 ? 0 : b.x_begin, b.y_begin < 0 ? 0 : b.y_begin, b.x_end > width ? width : b.x_end,
          b.y_end > height ? height : b.y_end};
}

enum class Paint { kNone, kColor, kBackground };

// Whether the line covers pixel (x, y): squared distance from the pixel center to the segment at
// most (thickness / 2)^2, compared as 4 d^2 L^2 <= t^2 L^2 in 64-bit integers.
FOVEA_HD bool line_covers(const DrawCommand& c, int x, int y) {
  const long long dx = c.x1 - c.x0;
  const long long dy = c.y1 - c.y0;
  const long long px = x - c.x0;
  const long long py = y - c.y0;
  const long long t2 = static_cast<long long>(c.thickness) * c.thickness;
  const long long length2 = dx * dx + dy * dy;
  const long long dot = px * dx + py * dy;
  if (length2 == 0 || dot <= 0) return 4 * (px * px + py * py) <= t2;
  if (dot >= length2) {
    const long long qx = x - c.x1;
    const long long qy = y - c.y1;
    return 4 * (qx * qx + qy * qy) <= t2;
  }
  const long long cross = px * dy - py * dx;
  return 4 * cross * cross <= t2 * length2;
}

// What command `c` paints at pixel (x, y); `font` is a kBitmapFont table.
FOVEA_HD Paint command_paint(const DrawCommand& c, const std::uint8_t* font, int x, int y) {
  const PixelBox b = command_box(c);
  if (x < b.x_begin || x >= b.x_end || y < b.y_begin || y >= b.y_end) return Paint::kNone;
  switch (c.kind) {
    case DrawKind::kRectangle: {
      if (c.thickness <= 0) return Paint::kColor;
      const bool border = x < b.x_begin + c.thickness || x >= b.x_end - c.thickness ||
                          y < b.y_begin + c.thickness || y >= b.y_end - c.thickness;
      return border ? Paint::kColor : Paint::kNone;
    }
    case DrawKind::kLine: return line_covers(c, x, y) ? Paint::kColor : Paint::kNone;
    default: {
      const int tx = x - b.x_begin - c.scale;
      const int ty = y - b.y_begin - c.scale;
      const int text_width = text_length(c) * kGlyphWidth * c.scale;
      const bool in_text = tx >= 0 && tx < text_width && ty >= 0 && ty < kGlyphHeight * c.scale;
      if (in_text) {
        const int cell = tx / (kGlyphWidth * c.scale);
        if (glyph_ink(font, glyph_index(c.text[cell]), (tx / c.scale) % kGlyphWidth, ty / c.scale)) {
          return Paint::kColor;
        }
      }
      return c.background_alpha > 0.0f ? Paint::kBackground : Paint::kNone;
    }
  }
}

// The three channel values of an RGB color in a plane's sample order: R,G,B / B,G,R / Y,U,V.
struct PaintColor {
  float v[3];
};
FOVEA_HD PaintColor paint_color(const std::uint8_t rgb[3], PixelFormat format, const DrawParams& params) {
  if (format == PixelFormat::kBGR8) return {{float(rgb[2]), float(rgb[1]), float(rgb[0])}};
  if (format == PixelFormat::kNV12) {
    const Yuv yuv = rgb_to_yuv(rgb[0], rgb[1], rgb[2], params.matrix, params.range);
    return {{yuv.y, yuv.u, yuv.v}};
  }
  return {{float(rgb[0]), float(rgb[1]), float(rgb[2])}};
}

FOVEA_HD std::uint8_t paint_sample(std::uint8_t pixel, float color, float alpha) {
  return to_u8((1.0f - alpha) * static_cast<float>(pixel) + alpha * color);
}

}  // namespace detail

}  // namespace fovea::image
