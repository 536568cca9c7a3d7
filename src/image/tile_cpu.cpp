#include <algorithm>

#include <fmt/format.h>

#include "image/tile.h"

namespace fovea::image {

namespace {

// A tile layout of up to this many sources is far beyond any mosaic anyone watches, and keeps
// columns * rows inside an int.
constexpr int kMaxTileSources = 1 << 16;

int square_grid_columns(int sources) {
  int columns = 1;
  while (columns * columns < sources) ++columns;
  return columns;
}

// The exact extent `length * target / reference` rounded to the nearest even number (halves up),
// between 2 and `limit`.
int even_scaled(int length, int target, int reference, int limit) {
  const long long half = (static_cast<long long>(length) * target + reference) / (2LL * reference);
  return static_cast<int>(std::clamp(2 * half, 2LL, static_cast<long long>(limit)));
}

bool even_roi(const Roi& r) {
  return r.x % 2 == 0 && r.y % 2 == 0 && r.width % 2 == 0 && r.height % 2 == 0;
}

bool overlap(const Roi& a, const Roi& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

Status check_destinations(std::span<const Roi> destinations, const ImageView& canvas) {
  for (std::size_t i = 0; i < destinations.size(); ++i) {
    const Roi& d = destinations[i];
    if (d.width < 2 || d.height < 2 || d.x < 0 || d.y < 0 || d.x > canvas.width - d.width ||
        d.y > canvas.height - d.height || !even_roi(d)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("tile destination {}: {}x{}+{}+{} is not an even rectangle of at least "
                                    "2x2 inside the {}x{} canvas",
                                    i, d.width, d.height, d.x, d.y, canvas.width, canvas.height));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (overlap(d, destinations[j])) {
        // Overlapping tiles would take whichever write lands last on the device.
        return make_error(StatusCode::kInvalidArgument,
                          fmt::format("tile destinations {} and {} overlap", j, i));
      }
    }
  }
  return Status::ok();
}

void run_job_cpu(const detail::TileJob& job) {
  for (int y = 0; y < job.args.dst_height; ++y) {
    for (int x = 0; x < job.args.dst_width; ++x) detail::tile_sample(job, x, y);
  }
}

}  // namespace

Result<TileGrid> tile_layout(int sources, int canvas_width, int canvas_height, int columns) {
  if (sources < 1 || sources > kMaxTileSources) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("tile layout: {} sources (1..{})", sources, kMaxTileSources));
  }
  if (canvas_width <= 0 || canvas_height <= 0 || canvas_width % 2 != 0 || canvas_height % 2 != 0) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("tile layout: the canvas is {}x{}; NV12 needs a positive even size",
                                  canvas_width, canvas_height));
  }
  if (columns < 0 || columns > kMaxTileSources) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("tile layout: {} columns", columns));
  }
  TileGrid grid;
  grid.columns = columns > 0 ? columns : square_grid_columns(sources);
  grid.rows = (sources + grid.columns - 1) / grid.columns;
  const int tile_width = canvas_width / grid.columns / 2 * 2;
  const int tile_height = canvas_height / grid.rows / 2 * 2;
  if (tile_width < 2 || tile_height < 2) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("tile layout: a {}x{} grid on a {}x{} canvas leaves tiles under 2x2 pixels",
                                  grid.columns, grid.rows, canvas_width, canvas_height));
  }
  for (int i = 0; i < sources; ++i) {
    grid.tiles.push_back(
        Roi{(i % grid.columns) * tile_width, (i / grid.columns) * tile_height, tile_width, tile_height});
  }
  return grid;
}

Roi fit_in_tile(const Roi& tile, int frame_width, int frame_height) {
  Roi placed = tile;
  // The frame is relatively wider than the tile when fw / fh >= tw / th: its width fills the tile.
  if (static_cast<long long>(frame_width) * tile.height >=
      static_cast<long long>(frame_height) * tile.width) {
    placed.height = even_scaled(frame_height, tile.width, frame_width, tile.height);
  } else {
    placed.width = even_scaled(frame_width, tile.height, frame_height, tile.width);
  }
  placed.x += (tile.width - placed.width) / 4 * 2;
  placed.y += (tile.height - placed.height) / 4 * 2;
  return placed;
}

namespace detail {

Status check_canvas(const ImageView& canvas) {
  return check_batch(ImageBatch{{canvas}, {}}, {PixelFormat::kNV12}, "tile canvas");
}

TileJob tile_job(const ImageView& frame, const Roi& destination, const ImageView& canvas, int plane) {
  const int sub = plane == 0 ? 1 : 2;  // chroma is subsampled 2x2; UV pairs are 2 bytes
  TileJob job{};
  job.channels = plane == 0 ? 1 : 2;
  ResizeImageArgs& a = job.args;
  a.src[0] = static_cast<const unsigned char*>(frame.planes[plane].data);
  a.src_pitch[0] = static_cast<long long>(frame.planes[plane].pitch);
  // Luma's x in bytes is x; chroma's is (x / 2) pairs of 2 bytes, x again.
  a.dst[0] = static_cast<unsigned char*>(canvas.planes[plane].data) +
             static_cast<std::size_t>(destination.y / sub) * canvas.planes[plane].pitch + destination.x;
  a.dst_pitch[0] = static_cast<long long>(canvas.planes[plane].pitch);
  a.dst_width = destination.width / sub;
  a.dst_height = destination.height / sub;
  a.x = make_axis_map(ResizeFilter::kBilinear, ResizeCompat::kOpenCv, frame.width / sub, a.dst_width);
  a.y = make_axis_map(ResizeFilter::kBilinear, ResizeCompat::kOpenCv, frame.height / sub, a.dst_height);
  return job;
}

TileJob fill_job(const ImageView& canvas, int plane, Nv12Color color) {
  const int sub = plane == 0 ? 1 : 2;
  TileJob job{};
  job.channels = plane == 0 ? 1 : 2;
  job.pad[0] = plane == 0 ? color.y : color.u;
  job.pad[1] = color.v;
  ResizeImageArgs& a = job.args;
  a.dst[0] = static_cast<unsigned char*>(canvas.planes[plane].data);
  a.dst_pitch[0] = static_cast<long long>(canvas.planes[plane].pitch);
  a.dst_width = canvas.width / sub;
  a.dst_height = canvas.height / sub;
  // An empty placement (x.dst_size = y.dst_size = 0): resize_pixel writes the pad value everywhere.
  a.x = AxisMap{ResizeFilter::kNearest, ResizeCompat::kOpenCv, 1, 0, 0.0f, 0.0f, 0.0f};
  a.y = a.x;
  return job;
}

}  // namespace detail

Status plan_tile(const ImageBatch& frames, std::span<const Roi> destinations, const ImageView& canvas) {
  FOVEA_TRY(check_batch(frames, {PixelFormat::kNV12}, "tile frame"));
  if (!frames.rois.empty()) {
    return make_error(StatusCode::kInvalidArgument, "tile: frames are placed whole; ROIs are not supported");
  }
  FOVEA_TRY(detail::check_canvas(canvas));
  if (canvas.memory != frames.images[0].memory) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("tile: the canvas is in {} memory, the frames in {} memory",
                    memory_kind_name(canvas.memory), memory_kind_name(frames.images[0].memory)));
  }
  if (destinations.size() != frames.images.size()) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("tile: {} destinations for {} frames",
                                                                destinations.size(), frames.images.size()));
  }
  return check_destinations(destinations, canvas);
}

Status run_tile_cpu(const ImageBatch& frames, std::span<const Roi> destinations, const ImageView& canvas) {
  FOVEA_TRY(plan_tile(frames, destinations, canvas));
  if (batch_on_device(frames)) {
    return make_error(StatusCode::kInvalidArgument, "run_tile_cpu: the images are in device memory");
  }
  for (int i = 0; i < frames.size(); ++i) {
    for (int plane = 0; plane < 2; ++plane) {
      run_job_cpu(detail::tile_job(frames.images[static_cast<std::size_t>(i)],
                                   destinations[static_cast<std::size_t>(i)], canvas, plane));
    }
  }
  return Status::ok();
}

Status fill_canvas_cpu(const ImageView& canvas, Nv12Color color) {
  FOVEA_TRY(detail::check_canvas(canvas));
  if (canvas.memory == MemoryKind::kDevice) {
    return make_error(StatusCode::kInvalidArgument, "fill_canvas_cpu: the canvas is in device memory");
  }
  for (int plane = 0; plane < 2; ++plane) run_job_cpu(detail::fill_job(canvas, plane, color));
  return Status::ok();
}

}  // namespace fovea::image
