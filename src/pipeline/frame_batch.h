// The one payload of every pipeline queue: a batch of frames from the mux, the buffers of the slot
// it holds, and what the flow found in each frame.
//
// Pixels stay where the ops put them (device memory on the GPU path, in the slot's named buffers,
// buffer_plan.h); results are small and host-side. A GPU op that produces results leaves them in a
// pinned host buffer of the slot and queues a host step (`after_gpu`) that turns them into
// FrameResults; the first stage that needs the results on the host calls resolve(), which waits
// for the batch's GPU work and runs those steps in order. Ops never allocate while running.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/box.h"
#include "core/image.h"
#include "core/status.h"
#include "pipeline/buffer_plan.h"
#include "pipeline/slot_pool.h"
#include "pipeline/stream_mux.h"
#include "pipeline/video_source.h"
#include "post/class_mask.h"
#include "trace/tracer.h"

namespace fovea::pipeline {

// A classifier's verdict on an object (secondary inference).
struct SecondaryLabel {
  std::string model;  // the models: entry that gave it
  int class_id = -1;
  std::string label;  // from the model's label file; "" without one
  float score = 0.0f;
  bool operator==(const SecondaryLabel&) const = default;
};

// A whole-frame classifier's verdict on the frame (the classify_frames stage).
struct ClassLabel {
  int class_id = -1;
  std::string label;  // from the model's label file; "" without one
  float score = 0.0f;
  bool operator==(const ClassLabel&) const = default;
};

// Segmentation of an image flow's frame: its class map and where the frame's own pixels fall in it,
// from which sinks.images makes the label image at the frame's size (post/class_mask.h).
struct FrameClassMap {
  ImageView map;  // kGRAY8 class indices at the model's map size, host memory in the batch's slot
  post::MaskMapping mapping;
};

// One detected (or tracked) object in frame pixels.
struct ObjectResult {
  Box box;
  int class_id = -1;
  float score = 0.0f;
  std::int64_t track_id = -1;  // -1: not tracked
  // The tracker's prediction on a frame the detector skipped (box and class of the track; score
  // of its last detection), not a detection.
  bool predicted = false;
  std::vector<SecondaryLabel> secondary;
  bool operator==(const ObjectResult&) const = default;
};

struct FrameResults {
  // The primary model ran on this frame (false on the frames an inference interval skips).
  bool inferred = false;
  std::vector<ObjectResult> objects;
  // Segmentation: the fraction of the frame's class map in the target classes; absent otherwise.
  std::optional<double> target_fraction;
  // Segmentation of an image: its class map (valid while the batch is); absent otherwise.
  std::optional<FrameClassMap> class_map;
  // Classification (classify_frames): the most likely classes, best first (none may pass the
  // stage's min_score: empty); absent in other flows.
  std::optional<std::vector<ClassLabel>> classes;
  // Image-to-image: the model's output picture (kRGB8, host memory in the batch's slot, valid
  // while the batch is); absent otherwise.
  std::optional<ImageView> picture;
  // On the GPU path, the same picture in device memory (the slot's), for a sink that encodes on
  // the GPU; absent on the CPU path.
  std::optional<ImageView> picture_device;
};

// A frame as the ops see it: where it came from and its pixels at the mux size (NV12; device memory
// on the GPU path). The frame's owner (the mux frame in FrameBatch::frames) keeps the pixels alive.
using BatchFrame = MuxFrame<SourceFrame>;

struct FrameBatch {
  std::uint64_t number = 0;                  // 0-based, in mux order
  std::vector<BatchFrame> frames;            // holding them keeps the decoders' buffers alive
  std::vector<FrameResults> results;         // one per frame
  SlotPool<SlotBuffers>::Handle slot;        // the named buffers and the GPU events
  std::optional<trace::StartEndRange> life;  // "pipeline": from the mux to the sink
  // Host steps queued by GPU ops, run by resolve() once the GPU work before them is done.
  std::vector<std::function<Status(FrameBatch&)>> after_gpu;

  std::size_t size() const { return frames.size(); }
  const ImageView& image(std::size_t i) const { return frames[i].payload.frame.image; }
  // Blocks until the GPU work queued so far on this batch is done (no-op on the CPU path), then
  // runs the queued host steps. Idempotent.
  Status resolve();
};

}  // namespace fovea::pipeline
