#include "runtime/ops/data_dependent_util.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {
namespace {

SliceLayout split_at_axis(std::optional<int> axis, const Shape& input) {
  SliceLayout layout;
  if (!axis) {
    layout.n = element_count(input);
    return layout;
  }
  for (int d = 0; d < static_cast<int>(input.size()); ++d) {
    const std::int64_t size = input[static_cast<std::size_t>(d)];
    if (d < *axis) layout.outer *= size;
    if (d == *axis) layout.n = size;
    if (d > *axis) layout.inner *= size;
  }
  return layout;
}

// The input's shape with `count` slices: 1-D without an axis.
Shape with_slices(std::optional<int> axis, const Shape& input, std::int64_t count) {
  if (!axis) return Shape{count};
  Shape out = input;
  out[static_cast<std::size_t>(*axis)] = count;
  return out;
}

// The node's optional axis attribute, normalized for `rank`.
Result<std::optional<int>> optional_axis(const InferContext& ctx, int rank) {
  if (!ctx.node().has_attribute("axis")) return std::optional<int>();
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis, ctx.node().attr_int("axis"));
  if (rank == 0) {
    return ctx.error(StatusCode::kInvalidArgument,
                     "axis is set but the input is a scalar, which has no axis");
  }
  FOVEA_ASSIGN_OR_RETURN(const int normalized, normalize_axis(ctx, axis, rank));
  return std::optional<int>(normalized);
}

}  // namespace

Result<CompressPlan> compress_plan(const InferContext& ctx, const Shape& input,
                                   std::int64_t condition_length) {
  CompressPlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.axis, optional_axis(ctx, static_cast<int>(input.size())));
  plan.layout = split_at_axis(plan.axis, input);
  plan.conditions = std::min(condition_length, plan.layout.n);
  return plan;
}

Shape compress_output_shape(const CompressPlan& plan, const Shape& input, std::int64_t kept) {
  return with_slices(plan.axis, input, kept);
}

Result<UniquePlan> unique_plan(const InferContext& ctx, const Shape& input) {
  UniquePlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.axis, optional_axis(ctx, static_cast<int>(input.size())));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t sorted, ctx.node().attr_int("sorted", 1));
  plan.sorted = sorted != 0;
  plan.layout = split_at_axis(plan.axis, input);
  return plan;
}

Shape unique_output_shape(const UniquePlan& plan, const Shape& input, std::int64_t distinct) {
  return with_slices(plan.axis, input, distinct);
}

}  // namespace fovea::runtime::ops
