// Ops whose output is their input's bytes under another shape. The executor places the output on
// the input (no work at all); run() is the copy for when it cannot, e.g. when the output is a graph
// output and needs its own buffer.
#include "core/cuda_check.h"
#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {

namespace {

Status run_copy(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  FOVEA_CUDA_TRY(cudaMemcpyAsync(out.raw(), in.raw(), out.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
  return Status::ok();
}

// Inference-mode Dropout keeps everything: the copy, and a mask of ones when it is asked for. It
// is not a view because of that second output (passes remove Dropout before plans get here).
Status run_dropout(CudaKernelContext& ctx) {
  FOVEA_TRY(run_copy(ctx));
  if (ctx.output_count() > 1 && !ctx.output(1).empty_storage()) {
    Tensor& mask = ctx.output(1);
    FOVEA_CUDA_TRY(cudaMemsetAsync(mask.raw(), 1, mask.bytes(), ctx.stream()));
  }
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Dropout", .run = run_dropout});
FOVEA_REGISTER_CUDA_OP({.op_type = "Identity", .run = run_copy, .aliases_input = true});
FOVEA_REGISTER_CUDA_OP({.op_type = "Reshape", .run = run_copy, .aliases_input = true});
FOVEA_REGISTER_CUDA_OP({.op_type = "Flatten", .run = run_copy, .aliases_input = true});
FOVEA_REGISTER_CUDA_OP({.op_type = "Squeeze", .run = run_copy, .aliases_input = true});
FOVEA_REGISTER_CUDA_OP({.op_type = "Unsqueeze", .run = run_copy, .aliases_input = true});

}  // namespace fovea::runtime::cuda
