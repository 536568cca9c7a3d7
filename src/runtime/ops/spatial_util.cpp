#include "runtime/ops/spatial_util.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "runtime/ops/conv_util.h"

namespace fovea::runtime::ops {

Result<RoiAlignPlan> roi_align_plan(const InferContext& ctx, const Shape& x, const Shape& rois) {
  if (x.size() != 4) {
    return ctx.error(StatusCode::kInvalidArgument, "X must be [N, C, H, W], got ", shape_string(x));
  }
  if (rois.size() != 2 || rois[1] != 4) {
    return ctx.error(StatusCode::kInvalidArgument, "rois must be [num_rois, 4], got ", shape_string(rois));
  }
  const Node& node = ctx.node();
  RoiAlignPlan plan;
  plan.channels = x[1];
  plan.height = x[2];
  plan.width = x[3];
  FOVEA_ASSIGN_OR_RETURN(plan.out_height, node.attr_int("output_height", 1));
  FOVEA_ASSIGN_OR_RETURN(plan.out_width, node.attr_int("output_width", 1));
  FOVEA_ASSIGN_OR_RETURN(plan.sampling_ratio, node.attr_int("sampling_ratio", 0));
  FOVEA_ASSIGN_OR_RETURN(plan.spatial_scale, node.attr_float("spatial_scale", 1.0f));
  FOVEA_ASSIGN_OR_RETURN(const std::string mode, node.attr_string("mode", "avg"));
  // Opset 16 added the attribute with half_pixel as its default; opset 10's boxes were
  // output_half_pixel (no half-pixel shift).
  FOVEA_ASSIGN_OR_RETURN(const std::string transform,
                         node.attr_string("coordinate_transformation_mode",
                                          ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel"));
  if (mode != "avg" && mode != "max") {
    return ctx.error(StatusCode::kInvalidArgument, "mode '", mode, "' is neither avg nor max");
  }
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    return ctx.error(StatusCode::kInvalidArgument, "coordinate_transformation_mode '", transform,
                     "' is neither half_pixel nor output_half_pixel");
  }
  if (plan.out_height < 1 || plan.out_width < 1 || plan.sampling_ratio < 0) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("output_height {} and output_width {} must be positive, sampling_ratio {} "
                                 "not negative",
                                 plan.out_height, plan.out_width, plan.sampling_ratio));
  }
  plan.half_pixel = transform == "half_pixel";
  plan.max_mode = mode == "max";
  return plan;
}

namespace {

Result<GridSampleMode> grid_sample_mode(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::string mode, ctx.node().attr_string("mode", "bilinear"));
  // Opset 20 renamed bilinear and bicubic to linear and cubic.
  if (mode == "bilinear" || mode == "linear") return GridSampleMode::kBilinear;
  if (mode == "nearest") return GridSampleMode::kNearest;
  if (mode == "bicubic" || mode == "cubic") return GridSampleMode::kBicubic;
  return ctx.error(StatusCode::kInvalidArgument, "mode '", mode, "' is not bilinear, nearest or bicubic");
}

Result<GridSamplePadding> grid_sample_padding(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::string padding, ctx.node().attr_string("padding_mode", "zeros"));
  if (padding == "zeros") return GridSamplePadding::kZeros;
  if (padding == "border") return GridSamplePadding::kBorder;
  if (padding == "reflection") return GridSamplePadding::kReflection;
  return ctx.error(StatusCode::kInvalidArgument, "padding_mode '", padding,
                   "' is not zeros, border or reflection");
}

}  // namespace

Result<GridSamplePlan> grid_sample_plan(const InferContext& ctx, const Shape& x, const Shape& grid) {
  if (x.size() != 4 || grid.size() != 4 || grid[3] != 2 || grid[0] != x[0]) {
    return ctx.error(StatusCode::kUnsupported,
                     "samples 4-D X [N, C, H, W] on grid [N, H_out, W_out, 2], got X ", shape_string(x),
                     " and grid ", shape_string(grid));
  }
  GridSamplePlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.mode, grid_sample_mode(ctx));
  FOVEA_ASSIGN_OR_RETURN(plan.padding, grid_sample_padding(ctx));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t align_corners, ctx.node().attr_int("align_corners", 0));
  plan.align_corners = align_corners != 0;
  plan.channels = x[1];
  plan.height = x[2];
  plan.width = x[3];
  plan.out_height = grid[1];
  plan.out_width = grid[2];
  return plan;
}

Result<LrnPlan> lrn_plan(const InferContext& ctx, const Shape& x) {
  if (x.size() < 3) {
    return ctx.error(StatusCode::kInvalidArgument, "X must be [N, C, d1, ...], got ", shape_string(x));
  }
  const Node& node = ctx.node();
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t size, node.attr_int("size"));
  if (size < 1) return ctx.error(StatusCode::kInvalidArgument, fmt::format("size {} is below 1", size));
  FOVEA_ASSIGN_OR_RETURN(const float alpha, node.attr_float("alpha", 1e-4f));
  LrnPlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.beta, node.attr_float("beta", 0.75f));
  FOVEA_ASSIGN_OR_RETURN(plan.bias, node.attr_float("bias", 1.0f));
  plan.alpha_over_size = alpha / static_cast<float>(size);
  plan.before = (size - 1) / 2;
  plan.after = size / 2;  // ceil((size - 1) / 2)
  plan.channels = x[1];
  for (std::size_t d = 2; d < x.size(); ++d) plan.plane *= x[d];
  return plan;
}

Result<MaxUnpoolPlan> max_unpool_plan(const InferContext& ctx, const Shape& x, const Tensor* output_shape) {
  if (x.size() < 3) {
    return ctx.error(StatusCode::kInvalidArgument, "X must be [N, C, d1, ...], got ", shape_string(x));
  }
  const int spatial = static_cast<int>(x.size()) - 2;
  FOVEA_ASSIGN_OR_RETURN(const WindowAttributes window, read_window_attributes(ctx, spatial, std::nullopt));
  MaxUnpoolPlan plan;
  plan.rank = static_cast<int>(x.size());
  for (int d = 0; d < plan.rank; ++d) {
    const auto sd = static_cast<std::size_t>(d);
    if (d < 2) {
      plan.unpooled[d] = x[sd];
      continue;
    }
    const std::size_t s = sd - 2;
    plan.unpooled[d] = (x[sd] - 1) * window.strides[s] + window.kernel[s] - window.pads[s] -
                       window.pads[s + static_cast<std::size_t>(spatial)];
  }
  std::copy(plan.unpooled, plan.unpooled + plan.rank, plan.out);
  if (output_shape == nullptr) return plan;
  if (output_shape->numel() != plan.rank) {
    return ctx.error(StatusCode::kInvalidArgument, "output_shape has ", std::to_string(output_shape->numel()),
                     " values for X of rank ", std::to_string(plan.rank));
  }
  for (int d = 0; d < plan.rank; ++d) {
    plan.out[d] = integer_at(*output_shape, d);
    if (d < 2 ? plan.out[d] != plan.unpooled[d] : plan.out[d] < plan.unpooled[d]) {
      return ctx.error(StatusCode::kInvalidArgument, "output_shape ",
                       shape_string(max_unpool_output_shape(plan)), " cannot hold the unpooled ",
                       shape_string(Shape(plan.unpooled, plan.unpooled + plan.rank)));
    }
  }
  return plan;
}

}  // namespace fovea::runtime::ops
