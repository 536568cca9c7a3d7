// HannWindow, HammingWindow and BlackmanWindow on CUDA: one thread per sample computing the CPU
// reference's window_value (ops/window_util.h) in double, rounded once to the output's float32,
// float16 or float64. The size input must be a plan-time constant: it sets the output's shape,
// and a captured run cannot read it on the host.
#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/window_util.h"

namespace fovea::runtime::cuda {
namespace {

template <typename T>
__global__ void window(T* __restrict__ out, ops::WindowParams params) {
  FOVEA_GRID_STRIDE_LOOP(n, params.size) {
    store_compute(out, n, ops::window_value(params, n));
  }
}

Result<CudaPrepared> prepare_window(CudaKernelContext& ctx) {
  if (ctx.host_constant(0) == nullptr) {
    return ctx.error(StatusCode::kUnsupported, "needs a constant 'size' input on CUDA");
  }
  return CudaPrepared{};
}

Status run_window(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ops::WindowParams params,
                         ops::window_params(ctx.inference(), *ctx.host_constant(0)));
  if (params.size == 0) return Status::ok();
  Tensor& out = ctx.output(0);
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    window<<<grid_for(params.size), kBlockSize, 0, ctx.stream()>>>(out.data<T>(), params);
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "HannWindow", .prepare = prepare_window, .run = run_window});
FOVEA_REGISTER_CUDA_OP({.op_type = "HammingWindow", .prepare = prepare_window, .run = run_window});
FOVEA_REGISTER_CUDA_OP({.op_type = "BlackmanWindow", .prepare = prepare_window, .run = run_window});

}  // namespace fovea::runtime::cuda
