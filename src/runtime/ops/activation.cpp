// Activation functions: the pointwise ones through the shared unary kernel, Clip with its two
// opset variants, and Softmax/LogSoftmax with theirs.
//
//   op                                    dtypes
//   Relu                                  float32/64, int64/32/8
//   Clip                                  float32/64, int64/32/8, uint8
//   LeakyRelu Sigmoid Tanh HardSigmoid    float32/64
//   HardSwish Elu Gelu Softmax LogSoftmax
#include <cmath>
#include <limits>

#include "runtime/ops/activation_util.h"
#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/reduce_util.h"

namespace fovea::runtime::ops {
namespace {

struct ReluOp {
  template <typename T>
  T operator()(T x) const {
    return x < T{0} ? T{0} : x;
  }
};

struct LeakyReluOp {
  float alpha;
  static Result<LeakyReluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(float alpha, leaky_relu_alpha(node));
    return LeakyReluOp{alpha};
  }
  template <typename T>
  T operator()(T x) const {
    return x < T{0} ? static_cast<T>(alpha) * x : x;
  }
};

// 1 / (1 + e^-x), written so that exp never overflows.
struct SigmoidOp {
  template <typename T>
  T operator()(T x) const {
    if (x >= T{0}) return T{1} / (T{1} + std::exp(-x));
    const T e = std::exp(x);
    return e / (T{1} + e);
  }
};

struct TanhOp {
  template <typename T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

// max(0, min(1, alpha * x + beta)); NaN stays NaN.
template <typename T>
T hard_sigmoid(T x, T alpha, T beta) {
  const T y = alpha * x + beta;
  return y < T{0} ? T{0} : (y > T{1} ? T{1} : y);
}

struct HardSigmoidOp {
  float alpha;
  float beta;
  static Result<HardSigmoidOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const HardSigmoidParams params, hard_sigmoid_params(node));
    return HardSigmoidOp{params.alpha, params.beta};
  }
  template <typename T>
  T operator()(T x) const {
    return hard_sigmoid(x, static_cast<T>(alpha), static_cast<T>(beta));
  }
};

// x * HardSigmoid(x) with alpha 1/6 and beta 0.5, as ONNX defines it.
struct HardSwishOp {
  template <typename T>
  T operator()(T x) const {
    return x * hard_sigmoid(x, T{1} / T{6}, static_cast<T>(0.5));
  }
};

struct EluOp {
  float alpha;
  static Result<EluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(float alpha, elu_alpha(node));
    return EluOp{alpha};
  }
  template <typename T>
  T operator()(T x) const {
    return x < T{0} ? static_cast<T>(alpha) * std::expm1(x) : x;
  }
};

// x * Phi(x), Phi the standard normal CDF: 0.5 x (1 + erf(x / sqrt 2)); or its tanh approximation.
struct GeluOp {
  bool tanh_form = false;
  static Result<GeluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const bool tanh_form, gelu_uses_tanh(node));
    return GeluOp{tanh_form};
  }
  template <typename T>
  T operator()(T x) const {
    if (tanh_form) return gelu_tanh(x);
    return static_cast<T>(0.5) * x * (T{1} + std::erf(x * static_cast<T>(kGeluInvSqrt2)));
  }
};

// Clip: bounds are optional scalar inputs 1 and 2 from opset 11, float attributes before.
Status infer_clip(InferContext& ctx) {
  FOVEA_TRY(NumericTypes::require(ctx, 0));
  for (int i = 1; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    FOVEA_TRY(ctx.require_same_dtype(0, i));
    const Dims* dims = ctx.input_dims(i);
    if (dims != nullptr && all_known(*dims) && element_count(shape_of(*dims)) != 1) {
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("{} must be a scalar, got shape {}",
                                                                 i == 1 ? "min" : "max", dims_string(*dims)));
    }
  }
  if (ctx.opset() < 11) {
    FOVEA_TRY(ctx.node().attr_float("min", 0.0f).status());
    FOVEA_TRY(ctx.node().attr_float("max", 0.0f).status());
  }
  return infer_same_as_input(ctx);
}

// The bound from input `input` (opset 11+) or from `attribute` (before), else T's own limit.
template <typename T>
Result<T> clip_bound(KernelContext& ctx, int input, const char* attribute, T limit) {
  return ops::clip_bound(ctx.node(), ctx.has_input(input) ? &ctx.input(input) : nullptr, attribute, limit);
}

Status run_clip(KernelContext& ctx) {
  Status status;
  NumericTypes::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Result<T> low = clip_bound(ctx, 1, "min", std::numeric_limits<T>::lowest());
    const Result<T> high = clip_bound(ctx, 2, "max", std::numeric_limits<T>::max());
    if (!low.is_ok() || !high.is_ok()) {
      status = low.is_ok() ? high.status() : low.status();
      return;
    }
    // min(max(x, low), high): with low > high every element becomes high, as ONNX specifies.
    map_elements<T, T>(
        ctx.output(0),
        [lo = *low, hi = *high](T x) {
          const T y = x < lo ? lo : x;
          return y > hi ? hi : y;
        },
        ctx.input(0));
  });
  return status;
}

Status infer_softmax(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_rank(0, 1, std::numeric_limits<int>::max()));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis, softmax_axis_attribute(ctx.node()));
  if (const Dims* dims = ctx.input_dims(0)) {
    FOVEA_TRY(normalize_axis(ctx, axis, static_cast<int>(dims->size())).status());
  }
  return infer_same_as_input(ctx);
}

template <typename T, bool kLog>
void softmax_rows(const T* in, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  const std::int64_t min_rows = std::max<std::int64_t>(1, kElementwiseMinChunk / n);
  parallel_for(outer * inner, min_rows, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t base = (row / inner) * n * inner + row % inner;
      T max = in[base];
      for (std::int64_t k = 1; k < n; ++k) max = std::max(max, in[base + k * inner]);
      double sum = 0;  // double: n may be large (a class axis of thousands)
      for (std::int64_t k = 0; k < n; ++k) {
        const T e = std::exp(in[base + k * inner] - max);
        if constexpr (!kLog) out[base + k * inner] = e;
        sum += static_cast<double>(e);
      }
      if constexpr (kLog) {
        const T log_sum = static_cast<T>(std::log(sum));
        for (std::int64_t k = 0; k < n; ++k) out[base + k * inner] = in[base + k * inner] - max - log_sum;
      } else {
        const T scale = static_cast<T>(1.0 / sum);
        for (std::int64_t k = 0; k < n; ++k) out[base + k * inner] *= scale;
      }
    }
  });
}

template <bool kLog>
Status run_softmax(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const SoftmaxRows rows, softmax_rows_of(ctx.node(), in.shape()));
  if (in.numel() == 0) return Status::ok();
  FloatTypes::dispatch(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_rows<T, kLog>(in.data<T>(), ctx.output(0).data<T>(), rows.outer, rows.n, rows.inner);
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Relu",
                   .infer = infer_unary<SignedTypes, ReluOp>,
                   .run = run_unary<SignedTypes, ReluOp>});
FOVEA_REGISTER_OP({.op_type = "LeakyRelu",
                   .infer = infer_unary<FloatTypes, LeakyReluOp>,
                   .run = run_unary<FloatTypes, LeakyReluOp>});
FOVEA_REGISTER_OP({.op_type = "Sigmoid",
                   .infer = infer_unary<FloatTypes, SigmoidOp>,
                   .run = run_unary<FloatTypes, SigmoidOp>});
FOVEA_REGISTER_OP({.op_type = "Tanh",
                   .infer = infer_unary<FloatTypes, TanhOp>,
                   .run = run_unary<FloatTypes, TanhOp>});
FOVEA_REGISTER_OP({.op_type = "HardSigmoid",
                   .infer = infer_unary<FloatTypes, HardSigmoidOp>,
                   .run = run_unary<FloatTypes, HardSigmoidOp>});
FOVEA_REGISTER_OP({.op_type = "HardSwish",
                   .infer = infer_unary<FloatTypes, HardSwishOp>,
                   .run = run_unary<FloatTypes, HardSwishOp>});
FOVEA_REGISTER_OP({.op_type = "Elu",
                   .infer = infer_unary<FloatTypes, EluOp>,
                   .run = run_unary<FloatTypes, EluOp>});
FOVEA_REGISTER_OP({.op_type = "Gelu",
                   .infer = infer_unary<FloatTypes, GeluOp>,
                   .run = run_unary<FloatTypes, GeluOp>});
FOVEA_REGISTER_OP({.op_type = "Clip", .max_inputs = 3, .infer = infer_clip, .run = run_clip});
FOVEA_REGISTER_OP({.op_type = "Softmax", .infer = infer_softmax, .run = run_softmax<false>});
FOVEA_REGISTER_OP({.op_type = "LogSoftmax", .infer = infer_softmax, .run = run_softmax<true>});

}  // namespace fovea::runtime::ops
