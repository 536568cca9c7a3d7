// The segment stage's ops (background blur behind the target classes), after the model's
// (model_ops.h):
//
//   FrameRgbOp     NV12 frames -> RGB, for the composite (preprocess stage)
//   ClassMapOp     the model's scores -> argmax class map per frame (inference stage, right after
//                  the model, on its stream)
//   SegmentMaskOp  class map -> binary mask of the target classes at the frame size (bilinear,
//                  through the preprocess placement), refined along the frame's edges (joint
//                  bilateral); with a metadata sink, the maps go to the host and each frame's
//                  FrameResults::target_fraction is counted from them
//   CompositeOp    mask * frame + (1 - mask) * blur(frame), then RGB -> YUV 4:2:0 in host memory
//                  for the encoders (only when a video sink wants it)
//
// An image flow's segment stage keeps the class maps instead (images come in at sizes of their
// own, and the label image sinks.images writes has each one's size):
//
//   LabelMapOp     the class maps -> host memory (the GPU path copies them back), each frame's
//                  FrameResults::class_map with the mapping from its own pixels into the map
//                  (through the preprocess placement, stretch or letterbox), and its
//                  target_fraction counted over its own pixels as the label image has them
#pragma once

#include <string>
#include <vector>

#include "image/blur.h"
#include "pipeline/config.h"
#include "pipeline/model_ops.h"
#include "pipeline/op.h"
#include "post/class_mask.h"

namespace fovea::pipeline {

// Buffer names, shared by the ops and the video sink's picture picker.
inline constexpr const char* kRgbFrames = "rgb";
inline constexpr const char* kClassMaps = "class maps";
inline constexpr const char* kClassMapsHost = "class maps host";
inline constexpr const char* kMasks = "masks";
inline constexpr const char* kRefinedMasks = "refined masks";
inline constexpr const char* kComposited = "composited";
inline constexpr const char* kYuvScratch = "yuv scratch";
inline constexpr const char* kYuvHost = "yuv host";

// What the segment stage was asked for, checked against the model.
struct SegmentSetup {
  std::vector<int> classes;  // kept sharp; never empty
  int map_width = 0;         // the model's score maps
  int map_height = 0;
  bool refine = true;
  bool encode = false;        // a video sink reads kYuvHost
  bool maps_on_host = false;  // a metadata sink reads the target fraction
  image::BlurParams blur;
};

// Checks the model's first output is class scores [N, C, H, W] and task.classes are among them
// (empty: every class but 0). Errors name the model file or the task key.
Result<SegmentSetup> plan_segment(const FlowModel& model, const TaskConfig& task, bool encode,
                                  bool maps_on_host);

// Per frame of `frames`, the mapping from its own pixels into a class map of the model's, through
// the preprocess placement of that frame.
Result<std::vector<post::MaskMapping>> class_map_mappings(const FlowModel& model, const SegmentSetup& setup,
                                                          const image::ImageBatch& frames);

class FrameRgbOp final : public Op {
 public:
  explicit FrameRgbOp(const FlowShape& shape) : shape_(shape) {}
  std::string name() const override { return "frame rgb"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  FlowShape shape_;
};

class ClassMapOp final : public Op {
 public:
  ClassMapOp(const InferenceOp& inference, const SegmentSetup& setup)
      : inference_(inference), setup_(setup) {}
  std::string name() const override { return "class map"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  const InferenceOp& inference_;
  SegmentSetup setup_;
};

class SegmentMaskOp final : public Op {
 public:
  SegmentMaskOp(const FlowModel& model, const SegmentSetup& setup, const FlowShape& shape)
      : model_(model), setup_(setup), shape_(shape) {}
  std::string name() const override { return "mask"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  Result<post::ClassMaskParams> mask_params(const FrameBatch& batch) const;
  void count_target_pixels(FrameBatch& batch) const;

  const FlowModel& model_;
  SegmentSetup setup_;
  FlowShape shape_;
};

class LabelMapOp final : public Op {
 public:
  LabelMapOp(const FlowModel& model, const SegmentSetup& setup, const FlowShape& shape)
      : model_(model), setup_(setup), shape_(shape) {}
  std::string name() const override { return "label map"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  // Points each frame's result at its map in `maps` (host memory by now).
  void attach(FrameBatch& batch, const std::vector<ImageView>& maps,
              const std::vector<post::MaskMapping>& mappings) const;

  const FlowModel& model_;
  SegmentSetup setup_;
  FlowShape shape_;
};

class CompositeOp final : public Op {
 public:
  CompositeOp(const SegmentSetup& setup, const FlowShape& shape) : setup_(setup), shape_(shape) {}
  std::string name() const override { return "composite"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

 private:
  SegmentSetup setup_;
  FlowShape shape_;
};

}  // namespace fovea::pipeline
