#include "runtime/ops/reduce_util.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {

namespace {

// The opset from which the op takes its axes as input 1.
int axes_input_opset(Reduction r) {
  return r == Reduction::kSum ? 13 : 18;
}

}  // namespace

bool reduction_needs_float(Reduction r) {
  return r == Reduction::kL2 || r == Reduction::kLogSum || r == Reduction::kLogSumExp;
}

Result<ReducePlan> plan_reduce(const InferContext& ctx, Reduction r, int rank) {
  ReducePlan plan;
  FOVEA_ASSIGN_OR_RETURN(std::int64_t keepdims, ctx.node().attr_int("keepdims", 1));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t noop, ctx.node().attr_int("noop_with_empty_axes", 0));
  plan.keepdims = keepdims != 0;
  std::vector<std::int64_t> axes;
  if (ctx.opset() >= axes_input_opset(r)) {
    if (ctx.has_input(1)) {
      FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
      const Tensor* value = ctx.input_value(1);
      if (value == nullptr) return plan;
      axes = integers_of(*value);
    }
  } else {
    FOVEA_ASSIGN_OR_RETURN(axes, ctx.node().attr_ints("axes", std::vector<std::int64_t>{}));
  }
  FOVEA_ASSIGN_OR_RETURN(std::vector<int> normalized, normalize_axes(ctx, axes, rank));
  // Empty axes reduce every dim, or none with noop_with_empty_axes.
  plan.reduced = std::vector<bool>(static_cast<std::size_t>(rank), axes.empty() && noop == 0);
  for (int a : normalized) (*plan.reduced)[static_cast<std::size_t>(a)] = true;
  return plan;
}

bool ReduceGeometry::single_run() const {
  return std::count(reduced.begin(), reduced.end(), true) <= 1;
}

ReduceGeometry reduce_geometry(const Shape& shape, const std::vector<bool>& reduced) {
  ReduceGeometry g;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // neither kind: it would only split a run
    if (!g.dims.empty() && g.reduced.back() == reduced[d]) {
      g.dims.back() *= shape[d];
    } else {
      g.dims.push_back(shape[d]);
      g.reduced.push_back(reduced[d]);
    }
  }
  const auto run = std::find(g.reduced.begin(), g.reduced.end(), true);
  const auto at = static_cast<std::size_t>(run - g.reduced.begin());
  g.outer = 1;
  g.length = 1;
  g.inner = 1;
  for (std::size_t i = 0; i < g.dims.size(); ++i) {
    if (g.reduced[i]) {
      g.length *= g.dims[i];
    } else if (i < at) {
      g.outer *= g.dims[i];
    } else {
      g.inner *= g.dims[i];
    }
  }
  return g;
}

Result<ArgPlan> plan_arg(const InferContext& ctx, int rank) {
  ArgPlan plan;
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis, ctx.node().attr_int("axis", 0));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t keepdims, ctx.node().attr_int("keepdims", 1));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t last, ctx.node().attr_int("select_last_index", 0));
  FOVEA_ASSIGN_OR_RETURN(plan.axis, normalize_axis(ctx, axis, rank));
  plan.keepdims = keepdims != 0;
  plan.last = last != 0;
  return plan;
}

Result<std::int64_t> softmax_axis_attribute(const Node& node) {
  return node.attr_int("axis", node.opset >= 13 ? -1 : 1);
}

Result<SoftmaxRows> softmax_rows_of(const Node& node, const Shape& shape) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis, softmax_axis_attribute(node));
  const auto rank = static_cast<std::int64_t>(shape.size());
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  const std::int64_t numel = element_count(shape);
  SoftmaxRows rows;
  rows.outer = element_count(Shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(a)));
  rows.n = node.opset >= 13 ? shape[a] : numel / std::max<std::int64_t>(rows.outer, 1);
  rows.inner = node.opset >= 13 ? numel / std::max<std::int64_t>(rows.outer * rows.n, 1) : 1;
  return rows;
}

Result<TopKPlan> topk_plan(const InferContext& ctx, const Dims& in) {
  TopKPlan plan;
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis, ctx.node().attr_int("axis", -1));
  FOVEA_ASSIGN_OR_RETURN(plan.axis, normalize_axis(ctx, axis, static_cast<int>(in.size())));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t largest, ctx.node().attr_int("largest", 1));
  plan.largest = largest != 0;
  if (ctx.opset() < 10) {
    FOVEA_ASSIGN_OR_RETURN(plan.k, ctx.node().attr_int("k"));
  } else if (!ctx.has_input(1)) {
    return ctx.error(StatusCode::kInvalidArgument, "input K is required from opset 10");
  } else {
    FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
    if (const Tensor* k = ctx.input_value(1)) {
      if (k->numel() != 1) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("K has {} elements, expected 1", k->numel()));
      }
      plan.k = integer_at(*k, 0);
    }
  }
  const Dim& dim = in[static_cast<std::size_t>(plan.axis)];
  if (plan.k && (*plan.k < 0 || (dim.known() && *plan.k > dim.value))) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("K={} is out of range for axis {} of size {}", *plan.k, plan.axis,
                                 dim.known() ? std::to_string(dim.value) : std::string("?")));
  }
  return plan;
}

}  // namespace fovea::runtime::ops
