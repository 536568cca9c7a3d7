#include "runtime/ops/movement_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace fovea::runtime::ops {

SliceAxis slice_axis(std::int64_t start, std::int64_t end, std::int64_t step, std::int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
  } else {
    start = std::clamp<std::int64_t>(start, 0, dim - 1);
    end = std::clamp<std::int64_t>(end, -1, dim - 1);
  }
  const std::int64_t span = step > 0 ? end - start : start - end;
  if (span <= 0) return SliceAxis{start, step, Dim::known_size(0)};
  // In unsigned arithmetic: -step overflows for INT64_MIN, and span + stride - 1 for a step near
  // INT64_MAX (one element either way).
  const std::uint64_t stride =
      step > 0 ? static_cast<std::uint64_t>(step) : static_cast<std::uint64_t>(-(step + 1)) + 1;
  const auto whole = static_cast<std::uint64_t>(span);
  const std::uint64_t count = whole / stride + (whole % stride != 0 ? 1 : 0);
  return SliceAxis{start, step, Dim::known_size(static_cast<std::int64_t>(count))};
}

Result<std::optional<std::vector<SliceAxis>>> slice_plan(const InferContext& ctx, const Dims& in) {
  FOVEA_ASSIGN_OR_RETURN(const IntOperand starts, int_operand(ctx, "starts", 1, 10));
  FOVEA_ASSIGN_OR_RETURN(const IntOperand ends, int_operand(ctx, "ends", 2, 10));
  FOVEA_ASSIGN_OR_RETURN(const IntOperand axes, int_operand(ctx, "axes", 3, 10));
  FOVEA_ASSIGN_OR_RETURN(const IntOperand steps, int_operand(ctx, "steps", 4, 10));
  if (!starts.given || !ends.given)
    return ctx.error(StatusCode::kInvalidArgument, "starts and ends are required");
  if (!starts.values || !ends.values || (axes.given && !axes.values) || (steps.given && !steps.values)) {
    return std::optional<std::vector<SliceAxis>>();
  }
  const std::size_t count = starts.values->size();
  std::vector<std::int64_t> axis_list(count);
  for (std::size_t i = 0; i < count; ++i) axis_list[i] = static_cast<std::int64_t>(i);
  if (axes.given) axis_list = *axes.values;
  const std::vector<std::int64_t> step_list =
      steps.given ? *steps.values : std::vector<std::int64_t>(count, 1);
  if (ends.values->size() != count || axis_list.size() != count || step_list.size() != count) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("starts, ends, axes and steps have different lengths ({}, {}, {}, {})",
                                 count, ends.values->size(), axis_list.size(), step_list.size()));
  }
  FOVEA_ASSIGN_OR_RETURN(const std::vector<int> normalized,
                         normalize_axes(ctx, axis_list, static_cast<int>(in.size())));
  std::vector<SliceAxis> plan;
  for (const Dim& dim : in) plan.push_back(SliceAxis{0, 1, dim});
  for (std::size_t i = 0; i < count; ++i) {
    if (step_list[i] == 0) return ctx.error(StatusCode::kInvalidArgument, "a slice step is 0");
    const auto axis = static_cast<std::size_t>(normalized[i]);
    plan[axis] = in[axis].known()
                     ? slice_axis((*starts.values)[i], (*ends.values)[i], step_list[i], in[axis].value)
                     : SliceAxis{0, step_list[i], Dim::unknown()};
  }
  return std::optional(std::move(plan));
}

Result<std::vector<std::int64_t>> transpose_perm(const InferContext& ctx, int rank) {
  std::vector<std::int64_t> reversed;
  for (int d = rank; d-- > 0;) reversed.push_back(d);
  FOVEA_ASSIGN_OR_RETURN(std::vector<std::int64_t> perm, ctx.node().attr_ints("perm", reversed));
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t d = 0; d < sorted.size(); ++d) {
    if (sorted[d] != static_cast<std::int64_t>(d) || sorted.size() != static_cast<std::size_t>(rank)) {
      return ctx.error(
          StatusCode::kInvalidArgument,
          fmt::format("perm [{}] is not a permutation of the {} axes", fmt::join(perm, ", "), rank));
    }
  }
  return perm;
}

Result<PadMode> pad_mode(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::string mode, ctx.node().attr_string("mode", "constant"));
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap" && ctx.opset() >= 19) return PadMode::kWrap;
  return ctx.error(StatusCode::kInvalidArgument, fmt::format("unknown pad mode '{}'", mode));
}

Result<std::optional<PadPlan>> pad_plan(const InferContext& ctx, int rank) {
  PadPlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.mode, pad_mode(ctx));
  FOVEA_ASSIGN_OR_RETURN(const IntOperand pads, int_operand(ctx, "pads", 1, 11));
  FOVEA_ASSIGN_OR_RETURN(const IntOperand axes, int_operand(ctx, "axes", 3, 18));
  if (!pads.given) return ctx.error(StatusCode::kInvalidArgument, "pads are required");
  if (!pads.values || (axes.given && !axes.values)) return std::optional<PadPlan>();
  std::vector<int> axis_list;
  if (axes.given) {
    FOVEA_ASSIGN_OR_RETURN(axis_list, normalize_axes(ctx, *axes.values, rank));
  } else {
    for (int d = 0; d < rank; ++d) axis_list.push_back(d);
  }
  const std::vector<std::int64_t>& values = *pads.values;
  if (values.size() != 2 * axis_list.size()) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("pads has {} entries, expected {} (begin and end for {} axes)",
                                 values.size(), 2 * axis_list.size(), axis_list.size()));
  }
  plan.begin.assign(static_cast<std::size_t>(rank), 0);
  plan.end.assign(static_cast<std::size_t>(rank), 0);
  for (std::size_t i = 0; i < axis_list.size(); ++i) {
    plan.begin[static_cast<std::size_t>(axis_list[i])] = values[i];
    plan.end[static_cast<std::size_t>(axis_list[i])] = values[i + axis_list.size()];
  }
  return std::optional(std::move(plan));
}

}  // namespace fovea::runtime::ops
