// The parameters of the pointwise activations, read from a node once for the CPU kernels
// (activation.cpp) and the CUDA ones (cuda/ops/activation.cu, which cannot include
// elementwise_util.h: nvcc does not compile fmt/format.h).
#pragma once

#include <cmath>

#include "runtime/op.h"

namespace fovea::runtime::ops {

Result<float> leaky_relu_alpha(const Node& node);

struct HardSigmoidParams {
  float alpha = 0;
  float beta = 0;
};
Result<HardSigmoidParams> hard_sigmoid_params(const Node& node);

Result<float> elu_alpha(const Node& node);

// GELU's constants, for its kernels and for the pass that finds it written out (fuse_gelu): 1 / sqrt 2
// (the erf form), sqrt(2 / pi) and the cubic coefficient (the tanh form).
inline constexpr double kGeluInvSqrt2 = 0.70710678118654752440;
inline constexpr double kGeluTanhScale = 0.79788456080286535588;
inline constexpr double kGeluTanhCubic = 0.044715;

// Gelu's `approximate` (opset 20): false for "none", the exact x * Phi(x) through erf; true for
// "tanh", 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). Another value is refused by name.
Result<bool> gelu_uses_tanh(const Node& node);

// The tanh form on the CPU: Gelu's, and fovea.Gemm's "gelu_tanh" activation.
template <typename T>
T gelu_tanh(T x) {
  const T inner = static_cast<T>(kGeluTanhScale) * (x + static_cast<T>(kGeluTanhCubic) * x * x * x);
  return static_cast<T>(0.5) * x * (T{1} + std::tanh(inner));
}

// fovea.Gemm's `activation` attribute: "gelu_tanh" applies the tanh form to alpha A B + beta C (the
// product of a linear layer and its bias; fuse_gemm_gelu, passes.h), cuBLASLt's GELU epilogue on CUDA.
inline constexpr const char* kGemmGeluTanh = "gelu_tanh";
// Whether `node` (a Gemm) applies it: false for ONNX's Gemm and without the attribute; another value
// is refused by name.
Result<bool> gemm_applies_gelu(const Node& node);

// A Clip bound as T: from the scalar `bound` (input 1 or 2, opset 11+; nullptr when omitted) or
// from the float attribute `attribute` (before opset 11), else T's own `limit`. `bound` may have
// another dtype than T (a float16 plan's constant read by a kernel computing in float). Defined
// for T in float, double, int64, int32, int8, uint8.
template <typename T>
Result<T> clip_bound(const Node& node, const Tensor* bound, const char* attribute, T limit);

}  // namespace fovea::runtime::ops
