// The classify_frames stage's op, after the model's (model_ops.h), in the inference stage on the
// model's stream: the primary model as a whole-frame classifier (a scene classifier on video frames,
// torchvision's classifiers on images). Its one output [N, C] of logits gives each inferred frame
// its top_k classes after a softmax (class_scores.h), those below min_score left out, in
// FrameResults::classes.
//
// GPU: the logits (N x C, a few KB) are copied to pinned host memory of the slot and read by a
// batch.after_gpu step; CPU: read from the session's outputs at once.
#pragma once

#include <string>

#include "pipeline/class_scores.h"
#include "pipeline/config.h"
#include "pipeline/model_ops.h"
#include "pipeline/op.h"

namespace fovea::pipeline {

struct ClassifyFramesSetup {
  ClassifyFramesConfig config;
  ClassifierHead head;
};

// Refused before the run when the model's output is not one [N, C] (the error names the model file
// and the output's shape) or its label file does not match.
Result<ClassifyFramesSetup> plan_classify_frames(const FlowModel& model, const ClassifyFramesConfig& config);

class ClassifyFramesOp final : public Op {
 public:
  ClassifyFramesOp(const InferenceOp& inference, ClassifyFramesSetup setup, const FlowShape& shape)
      : inference_(inference), setup_(std::move(setup)), shape_(shape) {}
  std::string name() const override { return "classify frames"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  // Each inferred frame's classes from its row of `logits` (host memory).
  void label(FrameBatch& batch, const void* logits, DataType dtype) const;

  const InferenceOp& inference_;
  ClassifyFramesSetup setup_;
  FlowShape shape_;
};

}  // namespace fovea::pipeline
