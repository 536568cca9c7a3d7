// Einsum on CUDA: one generic contraction kernel, one thread per output element summing over the
// summed labels with the CPU reference's plan and loop (ops/einsum_util.h). Correct for every
// equation the CPU takes; batched matmuls that dominate a model's time belong to MatMul's cuBLASLt
// kernels, which an exporter emits for them.
//
//   dtypes: float32/64 and float16 (accumulated in float), int64, int32 (accumulated in int64)
#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/einsum_util.h"

namespace fovea::runtime::cuda {
namespace {

using ops::EinsumPlan;
using ops::kMaxEinsumOperands;

#define FOVEA_CUDA_EINSUM_TYPES FOVEA_CUDA_FLOAT_TYPES, ::fovea::DataType::kInt64, ::fovea::DataType::kInt32

// The operands' device pointers, passed by value.
template <typename T>
struct Operands {
  const T* data[kMaxEinsumOperands] = {};
};

template <typename T>
using EinsumAccumulator = std::conditional_t<std::is_integral_v<T>, std::int64_t, ComputeType<T>>;

template <typename T>
__global__ void einsum(Operands<T> operands, T* __restrict__ out, EinsumPlan plan, std::int64_t n) {
  using A = EinsumAccumulator<T>;
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    store_compute(out, o, ops::einsum_value<A>(plan, o, [&](int k, std::int64_t offset) {
                    return static_cast<A>(load_compute(operands.data[k], offset));
                  }));
  }
}

Status run_einsum(CudaKernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.input_count(); ++i) shapes.push_back(ctx.input(i).shape());
  FOVEA_ASSIGN_OR_RETURN(const EinsumPlan plan, ops::einsum_plan(ctx.inference(), shapes));
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_EINSUM_TYPES>(ctx, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Operands<T> operands;
    for (int k = 0; k < plan.operands; ++k) operands.data[k] = ctx.input(k).data<T>();
    einsum<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(operands, out.data<T>(), plan,
                                                                   out.numel());
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Einsum", .run = run_einsum});

}  // namespace fovea::runtime::cuda
