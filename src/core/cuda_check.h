// CUDA runtime error macro (cuBLAS and cuDNN join here when the runtime uses them). Only
// included by code compiled with FOVEA_HAVE_CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "core/library_error.h"

namespace fovea::detail {
inline bool cuda_ok(cudaError_t e) {
  return e == cudaSuccess;
}
inline const char* cuda_message(cudaError_t e) {
  return cudaGetErrorString(e);
}
}  // namespace fovea::detail

// Returns a kDeviceError Status from the enclosing function when a CUDA runtime call fails.
#define FOVEA_CUDA_TRY(call)                                                                           \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "CUDA runtime", call, ::fovea::detail::cuda_ok, \
                    ::fovea::detail::cuda_message)

// Kernel launches: checks the launch itself (configuration errors), not the kernel's completion.
#define FOVEA_CUDA_TRY_LAUNCH() FOVEA_CUDA_TRY(cudaGetLastError())
