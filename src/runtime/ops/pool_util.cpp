#include "runtime/ops/pool_util.h"

#include <fmt/format.h>

namespace fovea::runtime::ops {

Result<PoolOptions> read_pool_options(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t include_pad, ctx.node().attr_int("count_include_pad", 0));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t storage_order, ctx.node().attr_int("storage_order", 0));
  if (storage_order != 0 && storage_order != 1) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("storage_order={} is not 0 or 1", storage_order));
  }
  return PoolOptions{include_pad != 0, storage_order == 1};
}

PoolPlan make_pool_plan(std::vector<WindowDim> dims, PoolOptions options) {
  PoolPlan plan{std::move(dims), options};
  const std::size_t rank = plan.dims.size();
  plan.in_strides.assign(rank, 1);
  plan.index_strides.assign(rank, 1);
  for (std::size_t d = rank; d-- > 1;) plan.in_strides[d - 1] = plan.in_strides[d] * plan.dims[d].in;
  for (std::size_t d = 1; d < rank; ++d)
    plan.index_strides[d] = plan.index_strides[d - 1] * plan.dims[d - 1].in;
  if (!options.column_major_indices) plan.index_strides = plan.in_strides;
  for (const WindowDim& d : plan.dims) {
    plan.in_plane *= d.in;
    plan.out_plane *= d.out;
    plan.kernel_size *= d.kernel;
  }
  return plan;
}

Result<PoolPlan> plan_pool(const InferContext& ctx, const Shape& shape) {
  FOVEA_ASSIGN_OR_RETURN(WindowAttributes window,
                         read_window_attributes(ctx, static_cast<int>(shape.size()) - 2, std::nullopt));
  FOVEA_ASSIGN_OR_RETURN(std::vector<WindowDim> dims, resolve_window(ctx, window, shape));
  FOVEA_ASSIGN_OR_RETURN(PoolOptions options, read_pool_options(ctx));
  return make_pool_plan(std::move(dims), options);
}

Result<PoolPlan> plan_nhwc_pool(const InferContext& ctx, const Shape& nhwc) {
  return plan_pool(ctx, permute_tensor_shape(nhwc, kNhwcToNchw));
}

}  // namespace fovea::runtime::ops
