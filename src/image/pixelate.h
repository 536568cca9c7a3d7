// Privacy masking: rectangles pixelated in place (DeepStream's blur-on-class, done as pixelation:
// a cell's mean keeps no detail to recover, and it costs one read and one write per pixel).
//
// | image format | what each cell takes                                                    |
// |--------------|-------------------------------------------------------------------------|
// | kRGB8, kBGR8 | each channel: the mean of that channel over the cell's pixels           |
// | kNV12        | Y: the mean over the cell's pixels; U and V: each the mean over the     |
// |              | cell's chroma samples (below)                                           |
//
// Each PixelateRect is clipped to its image (empty ones, before or after clipping, change
// nothing). Its cells are `cell` x `cell` pixels on a grid anchored at the rectangle's own
// (unclipped) top-left corner, so a box sliding off the frame keeps its grid; cells at the clipped
// edges are smaller. Every sample of a cell becomes floor(sum / n + 1/2) (the mean rounded to
// nearest, halves up), in integers, so the CPU and CUDA runs agree bit for bit.
// NV12 chroma: a rectangle whose clipped pixels are [x0, x1) x [y0, y1) covers the chroma samples
// [floor(x0/2), ceil(x1/2)) x [floor(y0/2), ceil(y1/2)) (every sample whose 2x2 pixel block it
// touches); chroma sample (cx, cy) belongs to the cell holding pixel (max(2cx, x0), max(2cy, y0)),
// its block's top-left pixel pulled into the rectangle. With an even rectangle and cell, a cell's
// chroma is exactly its 2x2-subsampled area; cells that own no chroma sample (1-pixel cells at odd
// columns) leave chroma alone.
// Rectangles apply in list order: one that overlaps an earlier one reads the pixels that one
// wrote. Coordinates are image pixels (ROIs are not used).
#pragma once

#include <cstddef>
#include <span>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"

namespace fovea::image {

// Trivially copyable: the CUDA run copies the list into device memory as it is.
struct PixelateRect {
  int image = 0;  // index into the batch
  int x = 0;
  int y = 0;
  int width = 0;  // <= 0: empty
  int height = 0;
};

// 256 x 256 cells keep a cell's sum (at most 65536 * 255) far inside 32 bits.
inline constexpr int kMaxPixelateCell = 256;
// Rectangles are limited so that x + width and the cell arithmetic fit an int with room to spare.
inline constexpr int kMaxPixelateCoordinate = 1 << 24;

struct PixelateParams {
  int cell = 16;  // cell side in pixels, 1..kMaxPixelateCell
};

struct PixelatePlan {
  // Device bytes run_pixelate_cuda needs for the rectangle list.
  std::size_t buffer_bytes = 0;
};

Result<PixelatePlan> plan_pixelate(const ImageBatch& images, std::span<const PixelateRect> rects,
                                   const PixelateParams& params);
Status run_pixelate_cpu(const ImageBatch& images, std::span<const PixelateRect> rects,
                        const PixelateParams& params);
// Copies `rects` into `d_buffer` (plan.buffer_bytes of device memory) on `stream` (from pageable
// memory CUDA stages the copy, so `rects` may be freed on return), then pixelates, one launch per run of
// consecutive rectangles that touch no common sample (usually one). `d_buffer` must stay untouched until the
// stream has run the op.
Status run_pixelate_cuda(cudaStream_t stream, const ImageBatch& images, std::span<const PixelateRect> rects,
                         const PixelateParams& params, void* d_buffer, std::size_t buffer_bytes);

namespace detail {

Status check_pixelate(const ImageBatch& images, std::span<const PixelateRect> rects,
                      const PixelateParams& params);
// Whether two rectangles (already checked) read or write a common sample of their image.
bool pixelate_rects_conflict(const ImageBatch& images, const PixelateRect& a, const PixelateRect& b);

// A rectangle's cell grid on its image, after clipping.
struct CellGrid {
  int x0, y0, x1, y1;        // the clipped rectangle [x0, x1) x [y0, y1); empty: no cells
  int origin_x, origin_y;    // the unclipped top-left corner, where the grid is anchored
  int first_col, first_row;  // the grid cell holding (x0, y0)
  int cols, rows;            // cells covering the clipped rectangle
  int cell;
};

FOVEA_HD CellGrid cell_grid(const PixelateRect& r, int cell, int width, int height) {
  CellGrid g{};
  g.x0 = r.x < 0 ? 0 : r.x;
  g.y0 = r.y < 0 ? 0 : r.y;
  g.x1 = r.x + r.width > width ? width : r.x + r.width;
  g.y1 = r.y + r.height > height ? height : r.y + r.height;
  g.origin_x = r.x;
  g.origin_y = r.y;
  g.cell = cell;
  if (g.x0 >= g.x1 || g.y0 >= g.y1) return g;  // cols = rows = 0
  g.first_col = (g.x0 - r.x) / cell;
  g.first_row = (g.y0 - r.y) / cell;
  g.cols = (g.x1 - 1 - r.x) / cell - g.first_col + 1;
  g.rows = (g.y1 - 1 - r.y) / cell - g.first_row + 1;
  return g;
}

// A cell's samples on one plane: [x_begin, x_end) x [y_begin, y_end) in that plane's samples.
struct CellSpan {
  int x_begin, y_begin, x_end, y_end;
  FOVEA_HD int count() const { return (x_end - x_begin) * (y_end - y_begin); }
};

// The pixels of cell `index` (row-major over the grid's cols x rows).
FOVEA_HD CellSpan cell_pixels(const CellGrid& g, int index) {
  const int col = g.first_col + index % g.cols;
  const int row = g.first_row + index / g.cols;
  const int x = g.origin_x + col * g.cell;
  const int y = g.origin_y + row * g.cell;
  return {x > g.x0 ? x : g.x0, y > g.y0 ? y : g.y0, x + g.cell < g.x1 ? x + g.cell : g.x1,
          y + g.cell < g.y1 ? y + g.cell : g.y1};
}

// The NV12 chroma samples of the cell with pixels `p` (see the header comment): the cell's first
// sample column is ceil(begin / 2), except floor(x0 / 2) for the rectangle's first column; it ends
// at ceil(end / 2). The same for rows.
FOVEA_HD CellSpan cell_chroma(const CellGrid& g, const CellSpan& p) {
  return {p.x_begin == g.x0 ? p.x_begin / 2 : (p.x_begin + 1) / 2,
          p.y_begin == g.y0 ? p.y_begin / 2 : (p.y_begin + 1) / 2, (p.x_end + 1) / 2, (p.y_end + 1) / 2};
}

// The mean of n samples summing to `sum`, rounded to nearest with halves up: floor((2 sum + n) / 2n).
FOVEA_HD unsigned char rounded_mean(unsigned sum, unsigned n) {
  return static_cast<unsigned char>((2u * sum + n) / (2u * n));
}

}  // namespace detail

}  // namespace fovea::image
