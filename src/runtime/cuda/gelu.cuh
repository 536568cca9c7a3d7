// GELU on the device, shared by the Gelu op (ops/activation.cu) and fovea.Gemm's GELU pass
// (ops/matmul.cu): the float and double forms, and float16 storage's cheaper erf.
#pragma once

#include <type_traits>

#include "core/status.h"
#include "runtime/cuda/elementwise.cuh"
#include "runtime/graph.h"
#include "runtime/ops/activation_util.h"

namespace fovea::runtime::cuda {

// x * Phi(x) through erf, or its tanh approximation (ops/activation.cpp's GeluOp).
struct GeluOp {
  bool tanh_form = false;
  static Result<GeluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const bool tanh_form, ops::gelu_uses_tanh(node));
    return GeluOp{tanh_form};
  }
  __device__ float operator()(float x) const {
    constexpr float kInvSqrt2 = ops::kGeluInvSqrt2, kScale = ops::kGeluTanhScale,
                    kCubic = ops::kGeluTanhCubic;
    if (!tanh_form) return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
    return 0.5f * x * (1.0f + tanhf(kScale * (x + kCubic * x * x * x)));
  }
  __device__ double operator()(double x) const {
    if (!tanh_form) return 0.5 * x * (1.0 + erf(x * ops::kGeluInvSqrt2));
    return 0.5 * x * (1.0 + tanh(ops::kGeluTanhScale * (x + ops::kGeluTanhCubic * x * x * x)));
  }
};

// The normal distribution's CDF for float16 storage, Phi(x) = erfc(-x / sqrt 2) / 2, through
// Numerical Recipes' Chebyshev fit of erfc (relative error under 1.2e-7 for every argument, so
// GELU's far negative tail, x * Phi(x) with Phi tiny, keeps its relative accuracy; about 1e-6 with
// the fast exponential and reciprocal, against float16's 2^-11). About half of erff's instructions:
// with erff, GELU over float16 was bound by arithmetic, not memory (ViT-B: 56 us a layer for 39 M
// elements, where moving them takes 32; docs/perf.md, "GELU's erf over float16").
__device__ __forceinline__ float normal_cdf_for_half(float x) {
  const float z = fabsf(x) * static_cast<float>(ops::kGeluInvSqrt2);
  const float t = __fdividef(1.0f, fmaf(0.5f, z, 1.0f));
  float poly = 0.17087277f;
  for (const float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f,
                        0.37409196f, 1.00002368f, -1.26551223f}) {
    poly = fmaf(t, poly, c);
  }
  const float half_erfc = 0.5f * t * __expf(poly - z * z);
  return x < 0.0f ? half_erfc : 1.0f - half_erfc;
}

// GeluOp for float16 storage: normal_cdf_for_half in the erf form (the tanh form is already cheap).
struct HalfGeluOp {
  GeluOp exact;
  __device__ float operator()(float x) const {
    if (exact.tanh_form) return exact(x);
    return x * normal_cdf_for_half(x);
  }
};

// out = GELU(in) in float16, float32 or float64; `in` may be `out` itself.
inline Status launch_gelu(CudaKernelContext& ctx, const GeluOp& op, Tensor& out, const Tensor& in) {
  return dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, __half>) {
      return launch_elementwise<T, T>(ctx, HalfGeluOp{op}, out, in);
    } else {
      return launch_elementwise<T, T>(ctx, op, out, in);
    }
  });
}

}  // namespace fovea::runtime::cuda
