// The pointwise math ops that ONNX models bring beyond the basic arithmetic (trigonometric and
// hyperbolic functions, Round, Sign, IsNaN, IsInf, Mod, PRelu and the smaller activations), written
// once as functors (FOVEA_HD) for the CPU reference (pointwise_math.cpp) and the CUDA kernels
// (cuda/ops/pointwise_math.cu), with the attribute reading they share. The functors take float or
// double (CUDA's float16 computes in float), and integers where the op takes them.
//
// The math functions are the C library's names (cosf/cos...), which both the host's libm and
// CUDA's device math library provide, so one body serves both sides.
#pragma once

#include <math.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/host_device.h"
#include "runtime/op.h"
#include "runtime/ops/integer_math.h"

namespace fovea::runtime::ops {

// A functor applying one C math function, in float for float and in double for double.
#define FOVEA_MATH_FUNCTOR(Name, function)                              \
  struct Name {                                                         \
    FOVEA_HD float operator()(float x) const { return function##f(x); } \
    FOVEA_HD double operator()(double x) const { return function(x); }  \
  }

FOVEA_MATH_FUNCTOR(CosOp, cos);
FOVEA_MATH_FUNCTOR(SinOp, sin);
FOVEA_MATH_FUNCTOR(TanOp, tan);
FOVEA_MATH_FUNCTOR(AcosOp, acos);
FOVEA_MATH_FUNCTOR(AsinOp, asin);
FOVEA_MATH_FUNCTOR(AtanOp, atan);
FOVEA_MATH_FUNCTOR(SinhOp, sinh);
FOVEA_MATH_FUNCTOR(CoshOp, cosh);
FOVEA_MATH_FUNCTOR(AsinhOp, asinh);
FOVEA_MATH_FUNCTOR(AcoshOp, acosh);
FOVEA_MATH_FUNCTOR(AtanhOp, atanh);
// rint rounds in the default rounding mode, to nearest with halves to even, as Round specifies.
FOVEA_MATH_FUNCTOR(RoundOp, rint);
FOVEA_MATH_FUNCTOR(ExpOf, exp);
FOVEA_MATH_FUNCTOR(Expm1Of, expm1);
FOVEA_MATH_FUNCTOR(Log1pOf, log1p);

#undef FOVEA_MATH_FUNCTOR

struct FmodOf {
  FOVEA_HD float operator()(float a, float b) const { return fmodf(a, b); }
  FOVEA_HD double operator()(double a, double b) const { return fmod(a, b); }
};

// -1, 0 or 1 by the sign of x; NaN stays NaN (numpy.sign).
struct SignOp {
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    if (x != x) return x;  // NaN (never true for integers)
    if (x > T{0}) return T{1};
    if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) {
      if (x < T{0}) return static_cast<T>(-1);
    }
    return T{0};
  }
};

struct IsNaNOp {
  template <typename T>
  FOVEA_HD bool operator()(T x) const {
    return x != x;
  }
};

// Which infinities IsInf reports (both by default).
struct IsInfOp {
  bool positive = true;
  bool negative = true;
  static Result<IsInfOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t positive, node.attr_int("detect_positive", 1));
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t negative, node.attr_int("detect_negative", 1));
    return IsInfOp{positive != 0, negative != 0};
  }
  template <typename T>
  FOVEA_HD bool operator()(T x) const {
    const auto infinity = static_cast<T>(INFINITY);
    return (positive && x == infinity) || (negative && x == -infinity);
  }
};

// max(0, x) + min(0, alpha * (e^(x / alpha) - 1)).
struct CeluOp {
  float alpha = 1;
  static Result<CeluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const float alpha, node.attr_float("alpha", 1.0f));
    if (alpha == 0.0f) return make_error(StatusCode::kInvalidArgument, "Celu's alpha must not be 0");
    return CeluOp{alpha};
  }
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    const auto a = static_cast<T>(alpha);
    return x > T{0} ? x : a * Expm1Of{}(x / a);
  }
};

// gamma * x above 0, gamma * alpha * (e^x - 1) below; the defaults are SELU's self-normalizing
// constants, as float32 (the spec's values).
struct SeluOp {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214050292968750f;
  static Result<SeluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const float alpha, node.attr_float("alpha", SeluOp{}.alpha));
    FOVEA_ASSIGN_OR_RETURN(const float gamma, node.attr_float("gamma", SeluOp{}.gamma));
    return SeluOp{alpha, gamma};
  }
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    return static_cast<T>(gamma) * (x > T{0} ? x : static_cast<T>(alpha) * Expm1Of{}(x));
  }
};

struct ThresholdedReluOp {
  float alpha = 1;
  static Result<ThresholdedReluOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const float alpha, node.attr_float("alpha", 1.0f));
    return ThresholdedReluOp{alpha};
  }
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    return x > static_cast<T>(alpha) ? x : T{0};
  }
};

// x + bias below -lambd, x - bias above lambd, 0 between.
struct ShrinkOp {
  float bias = 0;
  float lambd = 0.5f;
  static Result<ShrinkOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const float bias, node.attr_float("bias", 0.0f));
    FOVEA_ASSIGN_OR_RETURN(const float lambd, node.attr_float("lambd", 0.5f));
    return ShrinkOp{bias, lambd};
  }
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    if (x < -static_cast<T>(lambd)) return x + static_cast<T>(bias);
    if (x > static_cast<T>(lambd)) return x - static_cast<T>(bias);
    return T{0};
  }
};

// log(1 + e^x), written so that e^x never overflows: x + log(1 + e^-x) for positive x.
struct SoftplusOp {
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    return x > T{0} ? x + Log1pOf{}(ExpOf{}(-x)) : Log1pOf{}(ExpOf{}(x));
  }
};

struct SoftsignOp {
  template <typename T>
  FOVEA_HD T operator()(T x) const {
    return x / (T{1} + (x < T{0} ? -x : x));
  }
};

// x where x >= 0, slope * x below (integers wrap like Mul).
struct PReluOp {
  template <typename T>
  FOVEA_HD T operator()(T x, T slope) const {
    if (!(x < T{0})) return x;
    if constexpr (std::is_integral_v<T>) {
      return wrapping_mul(x, slope);
    } else {
      return slope * x;
    }
  }
};

// The remainder of a / b. fmod = 1: truncated division, the sign of a (C's fmod and %); fmod = 0
// (integers only): floored division, the sign of b (Python's %). A zero divisor gives 0 for
// integers, as integer Div does, instead of a trap.
struct ModOp {
  bool fmod = false;
  static Result<ModOp> make(const Node& node) {
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t fmod, node.attr_int("fmod", 0));
    if (fmod != 0 && fmod != 1) {
      return make_error(StatusCode::kInvalidArgument, "Mod's fmod must be 0 or 1, got ",
                        std::to_string(fmod));
    }
    return ModOp{fmod == 1};
  }
  template <typename T>
  FOVEA_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return FmodOf{}(a, b);
    } else {
      // b == -1 divides everything exactly; lowest() % -1 would overflow.
      if (b == T{0}) return T{0};
      if constexpr (std::is_signed_v<T>) {
        if (b == static_cast<T>(-1)) return T{0};
        auto r = static_cast<T>(a % b);
        if (!fmod && r != T{0} && ((r < T{0}) != (b < T{0}))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};

// PRelu's slope as it broadcasts against x. Before opset 7 a 1-D slope of x's channel count
// applies per channel (axis 1), as the PyTorch exporter of the time wrote PReLU's weight; it reads
// as [C, 1, ..., 1]. Otherwise the slope broadcasts the numpy way.
Shape prelu_slope_shape(int opset, const Shape& x, const Shape& slope);

}  // namespace fovea::runtime::ops
