// cuDNN and cuBLASLt for the CUDA executor: RAII handles, and their members of the error macro
// family (core/library_error.h).
#pragma once

#include <cublasLt.h>
#include <cudnn.h>

#include <memory>

#include "core/cuda_check.h"
#include "core/status.h"

namespace fovea::runtime::cuda {

namespace detail {
inline bool cudnn_ok(cudnnStatus_t s) {
  return s == CUDNN_STATUS_SUCCESS;
}
inline bool cublas_ok(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS;
}
}  // namespace detail

}  // namespace fovea::runtime::cuda

#define FOVEA_CUDNN_TRY(call)                                         \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "cuDNN", call, \
                    ::fovea::runtime::cuda::detail::cudnn_ok, cudnnGetErrorString)
#define FOVEA_CUBLAS_TRY(call)                                         \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "cuBLAS", call, \
                    ::fovea::runtime::cuda::detail::cublas_ok, cublasLtGetStatusString)

namespace fovea::runtime::cuda {

// One cuDNN and one cuBLASLt handle per executor. set_stream() binds cuDNN to the stream a run
// (or its graph capture) uses; cuBLASLt takes the stream per call.
struct CudaLibraries {
  static Result<std::unique_ptr<CudaLibraries>> create();
  ~CudaLibraries();
  CudaLibraries() = default;
  CudaLibraries(const CudaLibraries&) = delete;
  CudaLibraries& operator=(const CudaLibraries&) = delete;

  Status set_stream(cudaStream_t stream);

  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
};

}  // namespace fovea::runtime::cuda
