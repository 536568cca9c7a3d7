#include "image/batch.h"

#include <algorithm>

#include <fmt/format.h>

namespace fovea::image {

Roi ImageBatch::roi(int i) const {
  const ImageView& view = images[static_cast<std::size_t>(i)];
  if (rois.empty() ||
      (rois[static_cast<std::size_t>(i)].width == 0 && rois[static_cast<std::size_t>(i)].height == 0)) {
    return Roi{0, 0, view.width, view.height};
  }
  return rois[static_cast<std::size_t>(i)];
}

static bool subsampled_420(PixelFormat format) {
  return format == PixelFormat::kNV12 || format == PixelFormat::kP016 || format == PixelFormat::kYUV420P;
}

Status check_batch(const ImageBatch& batch, std::initializer_list<PixelFormat> formats, const char* what) {
  if (batch.images.empty()) {
    return make_error(StatusCode::kInvalidArgument, what, ": the batch is empty");
  }
  if (!batch.rois.empty() && batch.rois.size() != batch.images.size()) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("{}: {} ROIs for {} images", what, batch.rois.size(), batch.images.size()));
  }
  const MemoryKind memory = batch.images[0].memory;
  for (int i = 0; i < batch.size(); ++i) {
    const ImageView& view = batch.images[static_cast<std::size_t>(i)];
    if (std::find(formats.begin(), formats.end(), view.format) == formats.end()) {
      return make_error(StatusCode::kUnsupported, fmt::format("{} image {}: format {} is not supported here",
                                                              what, i, pixel_format_name(view.format)));
    }
    if (view.memory != memory) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("{} image {}: {} memory in a batch of {} memory", what, i,
                                    memory_kind_name(view.memory), memory_kind_name(memory)));
    }
    if (view.width <= 0 || view.height <= 0) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("{} image {}: size {}x{}", what, i, view.width, view.height));
    }
    if (subsampled_420(view.format) && (view.width % 2 != 0 || view.height % 2 != 0)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("{} image {}: {}x{} is odd, but {} needs even sizes (4:2:0 chroma)", what,
                                    i, view.width, view.height, pixel_format_name(view.format)));
    }
    const std::size_t sample = view.format == PixelFormat::kP016 || view.format == PixelFormat::kPlanarF16 ? 2
                               : view.format == PixelFormat::kPlanarF32                                    ? 4
                                                                        : 1;
    for (int p = 0; p < view.num_planes; ++p) {
      if (view.planes[p].pitch % sample != 0 ||
          reinterpret_cast<std::uintptr_t>(view.planes[p].data) % sample != 0) {
        return make_error(
            StatusCode::kInvalidArgument,
            fmt::format("{} image {}: plane {} is not aligned to its {}-byte samples (pitch {})", what, i, p,
                        sample, view.planes[p].pitch));
      }
    }
    const Roi r = batch.roi(i);
    if (r.width <= 0 || r.height <= 0 || r.x < 0 || r.y < 0 || r.x + r.width > view.width ||
        r.y + r.height > view.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("{} image {}: ROI {}x{}+{}+{} is empty or outside the {}x{} image", what,
                                    i, r.width, r.height, r.x, r.y, view.width, view.height));
    }
  }
  return Status::ok();
}

Status check_same_batch_size(const ImageBatch& a, const ImageBatch& b, const char* what_a,
                             const char* what_b) {
  if (a.size() != b.size()) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("batch sizes differ: {} has {} images, {} has {}", what_a, a.size(), what_b, b.size()));
  }
  return Status::ok();
}

ImageView roi_subview(const ImageView& view, const Roi& roi) {
  ImageView sub = view;
  sub.width = roi.width;
  sub.height = roi.height;
  const bool chroma_420 = view.format == PixelFormat::kNV12 || view.format == PixelFormat::kP016 ||
                          view.format == PixelFormat::kYUV420P;
  for (int p = 0; p < view.num_planes; ++p) {
    const bool subsampled = chroma_420 && p > 0;
    const std::size_t y = subsampled ? roi.y / 2 : roi.y;
    // NV12/P016 chroma interleaves U and V, so a pixel column pair spans one luma-sized step.
    const std::size_t x_bytes = subsampled && view.format == PixelFormat::kYUV420P
                                    ? static_cast<std::size_t>(roi.x / 2)
                                    : static_cast<std::size_t>(roi.x) * pixel_bytes(view.format);
    sub.planes[p].data = static_cast<std::uint8_t*>(view.planes[p].data) + y * view.planes[p].pitch + x_bytes;
  }
  return sub;
}

bool batch_on_device(const ImageBatch& batch) {
  return !batch.images.empty() && batch.images[0].memory == MemoryKind::kDevice;
}

}  // namespace fovea::image
