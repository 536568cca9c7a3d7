#include "pipeline/display_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "core/log.h"
#include "image/osd_layout.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {

namespace {

constexpr const char* kDrawBuffer = "osd commands";
constexpr const char* kPixelateBuffer = "osd pixelate";
// Per object: border, fill and label.
constexpr std::size_t kCommandsPerObject = 3;
// Pixelation cells: coarse enough that a face or a plate keeps no detail at 1080p.
constexpr int kPrivacyCell = 16;

bool blurred(const OsdConfig& config, int class_id) {
  return std::find(config.blur_classes.begin(), config.blur_classes.end(), class_id) !=
         config.blur_classes.end();
}

// The label of an object a secondary model labelled: its first secondary label (the model's name
// and class id without a label file) and score, then the primary name (empty: "class <id>"), e.g.
// "red 0.98 | car"; the OSD adds the track id before it and the primary score after it, as for
// any label: "#3 red 0.98 | car 0.91". Scores follow the OSD's `scores` switch.
void compose_label(const ObjectResult& object, std::string_view primary, bool scores, std::string& out) {
  const SecondaryLabel& first = object.secondary.front();
  out.clear();
  auto at = std::back_inserter(out);
  if (first.label.empty()) {
    fmt::format_to(at, "{} {}", first.model, first.class_id);
  } else {
    out += first.label;
  }
  if (scores && std::isfinite(first.score)) fmt::format_to(at, " {:.2f}", first.score);
  if (primary.empty()) {
    fmt::format_to(at, " | class {}", object.class_id);
  } else {
    fmt::format_to(at, " | {}", primary);
  }
}

#if defined(FOVEA_HAVE_CUDA)
// Both planes of an NV12 image (chroma at half height), same size on both sides.
Status copy_nv12(const ImageView& from, const ImageView& to, cudaMemcpyKind kind, cudaStream_t stream) {
  for (int p = 0; p < 2; ++p) {
    const int rows = p == 0 ? from.height : from.height / 2;
    FOVEA_CUDA_TRY(cudaMemcpy2DAsync(to.planes[p].data, to.planes[p].pitch, from.planes[p].data,
                                     from.planes[p].pitch, static_cast<std::size_t>(from.width),
                                     static_cast<std::size_t>(rows), kind, stream));
  }
  return Status::ok();
}
#endif

}  // namespace

OsdOp::OsdOp(OsdConfig config, std::vector<std::string> labels, int max_objects, const FlowShape& shape)
    : config_(std::move(config)), labels_(std::move(labels)), max_objects_(max_objects), shape_(shape) {
  max_commands_ = static_cast<std::size_t>(shape_.batch_size) * static_cast<std::size_t>(max_objects_) *
                  kCommandsPerObject;
  draw_bytes_ = image::detail::kDrawFontBytes + max_commands_ * sizeof(image::DrawCommand);
  pixelate_bytes_ = static_cast<std::size_t>(shape_.batch_size) * sizeof(ImageView) +
                    static_cast<std::size_t>(shape_.batch_size) * static_cast<std::size_t>(max_objects_) *
                        sizeof(image::PixelateRect);
  commands_.reserve(max_commands_);
}

Status OsdOp::declare(BufferPlan& plan) {
  if (!shape_.gpu) return Status::ok();
  FOVEA_TRY(plan.bytes(kDrawBuffer, {.bytes = draw_bytes_}));
  return plan.bytes(kPixelateBuffer, {.bytes = pixelate_bytes_});
}

image::ImageBatch OsdOp::frames(const FrameBatch& batch) const {
  image::ImageBatch images;
  for (std::size_t i = 0; i < batch.size(); ++i) images.images.push_back(batch.image(i));
  return images;
}

Status OsdOp::lay_out(const FrameBatch& batch) {
  commands_.clear();
  rects_.clear();
  std::vector<image::OsdObject> drawn;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    drawn.clear();
    const std::vector<ObjectResult>& objects = batch.results[i].objects;
    // A tracker may carry more objects than the detector's top_k; the best ones are drawn.
    const std::size_t shown = std::min(objects.size(), static_cast<std::size_t>(max_objects_));
    // Sized before the views into it are taken: they must not move while `drawn` holds them.
    if (label_texts_.size() < shown) label_texts_.resize(shown);
    for (std::size_t k = 0; k < shown; ++k) {
      const ObjectResult& object = objects[k];
      if (blurred(config_, object.class_id)) {
        const Box& b = object.box;
        if (!std::isfinite(b.x1) || !std::isfinite(b.y1) || !std::isfinite(b.x2) || !std::isfinite(b.y2))
          continue;
        // Outward to whole pixels: every pixel the box touches is hidden.
        const int x0 = static_cast<int>(std::floor(b.x1)), y0 = static_cast<int>(std::floor(b.y1));
        rects_.push_back({.image = static_cast<int>(i),
                          .x = x0,
                          .y = y0,
                          .width = static_cast<int>(std::ceil(b.x2)) - x0,
                          .height = static_cast<int>(std::ceil(b.y2)) - y0});
        continue;
      }
      const std::size_t label = static_cast<std::size_t>(object.class_id);
      std::string_view text = label < labels_.size() ? std::string_view(labels_[label]) : std::string_view();
      if (!object.secondary.empty()) {
        compose_label(object, text, config_.scores, label_texts_[k]);
        text = label_texts_[k];
      }
      drawn.push_back({.box = object.box,
                       .class_id = object.class_id,
                       .score = object.score,
                       .track_id = static_cast<int>(object.track_id),
                       .label = text});
    }
    const image::OsdStyle style{.thickness = config_.thickness,
                                .fill_alpha = config_.fill_alpha,
                                .show_labels = config_.labels,
                                .show_scores = config_.scores,
                                .text_scale = config_.text_scale,
                                .image = static_cast<int>(i)};
    FOVEA_TRY(image::append_osd_commands(drawn, style, shape_.frame_width, shape_.frame_height, commands_));
  }
  return Status::ok();
}

Status OsdOp::run_cpu(FrameBatch& batch) {
  FOVEA_TRY(lay_out(batch));
  const image::ImageBatch images = frames(batch);
  FOVEA_TRY(image::run_pixelate_cpu(images, rects_, {.cell = kPrivacyCell}));
  return image::run_draw_cpu(images, commands_, {});
}

Status OsdOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  FOVEA_TRY(lay_out(batch));
  const image::ImageBatch images = frames(batch);
  FOVEA_TRY(image::run_pixelate_cuda(stream, images, rects_, {.cell = kPrivacyCell},
                                     batch.slot->bytes(kPixelateBuffer), pixelate_bytes_));
  return image::run_draw_cuda(stream, images, commands_, {}, batch.slot->bytes(kDrawBuffer), draw_bytes_);
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "osd on the GPU: this fovea was built without CUDA");
#endif
}

Result<std::unique_ptr<MosaicOp>> MosaicOp::create(const MosaicConfig& config, const FlowShape& shape) {
  std::unique_ptr<MosaicOp> op(new MosaicOp(config, shape));
  FOVEA_ASSIGN_OR_RETURN(const image::TileGrid grid,
                         image::tile_layout(static_cast<int>(shape.source_names.size()), config.width,
                                            config.height, config.columns.value_or(0)));
  for (const image::Roi& tile : grid.tiles) {
    op->placements_.push_back(image::fit_in_tile(tile, shape.frame_width, shape.frame_height));
  }
  const MemoryKind memory = shape.gpu ? MemoryKind::kDevice : MemoryKind::kHost;
  FOVEA_ASSIGN_OR_RETURN(const ImageAllocation allocation,
                         plan_image_allocation(PixelFormat::kNV12, config.width, config.height));
  FOVEA_ASSIGN_OR_RETURN(BufferPool pool,
                         BufferPool::create("mosaic canvas", memory, allocation.total_bytes, 1));
  op->canvas_pool_.push_back(std::move(pool));
  FOVEA_ASSIGN_OR_RETURN(op->canvas_block_, op->canvas_pool_.back().acquire());
  op->canvas_ = image_view_in(op->canvas_block_.data(), allocation, PixelFormat::kNV12, config.width,
                              config.height, memory);
  if (!shape.gpu) {
    FOVEA_TRY(image::fill_canvas_cpu(op->canvas_));
    return op;
  }
#if defined(FOVEA_HAVE_CUDA)
  CudaStream stream;
  FOVEA_ASSIGN_OR_RETURN(stream, CudaStream::create());
  FOVEA_TRY(image::fill_canvas_cuda(stream.get(), op->canvas_));
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream.get()));
#endif
  return op;
}

std::vector<std::size_t> mosaic_rounds(const FrameBatch& batch) {
  std::vector<std::size_t> rounds(batch.size());
  std::vector<std::size_t> seen;  // per source: its frames so far in the batch
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::size_t source = batch.frames[i].source;
    if (source >= seen.size()) seen.resize(source + 1, 0);
    rounds[i] = seen[source]++;
  }
  return rounds;
}

std::size_t mosaic_round_count(const std::vector<std::size_t>& rounds) {
  return rounds.empty() ? 0 : *std::max_element(rounds.begin(), rounds.end()) + 1;
}

Status MosaicOp::declare(BufferPlan& plan) {
  // The batch's own copies of the canvas, one a round (so one a frame at most): the next batch
  // updates the canvas while the encoder reads these.
  return plan.images(kMosaicHost, {.format = PixelFormat::kNV12,
                                   .width = config_.width,
                                   .height = config_.height,
                                   .place = BufferPlace::kPinnedHost});
}

void MosaicOp::place(const FrameBatch& batch, const std::vector<std::size_t>& rounds, std::size_t round,
                     image::ImageBatch& frames, std::vector<image::Roi>& destinations) const {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (rounds[i] != round) continue;
    frames.images.push_back(batch.image(i));
    destinations.push_back(placements_[batch.frames[i].source]);
  }
}

Status MosaicOp::run_cpu(FrameBatch& batch) {
  const std::vector<std::size_t> rounds = mosaic_rounds(batch);
  for (std::size_t round = 0; round < mosaic_round_count(rounds); ++round) {
    image::ImageBatch frames;
    std::vector<image::Roi> destinations;
    place(batch, rounds, round, frames, destinations);
    FOVEA_TRY(image::run_tile_cpu(frames, destinations, canvas_));
    const ImageView& copy = batch.slot->images(kMosaicHost)[round];
    for (int p = 0; p < 2; ++p) {
      const int rows = p == 0 ? canvas_.height : canvas_.height / 2;  // NV12: chroma at half height
      for (int y = 0; y < rows; ++y)
        std::memcpy(copy.row(p, y), canvas_.row(p, y), static_cast<std::size_t>(canvas_.width));
    }
  }
  return Status::ok();
}

Status MosaicOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::vector<std::size_t> rounds = mosaic_rounds(batch);
  for (std::size_t round = 0; round < mosaic_round_count(rounds); ++round) {
    image::ImageBatch frames;
    std::vector<image::Roi> destinations;
    place(batch, rounds, round, frames, destinations);
    FOVEA_TRY(image::run_tile_cuda(stream, frames, destinations, canvas_));
    FOVEA_TRY(copy_nv12(canvas_, batch.slot->images(kMosaicHost)[round], cudaMemcpyDeviceToHost, stream));
  }
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "mosaic on the GPU: this fovea was built without CUDA");
#endif
}

Status FrameDownloadOp::declare(BufferPlan& plan) {
  if (!shape_.gpu) return Status::ok();
  return plan.images(kFramesHost, {.format = PixelFormat::kNV12,
                                   .width = shape_.frame_width,
                                   .height = shape_.frame_height,
                                   .place = BufferPlace::kPinnedHost});
}

Status FrameDownloadOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::vector<ImageView>& host = batch.slot->images(kFramesHost);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    FOVEA_TRY(copy_nv12(batch.image(i), host[i], cudaMemcpyDeviceToHost, stream));
  }
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "download on the GPU: this fovea was built without CUDA");
#endif
}

}  // namespace fovea::pipeline
