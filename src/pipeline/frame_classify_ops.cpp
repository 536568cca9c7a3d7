#include "pipeline/frame_classify_ops.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {
namespace {

constexpr const char* kLogitsHost = "frame logits host";

}  // namespace

Result<ClassifyFramesSetup> plan_classify_frames(const FlowModel& model, const ClassifyFramesConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(ClassifierHead head, plan_classifier_head(model, "classify_frames"));
  return ClassifyFramesSetup{.config = config, .head = std::move(head)};
}

Status ClassifyFramesOp::declare(BufferPlan& plan) {
  if (!shape_.gpu) return Status::ok();  // the CPU path reads the session's host outputs
  const std::size_t rows = static_cast<std::size_t>(inference_.model().batch_size);
  return plan.bytes(kLogitsHost, {.bytes = rows * static_cast<std::size_t>(setup_.head.classes) *
                                           data_type_size(setup_.head.dtype),
                                  .place = BufferPlace::kPinnedHost});
}

void ClassifyFramesOp::label(FrameBatch& batch, const void* logits, DataType dtype) const {
  const std::vector<std::size_t> frames = inferred_frames(batch);
  for (std::size_t k = 0; k < frames.size(); ++k) {
    batch.results[frames[k]].classes =
        top_classes(logits, dtype, k, setup_.head, setup_.config.top_k, setup_.config.min_score);
  }
}

Status ClassifyFramesOp::run_cpu(FrameBatch& batch) {
  const std::vector<std::size_t> frames = inferred_frames(batch);
  if (frames.empty()) return Status::ok();
  const TensorView logits = inference_.outputs(frames.size()).at(0);
  label(batch, logits.data, logits.dtype);
  return Status::ok();
}

Status ClassifyFramesOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::vector<std::size_t> frames = inferred_frames(batch);
  if (frames.empty()) return Status::ok();
  const TensorView logits = inference_.outputs(frames.size()).at(0);
  void* host = batch.slot->bytes(kLogitsHost);
  const std::size_t bytes =
      frames.size() * static_cast<std::size_t>(setup_.head.classes) * data_type_size(logits.dtype);
  FOVEA_CUDA_TRY(cudaMemcpyAsync(host, logits.data, bytes, cudaMemcpyDeviceToHost, stream));
  // The classes are read once the batch's GPU work is done: resolve() runs this after it.
  batch.after_gpu.push_back([this, host, dtype = logits.dtype](FrameBatch& done) {
    label(done, host, dtype);
    return Status::ok();
  });
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported,
                    "classify_frames on the GPU: this fovea was built without CUDA");
#endif
}

}  // namespace fovea::pipeline
