// Elementwise arithmetic on CUDA with the CPU reference's semantics (ops/elementwise.cpp): integers
// wrap on overflow, integer Div truncates and gives 0 for a zero divisor, Max/Min propagate NaN,
// integer Pow squares and wraps. float16 computes in float like the reference.
#include "runtime/cuda/elementwise.cuh"

namespace fovea::runtime::cuda {
namespace {

struct AddOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return ops::wrapping_add(a, b);
    } else {
      return a + b;
    }
  }
};

struct SubOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return ops::wrapping_sub(a, b);
    } else {
      return a - b;
    }
  }
};

struct MulOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return ops::wrapping_mul(a, b);
    } else {
      return a * b;
    }
  }
};

struct DivOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T{0};
      // lowest() / -1 overflows: negate with wrapping instead.
      if (std::is_signed_v<T> && b == static_cast<T>(-1)) return ops::wrapping_sub(T{0}, a);
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};

struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a > b || is_nan(a)) ? a : b;
  }
};

struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a < b || is_nan(a)) ? a : b;
  }
};

// The variadic ops fold up to kFoldInputs inputs per pass, left to right like the reference;
// later passes fold the output so far with the next inputs. `mean_of` is the input count on the
// pass that ends a Mean (it then divides), 0 otherwise.
constexpr std::size_t kFoldInputs = 4;

template <typename Op>
struct Fold {
  int mean_of = 0;
  template <typename C, typename... Rest>
  __device__ C operator()(C first, Rest... rest) const {
    ((first = Op{}(first, rest)), ...);
    if (mean_of != 0) first = first / static_cast<C>(mean_of);
    return first;
  }
};

template <std::size_t, typename T>
using Repeat = T;

template <typename T, typename Op, std::size_t... K>
Status fold_pass(CudaKernelContext& ctx, const Fold<Op>& fold, const Tensor* const* in,
                 std::index_sequence<K...>) {
  return launch_elementwise<T, Repeat<K, T>...>(ctx, fold, ctx.output(0), *in[K]...);
}

template <typename T, typename Op>
Status fold_pass(CudaKernelContext& ctx, const Fold<Op>& fold, const std::vector<const Tensor*>& in) {
  switch (in.size()) {
    case 1: return fold_pass<T>(ctx, fold, in.data(), std::make_index_sequence<1>{});
    case 2: return fold_pass<T>(ctx, fold, in.data(), std::make_index_sequence<2>{});
    case 3: return fold_pass<T>(ctx, fold, in.data(), std::make_index_sequence<3>{});
    default:
      FOVEA_CHECK(in.size() == kFoldInputs);
      return fold_pass<T>(ctx, fold, in.data(), std::make_index_sequence<kFoldInputs>{});
  }
}

template <typename Op, bool kMean, DataType... Ds>
Status run_variadic(CudaKernelContext& ctx) {
  return dispatch_elementwise<Ds...>(ctx, ctx.input(0).dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const int count = ctx.input_count();
    std::vector<const Tensor*> pass{&ctx.input(0)};
    int next = 1;
    while (true) {
      while (next < count && pass.size() < kFoldInputs) pass.push_back(&ctx.input(next++));
      FOVEA_TRY(fold_pass<T>(ctx, Fold<Op>{.mean_of = kMean && next == count ? count : 0}, pass));
      if (next == count) return Status::ok();
      pass.assign(1, &ctx.output(0));
    }
  });
}

struct NegOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return SubOp{}(T{0}, x);
  }
};

struct AbsOp {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < T{0} ? NegOp{}(x) : x;
    }
  }
};

// The math functions on float (float32 and float16 computing in float) and double.
struct SqrtOp {
  __device__ float operator()(float x) const { return sqrtf(x); }
  __device__ double operator()(double x) const { return sqrt(x); }
};

struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
  __device__ double operator()(double x) const { return exp(x); }
};

struct LogOp {
  __device__ float operator()(float x) const { return logf(x); }
  __device__ double operator()(double x) const { return log(x); }
};

struct ReciprocalOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return T{1} / x;
  }
};

struct FloorOp {
  __device__ float operator()(float x) const { return floorf(x); }
  __device__ double operator()(double x) const { return floor(x); }
};

struct CeilOp {
  __device__ float operator()(float x) const { return ceilf(x); }
  __device__ double operator()(double x) const { return ceil(x); }
};

struct ErfOp {
  __device__ float operator()(float x) const { return erff(x); }
  __device__ double operator()(double x) const { return erf(x); }
};

// The output has the base's dtype: a floating base computes in its own precision (float for
// float16), an integer base with a floating exponent in double, truncated back with saturation.
struct PowOp {
  template <typename T, typename E>
  __device__ T operator()(T base, E exponent) const {
    if constexpr (std::is_same_v<T, float>) {
      return powf(base, static_cast<float>(exponent));
    } else if constexpr (std::is_same_v<T, double>) {
      return pow(base, static_cast<double>(exponent));
    } else if constexpr (std::is_integral_v<E>) {
      return ops::integer_power(base, exponent);
    } else {
      return saturate_cast<T>(pow(static_cast<double>(base), static_cast<double>(exponent)));
    }
  }
};

Status run_pow(CudaKernelContext& ctx) {
  return dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32>(
      ctx, ctx.input(0).dtype(), [&](auto base_tag) {
        using T = typename decltype(base_tag)::type;
        return dispatch_elementwise<FOVEA_CUDA_NUMERIC_TYPES>(
            ctx, ctx.input(1).dtype(), [&](auto exponent_tag) {
              using E = typename decltype(exponent_tag)::type;
              return launch_elementwise<T, T, E>(ctx, PowOp{}, ctx.output(0), ctx.input(0), ctx.input(1));
            });
      });
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Add", .run = run_binary<AddOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sub", .run = run_binary<SubOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Mul", .run = run_binary<MulOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Div", .run = run_binary<DivOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Pow", .run = run_pow});
FOVEA_REGISTER_CUDA_OP({.op_type = "Max", .run = run_variadic<MaxOp, false, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Min", .run = run_variadic<MinOp, false, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sum", .run = run_variadic<AddOp, false, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Mean", .run = run_variadic<AddOp, true, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Neg", .run = run_unary<NegOp, FOVEA_CUDA_SIGNED_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Abs", .run = run_unary<AbsOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sqrt", .run = run_unary<SqrtOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Exp", .run = run_unary<ExpOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Log", .run = run_unary<LogOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Reciprocal", .run = run_unary<ReciprocalOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Floor", .run = run_unary<FloorOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Ceil", .run = run_unary<CeilOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Erf", .run = run_unary<ErfOp, FOVEA_CUDA_FLOAT_TYPES>});

}  // namespace fovea::runtime::cuda
