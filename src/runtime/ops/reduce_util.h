// Parameters of the ops that work along axes (the Reduce family, ArgMax/ArgMin, Softmax/LogSoftmax,
// TopK), derived once from a node and its concrete shapes so that the CPU reference and the CUDA
// kernels read the same attributes through the same checks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/op.h"

namespace fovea::runtime::ops {

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// L2, LogSum and LogSumExp are defined on floating types only.
bool reduction_needs_float(Reduction r);

// Which input dims are reduced; nullopt when the axes are an input whose value is not known yet.
struct ReducePlan {
  std::optional<std::vector<bool>> reduced;
  bool keepdims = true;
};
// Axes are an attribute before opset 13 (ReduceSum) or 18 (the others) and an optional input from
// then on; empty axes reduce everything unless noop_with_empty_axes is set.
Result<ReducePlan> plan_reduce(const InferContext& ctx, Reduction r, int rank);

// A reduction of `shape` over the dims flagged in `reduced`, with size-1 dims dropped and
// neighbouring dims of the same kind merged: [4, 21, 7, 9] reduced over {2, 3} is [84 | 63]. Kernels
// take the common single-run case as [outer, reduced, inner] and walk the dims otherwise.
struct ReduceGeometry {
  std::vector<std::int64_t> dims;  // outermost first
  std::vector<bool> reduced;       // per entry of dims; neighbours always differ
  std::int64_t outer = 1;          // with one reduced run: the kept elements before it
  std::int64_t length = 1;         // the reduced elements per output
  std::int64_t inner = 1;          // with one reduced run: the kept elements after it
  bool single_run() const;
};
ReduceGeometry reduce_geometry(const Shape& shape, const std::vector<bool>& reduced);

struct ArgPlan {
  int axis = 0;
  bool keepdims = true;
  bool last = false;  // select_last_index
};
Result<ArgPlan> plan_arg(const InferContext& ctx, int rank);

// Softmax and LogSoftmax normalize over (outer, n, inner) rows. Opset 13+ normalizes along one axis
// (default -1); before, the input is coerced to 2-D at `axis` (default 1) and normalized over all
// dims from there on.
Result<std::int64_t> softmax_axis_attribute(const Node& node);
struct SoftmaxRows {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};
// `shape` passed shape inference (its axis is valid).
Result<SoftmaxRows> softmax_rows_of(const Node& node, const Shape& shape);

struct TopKPlan {
  int axis = 0;
  std::optional<std::int64_t> k;  // nullopt until the K input is known
  bool largest = true;
};
Result<TopKPlan> topk_plan(const InferContext& ctx, const Dims& in);

}  // namespace fovea::runtime::ops
