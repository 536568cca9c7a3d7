#include <fmt/format.h>

#include "image/pixelate.h"

namespace fovea::image {

namespace {

Status check_rect(const PixelateRect& r, int index, int batch_size) {
  auto bad = [&](const std::string& why) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("pixelate rectangle {}: {}", index, why));
  };
  if (r.image < 0 || r.image >= batch_size) {
    return bad(fmt::format("image {} is outside the batch of {}", r.image, batch_size));
  }
  for (int v : {r.x, r.y, r.width, r.height}) {
    if (v < -kMaxPixelateCoordinate || v > kMaxPixelateCoordinate) {
      return bad(fmt::format("coordinate or size {} is beyond +-{}", v, kMaxPixelateCoordinate));
    }
  }
  return Status::ok();
}

// The samples a rectangle reads and writes, in pixels: its clipped area, widened to whole 2x2
// blocks on NV12 (their chroma sample is shared by the block's pixels).
detail::CellSpan touched_pixels(const ImageView& view, const PixelateRect& r) {
  const detail::CellGrid g = detail::cell_grid(r, 1, view.width, view.height);
  if (g.cols == 0) return {0, 0, 0, 0};
  if (view.format != PixelFormat::kNV12) return {g.x0, g.y0, g.x1, g.y1};
  return {g.x0 & ~1, g.y0 & ~1, (g.x1 + 1) & ~1, (g.y1 + 1) & ~1};
}

// Every sample of `span` (channels interleaved) becomes its channel's rounded mean over the span.
void pixelate_span(std::uint8_t* plane, std::size_t pitch, const detail::CellSpan& span, int channels) {
  if (span.count() <= 0) return;
  unsigned sums[3] = {};
  for (int y = span.y_begin; y < span.y_end; ++y) {
    const std::uint8_t* row = plane + y * pitch;
    for (int x = span.x_begin; x < span.x_end; ++x) {
      for (int c = 0; c < channels; ++c) sums[c] += row[x * channels + c];
    }
  }
  std::uint8_t means[3];
  for (int c = 0; c < channels; ++c) means[c] = detail::rounded_mean(sums[c], span.count());
  for (int y = span.y_begin; y < span.y_end; ++y) {
    std::uint8_t* row = plane + y * pitch;
    for (int x = span.x_begin; x < span.x_end; ++x) {
      for (int c = 0; c < channels; ++c) row[x * channels + c] = means[c];
    }
  }
}

void pixelate_rect(const ImageView& view, const PixelateRect& r, int cell) {
  const detail::CellGrid g = detail::cell_grid(r, cell, view.width, view.height);
  const bool nv12 = view.format == PixelFormat::kNV12;
  auto* plane0 = static_cast<std::uint8_t*>(view.planes[0].data);
  for (int i = 0; i < g.cols * g.rows; ++i) {
    const detail::CellSpan pixels = detail::cell_pixels(g, i);
    pixelate_span(plane0, view.planes[0].pitch, pixels, nv12 ? 1 : 3);
    if (nv12) {
      pixelate_span(static_cast<std::uint8_t*>(view.planes[1].data), view.planes[1].pitch,
                    detail::cell_chroma(g, pixels), 2);
    }
  }
}

}  // namespace

namespace detail {

Status check_pixelate(const ImageBatch& images, std::span<const PixelateRect> rects,
                      const PixelateParams& params) {
  FOVEA_TRY(
      check_batch(images, {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kNV12}, "pixelate image"));
  if (!images.rois.empty()) {
    return make_error(StatusCode::kInvalidArgument,
                      "pixelate: rectangles use image coordinates; ROIs are not supported");
  }
  if (params.cell < 1 || params.cell > kMaxPixelateCell) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("pixelate: cell size {} is outside 1..{}", params.cell, kMaxPixelateCell));
  }
  for (std::size_t i = 0; i < rects.size(); ++i) {
    FOVEA_TRY(check_rect(rects[i], static_cast<int>(i), images.size()));
  }
  return Status::ok();
}

bool pixelate_rects_conflict(const ImageBatch& images, const PixelateRect& a, const PixelateRect& b) {
  if (a.image != b.image) return false;
  const ImageView& view = images.images[static_cast<std::size_t>(a.image)];
  const CellSpan ta = touched_pixels(view, a);
  const CellSpan tb = touched_pixels(view, b);
  return ta.count() > 0 && tb.count() > 0 && ta.x_begin < tb.x_end && tb.x_begin < ta.x_end &&
         ta.y_begin < tb.y_end && tb.y_begin < ta.y_end;
}

}  // namespace detail

Result<PixelatePlan> plan_pixelate(const ImageBatch& images, std::span<const PixelateRect> rects,
                                   const PixelateParams& params) {
  FOVEA_TRY(detail::check_pixelate(images, rects, params));
  return PixelatePlan{rects.size_bytes()};
}

Status run_pixelate_cpu(const ImageBatch& images, std::span<const PixelateRect> rects,
                        const PixelateParams& params) {
  FOVEA_TRY(detail::check_pixelate(images, rects, params));
  if (batch_on_device(images)) {
    return make_error(StatusCode::kInvalidArgument, "run_pixelate_cpu: the images are in device memory");
  }
  for (const PixelateRect& r : rects)
    pixelate_rect(images.images[static_cast<std::size_t>(r.image)], r, params.cell);
  return Status::ok();
}

}  // namespace fovea::image
