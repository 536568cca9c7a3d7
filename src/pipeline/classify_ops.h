// The classify stage's op: one secondary classifier (a `secondary:` entry, DeepStream's secondary
// GIE) on the objects of each batch, in a stage of its own after detect (and track).
//
// The objects that qualify (class in operate_on_classes, box at least min_width x min_height,
// inside the frame once rounded, tracked when skip_untracked) are cropped, resized, converted and normalized
// from the NV12 frame into the model's input tensor by the fused preprocess (image/preprocess.h): the
// object's frame is listed once per object, with the object's box as its ROI, rounded outward to even
// coordinates (4:2:0 chroma) and clamped into the frame; degenerate boxes (no width or height,
// not finite) are skipped. The model runs in chunks of its own batch size (models[].batch_size,
// default 16; the last chunk partial), a softmax over its one output [N, C] gives each object its
// top_k SecondaryLabels (class_scores.h), appended to ObjectResult::secondary. The summary counts
// the objects classified (and how many of them had no track), reused and skipped.
//
// reinfer_interval: a tracked object is classified again only once that many frames of its source
// have passed since its last classification; in between it gets its track's last labels (kept per
// source and track id until the interval has passed without the track being classified).
// Untracked objects are classified on every frame.
//
// Objects are gathered within the frame batch: the mux batch already spans every source, so no
// cross-batch deadline queue is needed, and memory stays bounded by the slot pool: every buffer is
// the slot's, sized for batch_size * detect.top_k objects. Objects beyond that are skipped,
// counted (skipped_objects) and warned about once.
//
// GPU: preprocess and inference are enqueued on the stage's stream, the scores copied to pinned
// memory, and the labels written by a batch.after_gpu step (the next stage's resolve); CPU: all
// of it synchronously.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "image/batch.h"
#include "pipeline/class_scores.h"
#include "pipeline/config.h"
#include "pipeline/model_ops.h"
#include "pipeline/op.h"

namespace fovea::pipeline {

// A secondary model planned for the classify stage: its classes (the output's C, refused before
// the run when the output is not one [N, C]) and their names.
struct ClassifySetup {
  SecondaryConfig config;
  ClassifierHead head;
  int max_objects = 0;  // per batch: mux.batch_size * detect.top_k
};

Result<ClassifySetup> plan_classify(const FlowModel& model, const SecondaryConfig& config, int max_objects);

// The crop of `box` the classifier sees: rounded outward to even coordinates and clamped into a
// frame_width x frame_height frame; empty (width or height 0) for a degenerate box or one outside.
image::Roi object_roi(const Box& box, int frame_width, int frame_height);

class ClassifyOp final : public Op {
 public:
  ClassifyOp(FlowModel& model, ClassifySetup setup, const FlowShape& shape);
  std::string name() const override { return "classify " + model_.config.name; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;
  bool reads_results() const override { return true; }

  // Over the run: objects classified (those without a track among them), given their track's last
  // labels, and over the per-batch bound (not classified).
  std::vector<StageCounter> counters() const override;

 private:
  // An object the batch's run labels: classified in its `row` of the scores, or given its track's
  // last labels (row kReuse). Kept in the slot (pinned), read by the write-back step.
  struct Pick {
    std::uint32_t frame;
    std::uint32_t object;
    std::int32_t row;
  };
  static constexpr std::int32_t kReuse = -1;
  using TrackKey = std::pair<std::size_t, std::int64_t>;  // source, track id
  struct TrackLabels {
    std::int64_t frame = 0;  // the source frame it was last classified on, once `scheduled`
    // A classification of the track is queued or done. Its labels may not be written back yet (the
    // GPU path runs batches ahead of their write-back), but write-backs run in batch order, so a
    // later batch that reuses them finds them written when its own write-back runs.
    bool scheduled = false;
    std::vector<SecondaryLabel> labels;
  };
  bool qualifies(const ObjectResult& object) const;
  bool reuses(const BatchFrame& frame, const ObjectResult& object);
  // Fills the slot's picks; returns how many, and how many of them are classified (rows).
  std::pair<std::size_t, std::size_t> select(const FrameBatch& batch);
  // The crops of rows [begin, end) into crops_.
  void gather(const FrameBatch& batch, std::size_t picks, std::size_t begin, std::size_t end);
  Status write_labels(FrameBatch& batch, std::size_t picks);
  std::vector<SecondaryLabel> top_labels(const void* scores, std::int32_t row) const;
  void forget_old_tracks(const FrameBatch& batch);
  TensorView chunk_tensor(void* data, MemoryKind memory, std::size_t items) const;

  FlowModel& model_;
  ClassifySetup setup_;
  FlowShape shape_;
  std::string picks_buffer_, scores_buffer_;
  image::ImageBatch crops_;  // reused per chunk
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> classified_{0};
  std::atomic<std::uint64_t> untracked_{0};
  std::atomic<std::uint64_t> reused_{0};
  // The labels of tracked objects, by source and track: read by select on the stage's thread,
  // written by write_labels wherever the batch is resolved.
  std::mutex tracks_mutex_;
  std::map<TrackKey, TrackLabels> tracks_;
};

}  // namespace fovea::pipeline
