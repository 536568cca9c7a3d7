#include "core/sm_partition.h"

#include <cuda.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "core/cuda_check.h"
#include "core/log.h"

namespace fovea {
namespace {

// The driver API through the runtime's entry points: fovea does not link libcuda (the build machine
// has none), and a driver older than the green contexts (12.5) says so here instead of at load.
struct GreenContextApi {
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetDevResource) get_resource = nullptr;
  decltype(&cuDevSmResourceSplitByCount) split_by_count = nullptr;
  decltype(&cuDevResourceGenerateDesc) generate_desc = nullptr;
  decltype(&cuGreenCtxCreate) create_context = nullptr;
  decltype(&cuGreenCtxStreamCreate) create_stream = nullptr;
};

// cuGreenCtxStreamCreate came in 12.5, the rest of the green context API in 12.4.
constexpr unsigned kGreenContextVersion = 12050;

template <typename Function>
Status load_entry(const char* name, Function* function) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  FOVEA_CUDA_TRY(
      cudaGetDriverEntryPointByVersion(name, &address, kGreenContextVersion, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    return make_error(StatusCode::kUnsupported, "the CUDA driver has no ", name,
                      " (green contexts need a CUDA 12.5 driver or newer)");
  }
  *function = reinterpret_cast<Function>(address);
  return Status::ok();
}

Result<GreenContextApi> load_api() {
  GreenContextApi api;
  FOVEA_TRY(load_entry("cuDeviceGet", &api.device_get));
  FOVEA_TRY(load_entry("cuDeviceGetDevResource", &api.get_resource));
  FOVEA_TRY(load_entry("cuDevSmResourceSplitByCount", &api.split_by_count));
  FOVEA_TRY(load_entry("cuDevResourceGenerateDesc", &api.generate_desc));
  FOVEA_TRY(load_entry("cuGreenCtxCreate", &api.create_context));
  FOVEA_TRY(load_entry("cuGreenCtxStreamCreate", &api.create_stream));
  return api;
}

Status driver_status(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return Status::ok();
  return make_error(StatusCode::kDeviceError, "CUDA driver: ", call, " failed (CUresult ",
                    std::to_string(static_cast<int>(result)), ")");
}

// Set once for the process: the green context lives as long as the streams made in it may.
struct PartitionState {
  std::mutex mutex;
  bool reserved = false;
  int device = 0;
  int reserved_sms = 0;
  SmPartition partition;
  GreenContextApi api;
  CUgreenCtx context = nullptr;
};

PartitionState& state() {
  static PartitionState* partition = new PartitionState();  // never destroyed: streams outlive main
  return *partition;
}

Result<int> device_sm_count(int device) {
  int sms = 0;
  FOVEA_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// One group of at least `compute` SMs, as the driver aligns it; the rest stays out of it.
Status create_green_context(PartitionState& s, int device, int compute) {
  FOVEA_ASSIGN_OR_RETURN(s.api, load_api());
  CUdevice handle = 0;
  FOVEA_TRY(driver_status(s.api.device_get(&handle, device), "cuDeviceGet"));
  CUdevResource all{};
  FOVEA_TRY(
      driver_status(s.api.get_resource(handle, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource"));
  // The driver rounds a group up to its granularity (8 SMs on Hopper): ask for the largest group
  // that still leaves `reserved` free.
  CUdevResource group{};
  CUdevResource rest{};
  unsigned groups = 1;
  const unsigned granularity = std::max(1u, all.sm.smCoscheduledAlignment);
  const unsigned wanted = static_cast<unsigned>(compute) / granularity * granularity;
  if (wanted == 0) {
    return make_error(StatusCode::kInvalidArgument, "reserving SMs leaves fewer than the ",
                      std::to_string(granularity), " a compute partition needs on this GPU");
  }
  FOVEA_TRY(driver_status(s.api.split_by_count(&group, &groups, &all, &rest, 0, wanted),
                          "cuDevSmResourceSplitByCount"));
  CUdevResourceDesc desc = nullptr;
  FOVEA_TRY(driver_status(s.api.generate_desc(&desc, &group, 1), "cuDevResourceGenerateDesc"));
  FOVEA_TRY(driver_status(s.api.create_context(&s.context, desc, handle, CU_GREEN_CTX_DEFAULT_STREAM),
                          "cuGreenCtxCreate"));
  s.partition.compute_sms = static_cast<int>(group.sm.smCount);
  return Status::ok();
}

}  // namespace

Result<SmPartition> reserve_sms(int device, int reserved) {
  PartitionState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.reserved) {
    if (s.device != device || s.reserved_sms != reserved) {
      return make_error(StatusCode::kInvalidArgument, "the SMs kept free were set once (",
                        std::to_string(s.reserved_sms), " on GPU ", std::to_string(s.device),
                        ") and cannot change in a running process");
    }
    return s.partition;
  }
  FOVEA_ASSIGN_OR_RETURN(const int sms, device_sm_count(device));
  if (reserved < 0 || reserved >= sms) {
    return make_error(StatusCode::kInvalidArgument, "cannot keep ", std::to_string(reserved),
                      " of the GPU's ", std::to_string(sms), " SMs free of the compute streams");
  }
  s.partition = {.device_sms = sms, .compute_sms = sms};
  if (reserved > 0) FOVEA_TRY(create_green_context(s, device, sms - reserved));
  s.reserved = true;
  s.device = device;
  s.reserved_sms = reserved;
  if (reserved > 0) {
    log_info("gpu: compute streams on {} of the GPU's {} SMs ({} kept free for other work)",
             s.partition.compute_sms, sms, sms - s.partition.compute_sms);
  }
  return s.partition;
}

SmPartition current_sm_partition(int device) {
  PartitionState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.reserved && s.device == device) return s.partition;
  const Result<int> sms = device_sm_count(device);
  const int count = sms.is_ok() ? *sms : 0;
  return {.device_sms = count, .compute_sms = count};
}

Result<cudaStream_t> create_compute_partition_stream(int priority) {
  PartitionState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.context == nullptr) return cudaStream_t{nullptr};
  CUstream stream = nullptr;
  FOVEA_TRY(driver_status(s.api.create_stream(&stream, s.context, CU_STREAM_NON_BLOCKING, priority),
                          "cuGreenCtxStreamCreate"));
  return static_cast<cudaStream_t>(stream);
}

}  // namespace fovea
