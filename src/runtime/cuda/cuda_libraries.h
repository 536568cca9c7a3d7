// cuDNN and cuBLASLt for the CUDA executor: RAII handles, and their members of the error macro
// family (core/library_error.h).
#pragma once

#include <cublasLt.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "core/cuda_check.h"
#include "core/status.h"

namespace fovea::runtime::cuda {

// cuBLASLt's entry points, resolved from its shared library (dlopen) when the first executor is
// made rather than linked: a program linked with it runs the library's static constructors at
// start, 0.45 CPU-s measured for an empty main(), which every fovea command and test process paid
// whether or not it ever multiplied a matrix. The members are the library's functions, named
// without their cublasLt prefix.
struct CublasLt {
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtDestroy) Destroy = nullptr;
  decltype(&::cublasLtGetStatusString) GetStatusString = nullptr;
  decltype(&::cublasLtGetVersion) GetVersion = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
};

// Loads the library once per process (thread-safe); later calls return the same table. The error
// names the library file and what the loader said, or the entry point it lacks.
Result<const CublasLt*> load_cublaslt();
// The table load_cublaslt() filled; only for code that runs once an executor exists (it loads it).
const CublasLt& cublaslt();

namespace detail {
inline bool cudnn_ok(cudnnStatus_t s) {
  return s == CUDNN_STATUS_SUCCESS;
}
inline bool cublas_ok(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS;
}
inline const char* cublas_status_string(cublasStatus_t s) {
  return cublaslt().GetStatusString(s);
}
}  // namespace detail

}  // namespace fovea::runtime::cuda

#define FOVEA_CUDNN_TRY(call)                                         \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "cuDNN", call, \
                    ::fovea::runtime::cuda::detail::cudnn_ok, cudnnGetErrorString)
#define FOVEA_CUBLAS_TRY(call)                                         \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "cuBLAS", call, \
                    ::fovea::runtime::cuda::detail::cublas_ok,         \
                    ::fovea::runtime::cuda::detail::cublas_status_string)

namespace fovea::runtime::cuda {

class CudnnAttention;  // cudnn_attention.h

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
  // cuDNN attention plans by shape (CudnnAttentionShape::key), null where cuDNN refused it: a
  // transformer's layers share one shape, and each plan takes cuDNN's heuristic and may compile.
  std::unordered_map<std::string, std::shared_ptr<const CudnnAttention>> attention_plans;
};

}  // namespace fovea::runtime::cuda
