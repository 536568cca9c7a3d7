#include "runtime/ops/data_dependent_util.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {
namespace {

// `input` as [outer, n, inner] around `axis`, or flattened without one.
template <typename Plan>
void split_at_axis(Plan& plan, const Shape& input) {
  if (!plan.axis) {
    plan.n = element_count(input);
    return;
  }
  for (int d = 0; d < static_cast<int>(input.size()); ++d) {
    const std::int64_t size = input[static_cast<std::size_t>(d)];
    if (d < *plan.axis) plan.outer *= size;
    if (d == *plan.axis) plan.n = size;
    if (d > *plan.axis) plan.inner *= size;
  }
}

// The node's optional axis attribute, normalized for `rank`.
Result<std::optional<int>> optional_axis(const InferContext& ctx, int rank) {
  if (!ctx.node().has_attribute("axis")) return std::optional<int>();
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis, ctx.node().attr_int("axis"));
  FOVEA_ASSIGN_OR_RETURN(const int normalized, normalize_axis(ctx, axis, rank));
  return std::optional<int>(normalized);
}

}  // namespace

Result<CompressPlan> compress_plan(const InferContext& ctx, const Shape& input,
                                   std::int64_t condition_length) {
  CompressPlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.axis, optional_axis(ctx, static_cast<int>(input.size())));
  split_at_axis(plan, input);
  plan.conditions = std::min(condition_length, plan.n);
  return plan;
}

Shape compress_output_shape(const CompressPlan& plan, const Shape& input, std::int64_t kept) {
  if (!plan.axis) return Shape{kept};
  Shape out = input;
  out[static_cast<std::size_t>(*plan.axis)] = kept;
  return out;
}

Result<UniquePlan> unique_plan(const InferContext& ctx, const Shape& input) {
  UniquePlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.axis, optional_axis(ctx, static_cast<int>(input.size())));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t sorted, ctx.node().attr_int("sorted", 1));
  plan.sorted = sorted != 0;
  split_at_axis(plan, input);
  return plan;
}

}  // namespace fovea::runtime::ops
