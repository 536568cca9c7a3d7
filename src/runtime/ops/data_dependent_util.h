// Shapes and plans of the ops whose output size depends on the input's values (NonZero, Compress,
// Unique), shared by the CPU reference (data_dependent.cpp) and the CUDA kernels
// (cuda/ops/data_dependent.cu). On CUDA such an output is planned at its bound (the most elements
// the op can select) and the kernel writes how many rows it filled; the executor trims the first
// dim to that count (cuda_op.h), so only outputs whose first dim varies can run there.
#pragma once

#include <cstdint>
#include <optional>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

// A tensor as [outer, n, inner] around an axis (without one: flattened, n = its elements), as n
// slices of outer * inner elements each.
struct SliceLayout {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};

// ---- Compress ----

// Slice k is kept when condition[k] is true, for k below the condition's length.
struct CompressPlan {
  std::optional<int> axis;  // nullopt: the input is flattened
  SliceLayout layout;
  std::int64_t conditions = 0;  // the condition's elements that count: min(its length, n)
};
Result<CompressPlan> compress_plan(const InferContext& ctx, const Shape& input,
                                   std::int64_t condition_length);
// The output's shape for `kept` slices.
Shape compress_output_shape(const CompressPlan& plan, const Shape& input, std::int64_t kept);

// ---- Unique ----

// Unique finds the distinct slices around its axis attribute.
struct UniquePlan {
  std::optional<int> axis;
  SliceLayout layout;
  bool sorted = true;
};
Result<UniquePlan> unique_plan(const InferContext& ctx, const Shape& input);
// Y's shape for `distinct` slices.
Shape unique_output_shape(const UniquePlan& plan, const Shape& input, std::int64_t distinct);

// A strict weak order on values: NaN above every number and equal to itself (v != v only for NaN).
template <typename C>
FOVEA_HD bool unique_value_less(C a, C b) {
  if (a != a) return false;
  if (b != b) return true;
  return a < b;
}

// Slice a against slice b, element by element in row-major order: -1, 0 or 1. load(o) reads
// element o of the input.
template <typename Load>
FOVEA_HD int unique_compare(const SliceLayout& layout, std::int64_t a, std::int64_t b, Load load) {
  for (std::int64_t outer = 0; outer < layout.outer; ++outer) {
    const std::int64_t row = outer * layout.n * layout.inner;
    for (std::int64_t i = 0; i < layout.inner; ++i) {
      const auto va = load(row + a * layout.inner + i);
      const auto vb = load(row + b * layout.inner + i);
      if (unique_value_less(va, vb)) return -1;
      if (unique_value_less(vb, va)) return 1;
    }
  }
  return 0;
}

}  // namespace fovea::runtime::ops
