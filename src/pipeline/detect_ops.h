// The detect stage's op, after the model's (model_ops.h), in the inference stage on the model's
// stream: the detector's raw outputs -> per frame, at most top_k detections in frame pixels (box
// decode by the model's parser, class-aware NMS, thresholds, class filter, min size; all on the GPU,
// post/detect_post.h), copied to pinned host memory (a few KB per batch) and turned into each
// inferred frame's FrameResults::objects once the batch's GPU work is done.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/config.h"
#include "pipeline/model_ops.h"
#include "pipeline/op.h"
#include "post/detect_post.h"

namespace fovea::pipeline {

// The detect stage planned against its model: the postprocess plan (outputs matched to the parser,
// refused before the run with the output's name and shape when they do not match), the SSD priors
// when the model has none, and the class names.
struct DetectSetup {
  post::DetectPostPlan plan;
  std::vector<float> priors;        // [A * 4]; empty unless an SSD model without a priors output
  std::vector<std::string> labels;  // from model.labels; empty without a label file
};

Result<DetectSetup> plan_detect(const FlowModel& model, const DetectConfig& detect, bool gpu);

class DetectOp final : public Op {
 public:
  static Result<std::unique_ptr<DetectOp>> create(const InferenceOp& inference, DetectSetup setup,
                                                  const FlowShape& shape);
  ~DetectOp() override;
  std::string name() const override { return "detect"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;
  const std::vector<std::string>& labels() const { return setup_.labels; }

 private:
  DetectOp(const InferenceOp& inference, DetectSetup setup, const FlowShape& shape);
  post::DetectInputs inputs(const std::vector<TensorView>& outputs, void* priors) const;
  // Each inferred frame's mapping from the model's input back to its pixels: video frames share
  // the mux size, an image flow's frames each have their own.
  void map_frames(const FrameBatch& batch);
  post::FrameMapping mapping_for(int frame_width, int frame_height) const;
  // Host detections of the batch's inferred frames into their results.
  Status collect(FrameBatch& batch, const post::DetectionList& host) const;

  const InferenceOp& inference_;
  DetectSetup setup_;
  FlowShape shape_;
  std::vector<post::FrameMapping> mappings_;  // per frame of the plan's batch (map_frames)
  std::shared_ptr<void> device_priors_;       // GPU: the priors, uploaded once
};

}  // namespace fovea::pipeline
