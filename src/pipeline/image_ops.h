// The image2image stage's op: the primary model's output tensor [N, C, H, W] (C = 3, or 1 for a
// gray picture) back to one RGB8 picture per inferred frame (post/tensor_image.h), in host memory
// of the slot for the image sink (FrameResults::picture).
//
// The pixel values undo the model's input normalization: a model fed (pixel / 255 - mean) / std
// gives pictures on the same scale, so pixel = (x * std + mean) * 255, per tensor channel. That is
// pix2pix's (x + 1) / 2 * 255 for its mean = std = 0.5, and x * 255 for a model fed pixels / 255.
// A model whose input is BGR gives BGR out.
#pragma once

#include <string>

#include "pipeline/model_ops.h"
#include "pipeline/op.h"
#include "post/tensor_image.h"

namespace fovea::pipeline {

inline constexpr const char* kPicturesDevice = "pictures";
inline constexpr const char* kPicturesHost = "pictures host";

class PictureOp final : public Op {
 public:
  // Errors name the model and its output when it is not an image-shaped tensor.
  static Result<std::unique_ptr<PictureOp>> create(const InferenceOp& inference, const FlowShape& shape);
  std::string name() const override { return "picture"; }
  Status declare(BufferPlan& plan) override;
  Status run(FrameBatch& batch, cudaStream_t stream) override;
  Status run_cpu(FrameBatch& batch) override;

  int width() const { return width_; }
  int height() const { return height_; }

 private:
  PictureOp(const InferenceOp& inference, const FlowShape& shape) : inference_(inference), shape_(shape) {}
  // Points each inferred frame's result at its picture in the slot's host buffer (and, on the GPU
  // path, its device buffer).
  void attach(FrameBatch& batch) const;

  const InferenceOp& inference_;
  FlowShape shape_;
  post::TensorImageParams params_;
  int width_ = 0;
  int height_ = 0;
};

}  // namespace fovea::pipeline
