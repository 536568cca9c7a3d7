// The work of the segmentation flow, one method per pipeline stage, on the GPU or on the CPU:
//
//   preprocess   NV12 frames -> the network's input tensor (fused resize, color, normalize), and
//                the frames as RGB for the composite
//   inference    the model, then argmax over the classes -> one class map per frame
//   postprocess  class map -> binary mask of the target classes at the frame size (bilinear,
//                through the preprocess placement), refined along the frame's edges (joint bilateral)
//   composite    background blur: mask * frame + (1 - mask) * blur(frame), then RGB -> YUV 4:2:0 in
//                host memory for the encoders (only when a video sink wants it)
//
// Each method is called from its own stage thread, in this order for every batch. On the GPU each
// stage enqueues on its own stream after waiting (cudaStreamWaitEvent) for the batch's ready event
// and records that event when done; nothing here blocks the host except wait_for_outputs(), which the
// sink calls from its CPU thread before it reads the outputs. On the CPU every method computes
// synchronously with the reference implementations of the same ops.
//
// Every buffer a batch uses lives in its slot (BatchBuffers), allocated once when the ops are built;
// the slot pool's size bounds the batches in flight.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/pool.h"
#include "image/blur.h"
#include "image/preprocess.h"
#include "pipeline/config.h"
#include "pipeline/slot_pool.h"
#include "pipeline/stream_mux.h"
#include "pipeline/video_source.h"
#include "runtime/session.h"
#include "trace/tracer.h"

namespace fovea::pipeline {

struct SegmentationSettings {
  bool gpu = false;
  int device = 0;
  int batch_size = 1;
  int frame_width = 0;  // the mux size
  int frame_height = 0;
  ModelConfig model;
  TaskConfig task;
  bool encode_outputs = false;      // a video sink reads the composited frames as YUV 4:2:0
  bool class_maps_on_host = false;  // a metadata sink reads the class maps
  int slots = 6;                    // batches in flight
};

// One batch's buffers, fixed addresses for the run. The views cover batch_size images; a partial
// batch uses the first ones.
struct BatchBuffers {
  std::vector<PooledBuffer> blocks;
  void* tensor = nullptr;  // the network input, [batch, 3, H, W]
  std::vector<ImageView> class_maps;
  std::vector<ImageView> masks;
  std::vector<ImageView> refined_masks;
  std::vector<ImageView> rgb;
  std::vector<ImageView> composited;
  std::vector<ImageView> yuv_device;  // GPU: the encode conversion's scratch
  std::vector<ImageView> yuv_host;    // what the encoders read (pinned on the GPU path)
  std::vector<ImageView> class_maps_host;
  std::vector<image::ResizePlacement> placements;  // where each frame landed in the input tensor
  std::shared_ptr<void> ready;                     // GPU: the batch's cudaEvent_t, owned
};

// The payload of the segmentation pipeline's queues.
struct SegmentBatch {
  std::uint64_t number = 0;
  std::vector<MuxFrame<SourceFrame>> frames;  // holding them keeps the decoders' buffers alive
  SlotPool<BatchBuffers>::Handle buffers;
  std::optional<trace::StartEndRange> life;  // "pipeline": from the mux to the sink
};

class SegmentationOps {
 public:
  // Loads and plans the model for (batch, 3, input size) and allocates every slot. Errors name the
  // model file, the input and the setting at fault.
  static Result<std::unique_ptr<SegmentationOps>> create(const SegmentationSettings& settings);
  ~SegmentationOps();
  SegmentationOps(const SegmentationOps&) = delete;
  SegmentationOps& operator=(const SegmentationOps&) = delete;

  // "cuda (NVIDIA H200)" or "cpu", and the model's input size and precision, for the run's log.
  std::string description() const;
  int input_width() const { return preprocess_params_.width; }
  int input_height() const { return preprocess_params_.height; }
  SlotPool<BatchBuffers>& slots() { return *slots_; }
  // The classes a pixel must have to stay sharp.
  const std::vector<int>& classes() const { return classes_; }

  Status preprocess(SegmentBatch& batch);
  Status infer(SegmentBatch& batch);
  Status postprocess(SegmentBatch& batch);
  Status composite(SegmentBatch& batch);
  // Sink side: blocks until the batch's outputs (yuv_host, class_maps_host) are readable.
  Status wait_for_outputs(const SegmentBatch& batch);

 private:
  struct Streams;  // GPU: one stream per stage
  explicit SegmentationOps(const SegmentationSettings& settings);
  Status load_model();
  Status allocate_slots();
  Status begin(const SegmentBatch& batch, void* stream) const;
  Status end(const SegmentBatch& batch, void* stream) const;

  SegmentationSettings settings_;
  image::PreprocessParams preprocess_params_;
  image::BlurParams blur_params_;
  std::vector<int> classes_;
  int map_width_ = 0;  // the model output's spatial size
  int map_height_ = 0;
  std::size_t class_map_image_bytes_ = 0;             // one class map's share of its slot's block
  std::unique_ptr<runtime::InferenceSession> model_;  // input 0: the image tensor; output 0: the scores
  std::unique_ptr<Streams> streams_;
  std::vector<BufferPool> pools_;
  std::unique_ptr<SlotPool<BatchBuffers>> slots_;
};

}  // namespace fovea::pipeline
