// GELU's tanh form on the device (ops::gelu_tanh is the CPU's): the Gelu op's, and fovea.Gemm's pass
// where cuBLASLt has no GELU epilogue for the product (cuda/ops/matmul.cu).
#pragma once

#include "runtime/ops/activation_util.h"

namespace fovea::runtime::cuda {

struct GeluTanh {
  __device__ float operator()(float x) const {
    constexpr float kScale = ops::kGeluTanhScale, kCubic = ops::kGeluTanhCubic;
    return 0.5f * x * (1.0f + tanhf(kScale * (x + kCubic * x * x * x)));
  }
  __device__ double operator()(double x) const {
    return 0.5 * x * (1.0 + tanh(ops::kGeluTanhScale * (x + ops::kGeluTanhCubic * x * x * x)));
  }
};

}  // namespace fovea::runtime::cuda
