#include "core/cuda_context.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <map>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/log.h"

namespace fovea {
namespace {

// The ABI each entry point is asked for: cuCtxCreate's current form (its CUctxCreateParams
// argument came in CUDA 12.5); the others have kept theirs since CUDA 4-7.
constexpr unsigned int kDriverAbiVersion = 12050;

struct DriverCalls {
  PFN_cuCtxCreate_v12050 ctx_create = nullptr;
  PFN_cuCtxDestroy_v4000 ctx_destroy = nullptr;
  PFN_cuCtxPushCurrent_v4000 ctx_push = nullptr;
  PFN_cuCtxPopCurrent_v4000 ctx_pop = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
  PFN_cuMemcpy3DPeerAsync_v4000 copy_peer = nullptr;
  PFN_cuGetErrorName_v6000 error_name = nullptr;
  Status status;
};

template <typename Fn>
Status find_entry_point(const char* symbol, Fn& out) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t error =
      cudaGetDriverEntryPointByVersion(symbol, &function, kDriverAbiVersion, cudaEnableDefault, &found);
  if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || function == nullptr) {
    return make_error(StatusCode::kUnsupported,
                      fmt::format("the CUDA driver has no {} (ABI {}): {}", symbol, kDriverAbiVersion,
                                  error != cudaSuccess ? cudaGetErrorString(error) : "symbol not found"));
  }
  out = reinterpret_cast<Fn>(function);
  return Status::ok();
}

Status load(DriverCalls& calls) {
  FOVEA_TRY(find_entry_point("cuCtxCreate", calls.ctx_create));
  FOVEA_TRY(find_entry_point("cuCtxDestroy", calls.ctx_destroy));
  FOVEA_TRY(find_entry_point("cuCtxPushCurrent", calls.ctx_push));
  FOVEA_TRY(find_entry_point("cuCtxPopCurrent", calls.ctx_pop));
  FOVEA_TRY(find_entry_point("cuCtxGetCurrent", calls.ctx_get_current));
  FOVEA_TRY(find_entry_point("cuMemcpy3DPeerAsync", calls.copy_peer));
  FOVEA_TRY(find_entry_point("cuGetErrorName", calls.error_name));
  return Status::ok();
}

const DriverCalls& driver() {
  static const DriverCalls calls = [] {
    DriverCalls loaded;
    loaded.status = load(loaded);
    return loaded;
  }();
  return calls;
}

bool cu_ok(CUresult result) {
  return result == CUDA_SUCCESS;
}
const char* cu_message(CUresult result) {
  const char* name = nullptr;
  if (driver().error_name == nullptr || driver().error_name(result, &name) != CUDA_SUCCESS) return "unknown";
  return name;
}

}  // namespace
}  // namespace fovea

#define FOVEA_CU_TRY(call)                                                                  \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "CUDA driver", call, ::fovea::cu_ok, \
                    ::fovea::cu_message)

namespace fovea {

Result<std::shared_ptr<SeparateContext>> SeparateContext::shared(int device) {
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<SeparateContext>> contexts;
  const std::lock_guard lock(mutex);
  if (std::shared_ptr<SeparateContext> existing = contexts[device].lock()) return existing;

  FOVEA_TRY(driver().status);
  // The primary context, current once the runtime has set the device up.
  FOVEA_CUDA_TRY(cudaSetDevice(device));
  FOVEA_CUDA_TRY(cudaFree(nullptr));
  CUcontext primary = nullptr;
  FOVEA_CU_TRY(driver().ctx_get_current(&primary));
  CUcontext context = nullptr;
  // cuCtxCreate also makes the new context current: pop it, so the caller's stays.
  FOVEA_CU_TRY(driver().ctx_create(&context, nullptr, CU_CTX_SCHED_AUTO, device));
  CUcontext popped = nullptr;
  FOVEA_CU_TRY(driver().ctx_pop(&popped));
  std::shared_ptr<SeparateContext> made(new SeparateContext(device, context, primary));
  contexts[device] = made;
  log_debug("CUDA device {}: a separate context made", device);
  return made;
}

SeparateContext::~SeparateContext() {
  static_cast<void>(driver().ctx_destroy(context_));
}

Result<SeparateContext::Scope> SeparateContext::enter() const {
  FOVEA_CU_TRY(driver().ctx_push(context_));
  return Scope(this);
}

SeparateContext::Scope::~Scope() {
  if (owner_ == nullptr) return;
  CUcontext popped = nullptr;
  static_cast<void>(driver().ctx_pop(&popped));
}

Status SeparateContext::copy_to_primary(void* dst, std::size_t dst_pitch, const void* src,
                                        std::size_t src_pitch, std::size_t row_bytes, std::size_t height,
                                        cudaStream_t stream) const {
  CUDA_MEMCPY3D_PEER copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  copy.srcContext = context_;
  copy.srcPitch = src_pitch;
  copy.srcHeight = height;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  copy.dstContext = primary_;
  copy.dstPitch = dst_pitch;
  copy.dstHeight = height;
  copy.WidthInBytes = row_bytes;
  copy.Height = height;
  copy.Depth = 1;
  FOVEA_CU_TRY(driver().copy_peer(&copy, reinterpret_cast<CUstream>(stream)));
  return Status::ok();
}

}  // namespace fovea
