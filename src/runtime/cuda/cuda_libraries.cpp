#include "runtime/cuda/cuda_libraries.h"

#include <memory>

namespace fovea::runtime::cuda {

Result<std::unique_ptr<CudaLibraries>> CudaLibraries::create() {
  auto libraries = std::make_unique<CudaLibraries>();
  FOVEA_CUDNN_TRY(cudnnCreate(&libraries->cudnn));
  FOVEA_CUBLAS_TRY(cublasLtCreate(&libraries->cublaslt));
  return libraries;
}

CudaLibraries::~CudaLibraries() {
  if (cudnn != nullptr) cudnnDestroy(cudnn);
  if (cublaslt != nullptr) cublasLtDestroy(cublaslt);
}

Status CudaLibraries::set_stream(cudaStream_t stream) {
  FOVEA_CUDNN_TRY(cudnnSetStream(cudnn, stream));
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
