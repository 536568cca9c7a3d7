// Cast's CUDA kernel, shared with CastLike (cast_like.cu): it converts input 0 to whatever dtype
// the output has.
#pragma once

#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {

Status run_cast(CudaKernelContext& ctx);

}  // namespace fovea::runtime::cuda
