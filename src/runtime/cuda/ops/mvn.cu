// MeanVarianceNormalization on CUDA, with the CPU reference's plan and offsets (ops/mvn_util.h): a
// warp or a block per group (block_per_row), which reduces the sum of its members, then the sum of
// their squared deviations from the mean, and writes (x - mean) / (sqrt(variance) + 1e-9). The
// members of a group need not be contiguous (axes is any subset), so each is read through
// mvn_offset. float32 and float16 (float arithmetic).
#include "runtime/cuda/elementwise.cuh"
#include "runtime/cuda/group_reduce.cuh"
#include "runtime/cuda/reduce_ops.cuh"
#include "runtime/ops/mvn_util.h"

namespace fovea::runtime::cuda {
namespace {

#define FOVEA_CUDA_MVN_TYPES ::fovea::DataType::kFloat32, ::fovea::DataType::kFloat16

struct Plus {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename T, int kGroup>
__global__ void __launch_bounds__(kBlockSize)
    mvn(const T* __restrict__ x, T* __restrict__ y, ops::MvnPlan plan) {
  using Reducer = GroupReducer<float, kGroup, kBlockSize>;
  __shared__ typename Reducer::TempStorage storage;
  const auto members = static_cast<float>(plan.members);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * Reducer::kGroups;
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * Reducer::kGroups + Reducer::group();
       g < plan.groups; g += step) {
    float sum = 0.0f;
    for (std::int64_t m = Reducer::lane(); m < plan.members; m += kGroup) {
      sum += load_compute(x, ops::mvn_offset(plan, g, m));
    }
    const float mean = Reducer::all_reduce(storage, sum, Plus{}) / members;
    float squares = 0.0f;
    for (std::int64_t m = Reducer::lane(); m < plan.members; m += kGroup) {
      const float d = load_compute(x, ops::mvn_offset(plan, g, m)) - mean;
      squares += d * d;
    }
    const float variance = Reducer::all_reduce(storage, squares, Plus{}) / members;
    const float scale = 1.0f / (sqrt_of(variance) + static_cast<float>(ops::kMvnEpsilon));
    for (std::int64_t m = Reducer::lane(); m < plan.members; m += kGroup) {
      const std::int64_t at = ops::mvn_offset(plan, g, m);
      store_compute(y, at, (load_compute(x, at) - mean) * scale);
    }
  }
}

Status run_mvn(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ops::MvnPlan plan, ops::mvn_plan(ctx.inference(), x.shape()));
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_MVN_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    if (block_per_row(plan.groups, plan.members)) {
      mvn<T, kBlockSize><<<grid_for(plan.groups * kBlockSize), kBlockSize, 0, ctx.stream()>>>(in, out, plan);
    } else {
      mvn<T, kWarpSize><<<grid_for(plan.groups * kWarpSize), kBlockSize, 0, ctx.stream()>>>(in, out, plan);
    }
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "MeanVarianceNormalization", .run = run_mvn});

}  // namespace fovea::runtime::cuda
