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

struct EluOp {
  float alpha = 0;
  static Result<EluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(float alpha, ops::elu_alpha(node));
    return EluOp{alpha};
  }
  __device__ float operator()(float x) const { return x < 0.0f ? alpha * expm1f(x) : x; }
  __device__ double operator()(double x) const { return x < 0.0 ? static_cast<double>(alpha) * expm1(x) : x; }
};

Status run_gelu(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const GeluOp op, GeluOp::make(ctx.node()));
  return launch_gelu(ctx, op, ctx.output(0), ctx.input(0));
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
