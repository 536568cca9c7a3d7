// The one table of tolerances for comparing the CUDA executor with the CPU reference, by precision
// and by the kind of computation. Every entry says where its number comes from; tests use these
// names, never literals. A comparison passes when, for every element,
//   |cuda - cpu| <= abs_of_max * max|cpu| + rel * |cpu|.
#pragma once

#include "runtime/planner.h"

namespace fovea::runtime::testing {

enum class Accuracy {
  // A few operations per element (activations, arithmetic, movement, resize): only the last bits
  // differ (CUDA's fused multiply-add, libm vs CUDA math functions within 2 ulp).
  kPointwise,
  // Sums over many terms (Conv, Gemm, MatMul, reductions, softmax, normalization): the summation
  // order differs, so the error grows with the number of terms relative to the largest magnitudes.
  kAccumulating,
};

struct Tolerance {
  double abs_of_max = 0;  // times max|cpu| over the output
  double rel = 0;         // times |cpu| of the element
};

constexpr Tolerance cuda_tolerance(Precision precision, Accuracy accuracy) {
  if (precision == Precision::kFloat32) {
    // float32 has 24 significant bits (6e-8). Pointwise: 1e-6 covers a few ulps of libm vs CUDA
    // math. Accumulating: K-term sums in another order err by up to ~K * 6e-8 of the largest
    // partial sum; 1e-5 of max|cpu| covers K in the thousands (TF32 is never used: it would need 1e-3).
    return accuracy == Accuracy::kPointwise ? Tolerance{1e-6, 1e-6} : Tolerance{1e-5, 1e-5};
  }
  // float16 has 11 significant bits: rounding the result once costs up to 2^-11 = 4.9e-4 of it,
  // and the reference saw the same rounded inputs. Pointwise: that rounding plus float32 noise,
  // 1e-3. Accumulating: kernels may round partial results (tensor-core tiles, split-K) to half
  // before the final sum, several roundings of values up to max|cpu|: 4e-3 of max|cpu|.
  return accuracy == Accuracy::kPointwise ? Tolerance{1e-3, 1e-3} : Tolerance{4e-3, 2e-3};
}

// Whole models in float16 against the float32 CPU executor: every intermediate is rounded to half
// (2^-11 each) and the roundings compound through the layers; the criterion for real
// models, max|delta| <= 2e-2 * max|reference|.
inline constexpr Tolerance kModelFloat16Tolerance{2e-2, 0};

}  // namespace fovea::runtime::testing
