#include "runtime/cuda/cuda_libraries.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "runtime/cuda/cudnn_attention.h"

namespace fovea::runtime::cuda {
namespace {

// The soname of the cuBLAS this build was compiled against ("libcublasLt.so.13").
std::string cublaslt_library() {
  return fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
}

template <typename Function>
Status resolve(void* library, const char* name, Function& out) {
  out = reinterpret_cast<Function>(dlsym(library, name));
  if (out == nullptr) {
    return make_error(StatusCode::kDeviceError, cublaslt_library(), " has no ", name);
  }
  return Status::ok();
}

Status resolve_all(void* library, CublasLt& api) {
  FOVEA_TRY(resolve(library, "cublasLtCreate", api.Create));
  FOVEA_TRY(resolve(library, "cublasLtDestroy", api.Destroy));
  FOVEA_TRY(resolve(library, "cublasLtGetStatusString", api.GetStatusString));
  FOVEA_TRY(resolve(library, "cublasLtGetVersion", api.GetVersion));
  FOVEA_TRY(resolve(library, "cublasLtMatmul", api.Matmul));
  FOVEA_TRY(resolve(library, "cublasLtMatmulAlgoGetHeuristic", api.MatmulAlgoGetHeuristic));
  FOVEA_TRY(resolve(library, "cublasLtMatmulDescCreate", api.MatmulDescCreate));
  FOVEA_TRY(resolve(library, "cublasLtMatmulDescDestroy", api.MatmulDescDestroy));
  FOVEA_TRY(resolve(library, "cublasLtMatmulDescSetAttribute", api.MatmulDescSetAttribute));
  FOVEA_TRY(resolve(library, "cublasLtMatmulPreferenceCreate", api.MatmulPreferenceCreate));
  FOVEA_TRY(resolve(library, "cublasLtMatmulPreferenceDestroy", api.MatmulPreferenceDestroy));
  FOVEA_TRY(resolve(library, "cublasLtMatmulPreferenceSetAttribute", api.MatmulPreferenceSetAttribute));
  FOVEA_TRY(resolve(library, "cublasLtMatrixLayoutCreate", api.MatrixLayoutCreate));
  FOVEA_TRY(resolve(library, "cublasLtMatrixLayoutDestroy", api.MatrixLayoutDestroy));
  FOVEA_TRY(resolve(library, "cublasLtMatrixLayoutSetAttribute", api.MatrixLayoutSetAttribute));
  return Status::ok();
}

CublasLt loaded_api;

}  // namespace

Result<const CublasLt*> load_cublaslt() {
  static std::once_flag once;
  static Status loaded;
  std::call_once(once, [] {
    // Never closed: executors and their plans may live until the process exits.
    void* library = dlopen(cublaslt_library().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* reason = dlerror();
      loaded = make_error(StatusCode::kDeviceError, "cannot load ", cublaslt_library(), ": ",
                          reason != nullptr ? reason : "unknown reason");
      return;
    }
    loaded = resolve_all(library, loaded_api);
  });
  if (!loaded.is_ok()) return loaded;
  return &loaded_api;
}

const CublasLt& cublaslt() {
  return loaded_api;
}

Result<std::unique_ptr<CudaLibraries>> CudaLibraries::create() {
  FOVEA_TRY(load_cublaslt().status());
  auto libraries = std::make_unique<CudaLibraries>();
  FOVEA_CUDNN_TRY(cudnnCreate(&libraries->cudnn));
  FOVEA_CUBLAS_TRY(cuda::cublaslt().Create(&libraries->cublaslt));
  return libraries;
}

CudaLibraries::~CudaLibraries() {
  attention_plans.clear();  // before the handle they were made with
  if (cudnn != nullptr) cudnnDestroy(cudnn);
  if (cublaslt != nullptr) cuda::cublaslt().Destroy(cublaslt);
}

Status CudaLibraries::set_stream(cudaStream_t stream) {
  FOVEA_CUDNN_TRY(cudnnSetStream(cudnn, stream));
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
