// The primary model's ops, shared by every flow:
//
//   GateOp        which frames the model runs on: every frame, or one in interval + 1 per source
//                 (FrameResults::inferred); the others skip preprocess and inference
//   PreprocessOp  the inferred frames (NV12) -> the model's input tensor, in the slot (fused
//                 resize, color conversion and normalization, image/preprocess.h)
//   InferenceOp   the tensor -> the model's outputs. On the GPU the outputs stay in the session's
//                 buffers (fixed addresses) until its next run, so the ops that read them run in the
//                 same stage, on the same stream, right after it (ClassMapOp, DetectOp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/image.h"
#include "image/preprocess.h"
#include "pipeline/config.h"
#include "pipeline/op.h"
#include "runtime/session.h"

namespace fovea::pipeline {

// A model opened for a flow: its session planned for (batch, 3, H, W) and the preprocess that
// feeds it.
struct FlowModel {
  ModelConfig config;
  int batch_size = 1;
  std::unique_ptr<runtime::InferenceSession> session;
  image::PreprocessParams preprocess;
  std::string tensor_buffer;  // the slot's byte buffer holding the model's input

  int input_width() const { return preprocess.width; }
  int input_height() const { return preprocess.height; }
  // "model m.onnx at 960x544 batch 4 fp16" (the precision the session runs), for the run's log.
  std::string description() const;
};

// Opens `config` for images: one input [N, 3, H, W] (H and W: the model's own when it fixes them,
// else config.input_width/height, else the frame size), planned at `batch_size`. Errors name the
// model file, the input and the setting at fault.
Result<std::unique_ptr<FlowModel>> open_flow_model(const ModelConfig& config, int batch_size,
                                                   const FlowShape& shape);

// The positions in `batch` of the frames the model runs on.
std::vector<std::size_t> inferred_frames(const FrameBatch& batch);

class GateOp final : public HostOp {
 public:
  explicit GateOp(int interval) : interval_(interval) {}
  std::string name() const override { return "gate"; }
  Status declare(BufferPlan&) override { return Status::ok(); }
  bool reads_results() const override { return false; }
  Status run_host(FrameBatch& batch) override;

 private:
  int interval_;
};

class PreprocessOp final : public Op {
 public:
  explicit PreprocessOp(FlowModel& model) : model_(model) {}
  std::string name() const override { return "preprocess"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  FlowModel& model_;
};

// Also counts the non-finite values (NaN, infinities) among the inferred items' float outputs
// (post/non_finite.h): a model that overflows (float16 past 65504) gives them, and every head turns
// them silently into no boxes, one class or black pictures. The count is a stage counter ("counted" in
// the summary and the report) and the log says so the first time it sees one.
class InferenceOp final : public Op {
 public:
  explicit InferenceOp(FlowModel& model);
  ~InferenceOp() override;
  std::string name() const override { return "inference"; }
  Status declare(BufferPlan&) override { return Status::ok(); }
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;
  std::vector<StageCounter> counters() const override;

  // The outputs of the last run, trimmed to its first `items` entries: device tensors on the GPU,
  // host tensors on the CPU. Valid until the next run.
  std::vector<TensorView> outputs(std::size_t items) const;
  const FlowModel& model() const { return model_; }

 private:
  // The float outputs of the last run's first `items` entries, as outputs() gives them.
  std::vector<TensorView> float_outputs(std::size_t items) const;
  // Says once that the outputs held `found` non-finite values so far.
  void warn_non_finite(std::uint64_t found);

  FlowModel& model_;
  std::vector<runtime::Tensor> host_outputs_;      // CPU path: the last run's
  std::atomic<std::uint64_t> host_non_finite_{0};  // CPU path: counted so far
  struct DeviceCount;  // GPU path: the counter on the device and its copy in pinned memory
  std::unique_ptr<DeviceCount> device_count_;
  bool warned_ = false;
};

}  // namespace fovea::pipeline
