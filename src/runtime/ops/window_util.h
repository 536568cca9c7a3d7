// HannWindow, HammingWindow and BlackmanWindow, shared by the CPU reference (window.cpp) and the
// CUDA kernel (cuda/ops/window.cu): each is a generalized cosine window
//   w[n] = a0 - a1 cos(2 pi n / M) + a2 cos(4 pi n / M),   n in [0, size)
// with M = size (periodic = 1, the default) or size - 1 (periodic = 0, symmetric), computed in
// double and rounded once to the output_datatype (float32 by default; float16 and float64 too).
// A window of one sample is [1], as in scipy and PyTorch (the formula would divide by zero).
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

struct WindowParams {
  std::int64_t size = 0;
  double a0 = 0;
  double a1 = 0;
  double a2 = 0;
  double period = 1;  // M
};

// From the node (op type and periodic) and its size input (an int32 or int64 scalar >= 0).
Result<WindowParams> window_params(const InferContext& ctx, const Tensor& size);
// The output_datatype attribute (float32, float16 or float64).
Result<DataType> window_dtype(const InferContext& ctx);

FOVEA_HD double window_value(const WindowParams& params, std::int64_t n) {
  if (params.size == 1) return 1.0;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double angle = kTwoPi * static_cast<double>(n) / params.period;
  return params.a0 - params.a1 * cos(angle) + params.a2 * cos(2 * angle);
}

}  // namespace fovea::runtime::ops
