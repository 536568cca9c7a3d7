// The multi-source mosaic (DeepStream's nvmultistreamtiler): many sources' NV12 frames resampled
// into their tiles of one NV12 canvas, which the flow then draws on and encodes as one video.
//
// Layout (tile_layout, fit_in_tile), in canvas pixels, every coordinate and size even (4:2:0):
//   - `columns` columns (0: the smallest square grid, ceil(sqrt(sources))) and
//     ceil(sources / columns) rows; tiles of floor(width / columns) x floor(height / rows) pixels,
//     each rounded down to even, packed from the canvas's top-left corner (the remainder at the right
//     and bottom stays as it is); source i takes column i mod columns, row i / columns.
//   - a frame keeps its aspect ratio inside its tile: the tighter axis fills the tile, the other is
//     the exact scaled extent rounded to the nearest even number (halves up, at least 2), and the
//     frame is centered, its offset rounded down to even.
// Op (run_tile_*): frame i bilinear-resampled into destinations[i] on the canvas.
//
// | frames | canvas | destination                   | resampling                                      |
// |--------|--------|-------------------------------|-------------------------------------------------|
// | kNV12  | kNV12  | even x, y, width, height;     | Y from Y, interleaved UV from UV (at half the   |
// |        |        | inside the canvas; disjoint   | destination), OpenCV bilinear (resize_math.h)   |
//
// Only the destination rectangles are written: the canvas persists across batches, so a source
// missing from a batch keeps its last tile, and letterbox bars keep what fill_canvas_* put there
// (fill a tile again through roi_subview when a source's frame size changes). The CUDA run's
// samples match the CPU reference's within one step: both are resize_pixel, whose float
// multiply-adds the device may fuse (kU8RoundingTolerance).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"
#include "image/resize_math.h"

namespace fovea::image {

struct TileGrid {
  int columns = 0;
  int rows = 0;
  std::vector<Roi> tiles;  // one per source
};

// Errors: no sources, a canvas without pixels or of odd size, negative columns, tiles under 2x2.
Result<TileGrid> tile_layout(int sources, int canvas_width, int canvas_height, int columns = 0);
// Where a frame_width x frame_height frame (positive) lands inside `tile` (even, at least 2x2).
Roi fit_in_tile(const Roi& tile, int frame_width, int frame_height);

// NV12 sample values; the default is black in limited range (full-range black is {0, 128, 128}).
struct Nv12Color {
  std::uint8_t y = 16;
  std::uint8_t u = 128;
  std::uint8_t v = 128;
};

// Validates a run: NV12 frames without ROIs and an NV12 canvas in the same kind of memory, one
// destination per frame as the table says. The runs need no workspace.
Status plan_tile(const ImageBatch& frames, std::span<const Roi> destinations, const ImageView& canvas);
Status run_tile_cpu(const ImageBatch& frames, std::span<const Roi> destinations, const ImageView& canvas);
// Device memory, asynchronous on `stream`.
Status run_tile_cuda(cudaStream_t stream, const ImageBatch& frames, std::span<const Roi> destinations,
                     const ImageView& canvas);

// Every sample of an NV12 canvas (or of a tile of it, through roi_subview) set to `color`.
Status fill_canvas_cpu(const ImageView& canvas, Nv12Color color = {});
Status fill_canvas_cuda(cudaStream_t stream, const ImageView& canvas, Nv12Color color = {});

namespace detail {

// An NV12 canvas of positive even size.
Status check_canvas(const ImageView& canvas);

// One plane of one tile (or of a fill): the resize arguments of that plane and its sample layout.
// A fill is a job whose placement is empty, so every sample takes the pad value.
struct TileJob {
  ResizeImageArgs args;
  int channels;  // 1: Y, 2: interleaved UV
  float pad[2];
};

// Plane 0 (Y) or 1 (UV) of frame `frame` resampled into `destination` of `canvas` (checked).
TileJob tile_job(const ImageView& frame, const Roi& destination, const ImageView& canvas, int plane);
TileJob fill_job(const ImageView& canvas, int plane, Nv12Color color);

FOVEA_HD void tile_sample(const TileJob& job, int x, int y) {
  if (job.channels == 1) {
    resize_pixel<PackedU8Pixels<1>>(job.args, job.pad, x, y);
  } else {
    resize_pixel<PackedU8Pixels<2>>(job.args, job.pad, x, y);
  }
}

}  // namespace detail

}  // namespace fovea::image
