// CastLike on CUDA: Cast's kernel (cast.h), to the output's dtype, which infer() took from input 1.
#include "runtime/cuda/ops/cast.h"

namespace fovea::runtime::cuda {

FOVEA_REGISTER_CUDA_OP({.op_type = "CastLike", .run = run_cast});

}  // namespace fovea::runtime::cuda
