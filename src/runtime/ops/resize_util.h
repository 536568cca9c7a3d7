// Resize's and Upsample's parameters, shared by the CPU kernels (resize.cpp) and the CUDA kernels
// (cuda/ops/resize.cu): the attributes, the per-axis plan (input and output sizes, scales, roi)
// and, for each resized axis, the taps every output index reads (input indices and weights), as
// the ONNX reference implementation defines them.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/op.h"

namespace fovea::runtime::ops {

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Coordinates {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// kLegacy is what opset < 11 (Resize-10, Upsample) did, as onnxruntime implements it: floor when
// upsampling, ceil when downsampling.
enum class NearestRounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttributes {
  Interpolation mode = Interpolation::kNearest;
  Coordinates coordinates = Coordinates::kHalfPixel;
  NearestRounding rounding = NearestRounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  bool antialias = false;
  AspectPolicy aspect = AspectPolicy::kStretch;
};

struct AxisResize {
  Dim in, out;
  double scale = 1;  // output/input, as given by scales or derived from sizes
  // in * scale before flooring to a whole output size: align_corners and tf_crop_and_resize map
  // onto this length, as the ONNX reference implementation does.
  double resized_length = 0;
  double roi_start = 0, roi_end = 1;
  bool resized = false;  // listed in `axes`
};

struct ResizePlan {
  ResizeAttributes attributes;
  std::vector<AxisResize> axes;  // one per input axis
};

Result<ResizeAttributes> resize_attributes(const InferContext& ctx);

// The plan for an input of dims `in`; output dims stay unknown where scales or sizes are.
Result<ResizePlan> resize_plan(const InferContext& ctx, const Dims& in);

// How each output index along one axis reads the input: `width` weighted input indices, or the
// extrapolation value where tf_crop_and_resize maps it outside the input.
struct AxisTaps {
  std::int64_t width = 1;
  std::vector<std::int64_t> index;  // out * width, clamped into the input (edge padding)
  std::vector<double> weight;
  std::vector<bool> outside;
};

// The taps of one resized axis (known input and output sizes).
AxisTaps axis_taps(const AxisResize& axis, const ResizeAttributes& a);

// Whether an axis changes at all: others are skipped (scale 1 maps every index to itself).
bool needs_pass(const AxisResize& axis, const ResizeAttributes& a);

}  // namespace fovea::runtime::ops
