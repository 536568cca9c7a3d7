// Elementwise arithmetic with multidirectional (numpy) broadcasting: Add, Sub, Mul, Div, Pow,
// the variadic Max, Min, Sum and Mean, and the unary math functions.
//
//   op                         dtypes
//   Add Sub Mul Div            float32/64, int64/32/8, uint8 (integers wrap on overflow)
//   Max Min                    float32/64/16 (float16 through float32), int64/32/8, uint8
//   Pow                        base float32/64, int64/32; exponent any numeric dtype
//   Sum Mean                   float32/64
//   Neg                        float32/64, int64/32/8
//   Abs                        float32/64, int64/32/8, uint8
//   Sqrt Exp Log Reciprocal    float32/64
//   Floor Ceil Erf
//
// Integer Div truncates toward zero like C (as ONNX specifies); a zero divisor gives 0, as in the
// numpy reference, instead of the trap a raw C division would be.
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/integer_math.h"

namespace fovea::runtime::ops {
namespace {

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping_add(a, b);
    } else {
      return a + b;
    }
  }
};

struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping_sub(a, b);
    } else {
      return a - b;
    }
  }
};

struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping_mul(a, b);
    } else {
      return a * b;
    }
  }
};

struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T{0};
      // lowest() / -1 overflows (and traps on x86): negate with wrapping instead.
      if (std::is_signed_v<T> && b == static_cast<T>(-1)) return SubOp{}(T{0}, a);
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};

// NaN propagates, as in numpy.maximum / numpy.minimum.
struct MaxOp {
  template <typename T>
  T operator()(T a, T b) const {
    return (a > b || is_nan(a)) ? a : b;
  }
};

struct MinOp {
  template <typename T>
  T operator()(T a, T b) const {
    return (a < b || is_nan(a)) ? a : b;
  }
};

// Op on float16 elements computed in float32 (Half only stores), on other types as it is.
template <typename Op>
struct HalfThroughFloat {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, Half>) {
      return float_to_half(Op{}(half_to_float(a), half_to_float(b)));
    } else {
      return Op{}(a, b);
    }
  }
};

using MinMaxTypes = DTypes<FOVEA_NUMERIC_TYPES, DataType::kFloat16>;

struct NegOp {
  template <typename T>
  T operator()(T x) const {
    return SubOp{}(T{0}, x);
  }
};

struct AbsOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < T{0} ? NegOp{}(x) : x;
    }
  }
};

struct SqrtOp {
  template <typename T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};

struct ExpOp {
  template <typename T>
  T operator()(T x) const {
    return std::exp(x);
  }
};

struct LogOp {
  template <typename T>
  T operator()(T x) const {
    return std::log(x);
  }
};

struct ReciprocalOp {
  template <typename T>
  T operator()(T x) const {
    return T{1} / x;
  }
};

struct FloorOp {
  template <typename T>
  T operator()(T x) const {
    return std::floor(x);
  }
};

struct CeilOp {
  template <typename T>
  T operator()(T x) const {
    return std::ceil(x);
  }
};

struct ErfOp {
  template <typename T>
  T operator()(T x) const {
    return std::erf(x);
  }
};

// Pow's output has the base's dtype: a floating base computes in its own precision, an integer
// base with a floating exponent in double, truncated back like numpy's astype.
struct PowOp {
  template <typename T, typename E>
  T operator()(T base, E exponent) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(base, static_cast<T>(exponent));
    } else if constexpr (std::is_integral_v<E>) {
      return integer_power(base, exponent);
    } else {
      return convert_value<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    }
  }
};

using PowBaseTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32>;

Status infer_pow(InferContext& ctx) {
  FOVEA_TRY(PowBaseTypes::require(ctx, 0));
  FOVEA_TRY(NumericTypes::require(ctx, 1));
  return infer_broadcast_output(ctx, ctx.input_dtype(0));
}

Status run_pow(KernelContext& ctx) {
  PowBaseTypes::dispatch(ctx.input(0).dtype(), [&](auto base_tag) {
    using T = typename decltype(base_tag)::type;
    NumericTypes::dispatch(ctx.input(1).dtype(), [&](auto exponent_tag) {
      using E = typename decltype(exponent_tag)::type;
      map_elements<T, T, E>(ctx.output(0), PowOp{}, ctx.input(0), ctx.input(1));
    });
  });
  return Status::ok();
}

// Variadic ops (Max, Min, Sum, Mean): 1..N inputs of one dtype, broadcast together.
template <typename Types>
Status infer_variadic(InferContext& ctx) {
  FOVEA_TRY(Types::require(ctx, 0));
  for (int i = 1; i < ctx.input_count(); ++i) FOVEA_TRY(ctx.require_same_dtype(0, i));
  return infer_broadcast_output(ctx, ctx.input_dtype(0));
}

// Folds the inputs into the output in place: out = in0 broadcast, then out = op(out, in_i).
template <typename T, typename Op>
void fold_inputs(KernelContext& ctx, Op op) {
  Tensor& out = ctx.output(0);
  map_elements<T, T>(
      out, [](T x) { return x; }, ctx.input(0));
  for (int i = 1; i < ctx.input_count(); ++i) {
    map_elements<T, T, T>(out, op, out, ctx.input(i));
  }
}

template <typename Types, typename Op>
Status run_variadic(KernelContext& ctx) {
  Types::dispatch(ctx.input(0).dtype(),
                  [&](auto tag) { fold_inputs<typename decltype(tag)::type>(ctx, Op{}); });
  return Status::ok();
}

Status run_mean(KernelContext& ctx) {
  FloatTypes::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    fold_inputs<T>(ctx, AddOp{});
    const T count = static_cast<T>(ctx.input_count());
    map_elements<T, T>(
        ctx.output(0), [count](T x) { return x / count; }, ctx.output(0));
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Add",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, AddOp>,
                   .run = run_binary<NumericTypes, AddOp>});
FOVEA_REGISTER_OP({.op_type = "Sub",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, SubOp>,
                   .run = run_binary<NumericTypes, SubOp>});
FOVEA_REGISTER_OP({.op_type = "Mul",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, MulOp>,
                   .run = run_binary<NumericTypes, MulOp>});
FOVEA_REGISTER_OP({.op_type = "Div",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, DivOp>,
                   .run = run_binary<NumericTypes, DivOp>});
FOVEA_REGISTER_OP({.op_type = "Pow", .min_inputs = 2, .max_inputs = 2, .infer = infer_pow, .run = run_pow});
FOVEA_REGISTER_OP({.op_type = "Max",
                   .max_inputs = kVariadic,
                   .infer = infer_variadic<MinMaxTypes>,
                   .run = run_variadic<MinMaxTypes, HalfThroughFloat<MaxOp>>});
FOVEA_REGISTER_OP({.op_type = "Min",
                   .max_inputs = kVariadic,
                   .infer = infer_variadic<MinMaxTypes>,
                   .run = run_variadic<MinMaxTypes, HalfThroughFloat<MinOp>>});
FOVEA_REGISTER_OP({.op_type = "Sum",
                   .max_inputs = kVariadic,
                   .infer = infer_variadic<FloatTypes>,
                   .run = run_variadic<FloatTypes, AddOp>});
FOVEA_REGISTER_OP(
    {.op_type = "Mean", .max_inputs = kVariadic, .infer = infer_variadic<FloatTypes>, .run = run_mean});
FOVEA_REGISTER_OP({.op_type = "Neg",
                   .infer = infer_unary<SignedTypes, NegOp>,
                   .run = run_unary<SignedTypes, NegOp>});
FOVEA_REGISTER_OP({.op_type = "Abs",
                   .infer = infer_unary<NumericTypes, AbsOp>,
                   .run = run_unary<NumericTypes, AbsOp>});
FOVEA_REGISTER_OP({.op_type = "Sqrt",
                   .infer = infer_unary<FloatTypes, SqrtOp>,
                   .run = run_unary<FloatTypes, SqrtOp>});
FOVEA_REGISTER_OP({.op_type = "Exp",
                   .infer = infer_unary<FloatTypes, ExpOp>,
                   .run = run_unary<FloatTypes, ExpOp>});
FOVEA_REGISTER_OP({.op_type = "Log",
                   .infer = infer_unary<FloatTypes, LogOp>,
                   .run = run_unary<FloatTypes, LogOp>});
FOVEA_REGISTER_OP({.op_type = "Reciprocal",
                   .infer = infer_unary<FloatTypes, ReciprocalOp>,
                   .run = run_unary<FloatTypes, ReciprocalOp>});
FOVEA_REGISTER_OP({.op_type = "Floor",
                   .infer = infer_unary<FloatTypes, FloorOp>,
                   .run = run_unary<FloatTypes, FloorOp>});
FOVEA_REGISTER_OP({.op_type = "Ceil",
                   .infer = infer_unary<FloatTypes, CeilOp>,
                   .run = run_unary<FloatTypes, CeilOp>});
FOVEA_REGISTER_OP({.op_type = "Erf",
                   .infer = infer_unary<FloatTypes, ErfOp>,
                   .run = run_unary<FloatTypes, ErfOp>});

}  // namespace fovea::runtime::ops
