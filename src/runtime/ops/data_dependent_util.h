// Shapes and plans of the ops whose output size depends on the input's values (NonZero, Compress,
// Unique), shared by the CPU reference (data_dependent.cpp) and the CUDA kernels
// (cuda/ops/data_dependent.cu). On CUDA such an output is planned at its bound (the most elements
// the op can select) and the kernel writes how many rows it filled; the executor trims the first
// dim to that count (cuda_op.h), so only outputs whose first dim varies can run there.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/op.h"

namespace fovea::runtime::ops {

// ---- Compress ----

// The input as [outer, n, inner] around the axis (without one: the flattened input, n = its
// elements); slice k of the n is kept when condition[k] is true, k < condition's length.
struct CompressPlan {
  std::optional<int> axis;  // nullopt: the input is flattened
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
  std::int64_t conditions = 0;  // the condition's elements that count: min(its length, n)
};
Result<CompressPlan> compress_plan(const InferContext& ctx, const Shape& input,
                                   std::int64_t condition_length);
// The output's shape for `kept` slices.
Shape compress_output_shape(const CompressPlan& plan, const Shape& input, std::int64_t kept);

// ---- Unique ----

// The input as [outer, n, inner] around the axis attribute (without one: flattened, n = its
// elements): Unique finds the distinct slices among the n.
struct UniquePlan {
  std::optional<int> axis;
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
  bool sorted = true;
};
Result<UniquePlan> unique_plan(const InferContext& ctx, const Shape& input);

}  // namespace fovea::runtime::ops
