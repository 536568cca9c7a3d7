// The concrete geometry of one MaxPool / AveragePool call, shared by the CPU reference and the CUDA
// kernels: the window per spatial dim (conv_util.h), the pooling options, and the strides that
// address a plane of the input and the Indices output.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ops/conv_util.h"

namespace fovea::runtime::ops {

enum class PoolKind { kMax, kAverage };

struct PoolOptions {
  bool count_include_pad = false;
  bool column_major_indices = false;  // storage_order = 1
};
Result<PoolOptions> read_pool_options(const InferContext& ctx);

struct PoolPlan {
  std::vector<WindowDim> dims;
  PoolOptions options;
  std::int64_t in_plane = 1;
  std::int64_t out_plane = 1;
  std::int64_t kernel_size = 1;
  Shape in_strides;     // row-major, within a plane
  Shape index_strides;  // for Indices: row- or column-major per storage_order
};
PoolPlan make_pool_plan(std::vector<WindowDim> dims, PoolOptions options);

// The plan for input `shape` [N, C, spatial...], which passed shape inference.
Result<PoolPlan> plan_pool(const InferContext& ctx, const Shape& shape);

// fovea.MaxPool (channels_last=1) pools input `nhwc` [N, H, W, C]: the plan of the same window over
// its NCHW view [N, C, H, W], which passed shape inference. Every dim, stride and size in it is
// NCHW's; the kernels address the NHWC layout themselves.
Result<PoolPlan> plan_nhwc_pool(const InferContext& ctx, const Shape& nhwc);

}  // namespace fovea::runtime::ops
