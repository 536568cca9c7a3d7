// The pointwise activations and Clip on CUDA, with the CPU reference's formulas
// (ops/activation.cpp) and parameters (ops/activation_util.h). float16 computes in float.
#include "runtime/cuda/elementwise.cuh"
#include "runtime/cuda/gelu.cuh"
#include "runtime/ops/activation_util.h"

namespace fovea::runtime::cuda {
namespace {

// Math functions on float (float32, and float16 computing in float) and double.
__device__ __forceinline__ float exp_of(float x) {
  return expf(x);
}
__device__ __forceinline__ double exp_of(double x) {
  return exp(x);
}

struct ReluOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T{0} ? T{0} : x;
  }
};

struct LeakyReluOp {
  float alpha = 0;
  static Result<LeakyReluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(float alpha, ops::leaky_relu_alpha(node));
    return LeakyReluOp{alpha};
  }
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T{0} ? static_cast<T>(alpha) * x : x;
  }
};

// 1 / (1 + e^-x), written so that exp never overflows.
struct SigmoidOp {
  template <typename T>
  __device__ T operator()(T x) const {
    if (x >= T{0}) return T{1} / (T{1} + exp_of(-x));
    const T e = exp_of(x);
    return e / (T{1} + e);
  }
};

struct TanhOp {
  __device__ float operator()(float x) const { return tanhf(x); }
  __device__ double operator()(double x) const { return tanh(x); }
};

// max(0, min(1, alpha * x + beta)); NaN stays NaN.
template <typename T>
__device__ __forceinline__ T hard_sigmoid(T x, T alpha, T beta) {
  const T y = alpha * x + beta;
  return y < T{0} ? T{0} : (y > T{1} ? T{1} : y);
}

struct HardSigmoidOp {
  ops::HardSigmoidParams params;
  static Result<HardSigmoidOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const ops::HardSigmoidParams params, ops::hard_sigmoid_params(node));
    return HardSigmoidOp{params};
  }
  template <typename T>
  __device__ T operator()(T x) const {
    return hard_sigmoid(x, static_cast<T>(params.alpha), static_cast<T>(params.beta));
  }
};

// x * HardSigmoid(x) with alpha 1/6 and beta 0.5, as ONNX defines it.
struct HardSwishOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return x * hard_sigmoid(x, T{1} / T{6}, static_cast<T>(0.5));
  }
};

// x * Phi(x) through erf, or its tanh approximation (ops/activation.cpp's GeluOp).
struct GeluOp {
  bool tanh_form = false;
  static Result<GeluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const bool tanh_form, ops::gelu_uses_tanh(node));
    return GeluOp{tanh_form};
  }
  __device__ float operator()(float x) const {
    constexpr float kInvSqrt2 = ops::kGeluInvSqrt2;
    return tanh_form ? GeluTanh{}(x) : 0.5f * x * (1.0f + erff(x * kInvSqrt2));
  }
  __device__ double operator()(double x) const {
    return tanh_form ? GeluTanh{}(x) : 0.5 * x * (1.0 + erf(x * ops::kGeluInvSqrt2));
  }
};

struct EluOp {
  float alpha = 0;
  static Result<EluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(float alpha, ops::elu_alpha(node));
    return EluOp{alpha};
  }
  __device__ float operator()(float x) const { return x < 0.0f ? alpha * expm1f(x) : x; }
  __device__ double operator()(double x) const { return x < 0.0 ? static_cast<double>(alpha) * expm1(x) : x; }
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

Status run_gelu(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const GeluOp op, GeluOp::make(ctx.node()));
  return dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, __half>) {
      return launch_elementwise<T, T>(ctx, HalfGeluOp{op}, ctx.output(0), ctx.input(0));
    } else {
      return launch_elementwise<T, T>(ctx, op, ctx.output(0), ctx.input(0));
    }
  });
}

// min(max(x, low), high): with low > high every element becomes high, as ONNX specifies.
template <typename C>
struct ClipOp {
  C low;
  C high;
  __device__ C operator()(C x) const {
    const C y = x < low ? low : x;
    return y > high ? high : y;
  }
};

// Clip's bounds are plan-time constants (opset 11+) or attributes; a bound computed at run time
// would need a host read, which a captured run cannot do.
Result<CudaPrepared> prepare_clip(CudaKernelContext& ctx) {
  for (int i = 1; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i) && ctx.host_constant(i) == nullptr) {
      return ctx.error(StatusCode::kUnsupported, "needs a constant '", i == 1 ? "min" : "max",
                       "' input on CUDA");
    }
  }
  return CudaPrepared{};
}

template <typename C>
Result<ClipOp<C>> make_clip(CudaKernelContext& ctx) {
  const auto bound = [&](int input, const char* attribute, C limit) {
    return ops::clip_bound(ctx.node(), ctx.has_input(input) ? ctx.host_constant(input) : nullptr, attribute,
                           limit);
  };
  FOVEA_ASSIGN_OR_RETURN(const C low, bound(1, "min", ::cuda::std::numeric_limits<C>::lowest()));
  FOVEA_ASSIGN_OR_RETURN(const C high, bound(2, "max", ::cuda::std::numeric_limits<C>::max()));
  return ClipOp<C>{low, high};
}

Status run_clip(CudaKernelContext& ctx) {
  return dispatch_elementwise<FOVEA_CUDA_NUMERIC_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    FOVEA_ASSIGN_OR_RETURN(const ClipOp<ComputeType<T>> op, make_clip<ComputeType<T>>(ctx));
    return launch_elementwise<T, T>(ctx, op, ctx.output(0), ctx.input(0));
  });
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Relu", .run = run_unary<ReluOp, FOVEA_CUDA_SIGNED_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "LeakyRelu", .run = run_unary<LeakyReluOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sigmoid", .run = run_unary<SigmoidOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Tanh", .run = run_unary<TanhOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "HardSigmoid", .run = run_unary<HardSigmoidOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "HardSwish", .run = run_unary<HardSwishOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Elu", .run = run_unary<EluOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Gelu", .run = run_gelu});
FOVEA_REGISTER_CUDA_OP({.op_type = "Clip", .prepare = prepare_clip, .run = run_clip});

}  // namespace fovea::runtime::cuda
