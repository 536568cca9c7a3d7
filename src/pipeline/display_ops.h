// The display side of the detection flow, after the results are on the host:
//
//   OsdOp            draws each frame's objects in place on its NV12 pixels (DeepStream's nvdsosd):
//                    boxes in their class color, labels with scores, track ids and the first
//                    secondary label ("#3 red 0.98 | car 0.91"), optional fill
//                    (image/osd_layout.h, image/draw.h); objects of the blur classes are pixelated
//                    instead (image/pixelate.h), before anything is drawn
//   MosaicOp         every source tiled into one canvas (DeepStream's nvmultistreamtiler,
//                    image/tile.h); each batch updates its sources' tiles and the canvas goes to
//                    pinned host memory for the encoder
//   FrameDownloadOp  GPU path: the frames to pinned host memory, for per-source video files
//
// Frames are drawn on in place: the batch owns them until the sink is done, and nothing after the
// display reads the undrawn pixels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "image/draw.h"
#include "image/pixelate.h"
#include "image/tile.h"
#include "pipeline/config.h"
#include "pipeline/op.h"

namespace fovea::pipeline {

inline constexpr const char* kFramesHost = "frames host";
inline constexpr const char* kMosaicHost = "mosaic host";

class OsdOp final : public Op {
 public:
  // `labels`: the primary model's class names (empty: numbers); `max_objects`: per frame, at most
  // (the detector's top_k), which sizes the command buffers.
  OsdOp(OsdConfig config, std::vector<std::string> labels, int max_objects, const FlowShape& shape);
  std::string name() const override { return "osd"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;
  bool reads_results() const override { return true; }
  // The last batch's draw commands (the labels' text among them), for tests.
  const std::vector<image::DrawCommand>& commands() const { return commands_; }

 private:
  // Fills commands_ and rects_ from the batch's results.
  Status lay_out(const FrameBatch& batch);
  image::ImageBatch frames(const FrameBatch& batch) const;

  OsdConfig config_;
  std::vector<std::string> labels_;
  int max_objects_;
  FlowShape shape_;
  std::size_t max_commands_ = 0;
  std::size_t draw_bytes_ = 0;
  std::size_t pixelate_bytes_ = 0;
  std::vector<image::DrawCommand> commands_;  // reused batch after batch (one stage thread)
  std::vector<image::PixelateRect> rects_;
  // Labels composed with a secondary label, per object of a frame; reused batch after batch (the
  // strings keep their capacity), and alive while the commands are appended.
  std::vector<std::string> label_texts_;
};

// A batch's frames in rounds: frame i is in round mosaic_rounds(batch)[i], its source's how-manyth
// frame in the batch. File sources batch ahead, so one batch can hold several frames of a source;
// the mosaic draws one picture per round (each source's frame of that moment over the last), not
// one per batch, so that no frame is skipped and the video lasts as long as its sources.
std::vector<std::size_t> mosaic_rounds(const FrameBatch& batch);
// The rounds mosaic_rounds gives: one more than the largest.
std::size_t mosaic_round_count(const std::vector<std::size_t>& rounds);

class MosaicOp final : public Op {
 public:
  // The canvas (persistent: a source missing from a batch keeps its last tile) is allocated and
  // filled black here, once.
  static Result<std::unique_ptr<MosaicOp>> create(const MosaicConfig& config, const FlowShape& shape);
  std::string name() const override { return "mosaic"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  MosaicOp(const MosaicConfig& config, const FlowShape& shape) : config_(config), shape_(shape) {}
  // The frames of round `round` and where they go (one per source: the destinations are disjoint).
  void place(const FrameBatch& batch, const std::vector<std::size_t>& rounds, std::size_t round,
             image::ImageBatch& frames, std::vector<image::Roi>& destinations) const;

  MosaicConfig config_;
  FlowShape shape_;
  std::vector<image::Roi> placements_;   // per source: its frame's rectangle in its tile
  std::vector<BufferPool> canvas_pool_;  // one block
  PooledBuffer canvas_block_;
  ImageView canvas_;
};

class FrameDownloadOp final : public Op {
 public:
  explicit FrameDownloadOp(const FlowShape& shape) : shape_(shape) {}
  std::string name() const override { return "download"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch&) override { return Status::ok(); }  // the frames are host memory already

 private:
  FlowShape shape_;
};

}  // namespace fovea::pipeline
