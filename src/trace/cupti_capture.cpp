// CUPTI capture: every kernel, memcpy and memset, joined to the runtime or driver call that
// launched it through CUPTI's correlation ids. libcupti is loaded at run time (dlopen), so a
// machine without it still runs fovea and traces with CUDA events instead.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/cuda_check.h"
#include "core/log.h"
#include "trace/clock.h"
#include "trace/gpu_capture.h"

namespace fovea::trace {
namespace {

struct CuptiApi {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp = nullptr;
  decltype(&cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&cuptiSetThreadIdType) set_thread_id_type = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

template <typename Fn>
bool load_symbol(void* library, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(library, name));
  return *fn != nullptr;
}

// The soname first (the loader's search path), then the library CMake found at build time.
Result<CuptiApi> load_cupti_library() {
  void* library = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) library = dlopen(FOVEA_CUPTI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return make_error(StatusCode::kUnsupported, "libcupti could not be loaded: ", dlerror());
  }
  CuptiApi api;
  const bool ok = load_symbol(library, "cuptiActivityRegisterCallbacks", &api.register_callbacks) &&
                  load_symbol(library, "cuptiActivityRegisterTimestampCallback", &api.register_timestamp) &&
                  load_symbol(library, "cuptiGetTimestamp", &api.get_timestamp) &&
                  load_symbol(library, "cuptiSetThreadIdType", &api.set_thread_id_type) &&
                  load_symbol(library, "cuptiActivityEnable", &api.enable) &&
                  load_symbol(library, "cuptiActivityDisable", &api.disable) &&
                  load_symbol(library, "cuptiActivityFlushAll", &api.flush_all) &&
                  load_symbol(library, "cuptiActivityGetNextRecord", &api.next_record) &&
                  load_symbol(library, "cuptiGetCallbackName", &api.callback_name) &&
                  load_symbol(library, "cuptiGetResultString", &api.result_string);
  if (!ok) return make_error(StatusCode::kUnsupported, "libcupti lacks a function fovea needs: ", dlerror());
  return api;
}

// Loaded once; the library stays loaded (CUPTI cannot be unloaded safely once it has attached).
const Result<CuptiApi>& cupti() {
  static const Result<CuptiApi> api = load_cupti_library();
  return api;
}

#define FOVEA_CUPTI_TRY(call)                                                                        \
  do {                                                                                               \
    const CUptiResult fovea_cupti_result_ = (call);                                                  \
    if (fovea_cupti_result_ != CUPTI_SUCCESS) {                                                      \
      const char* fovea_cupti_text_ = "unknown error";                                               \
      api.result_string(fovea_cupti_result_, &fovea_cupti_text_);                                    \
      return make_error(StatusCode::kUnsupported, "CUPTI: ", #call, " failed: ", fovea_cupti_text_); \
    }                                                                                                \
  } while (0)

struct ApiCall {
  CUpti_CallbackDomain domain = CUPTI_CB_DOMAIN_INVALID;
  CUpti_CallbackId cbid = 0;
  std::uint64_t thread = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// What CUPTI's buffer-completed callback has delivered. CUPTI calls back on its own thread.
struct Delivered {
  std::mutex mutex;
  std::vector<GpuOpRecord> ops;  // api fields filled in at finish
  std::unordered_map<std::uint32_t, ApiCall> calls;
};

Delivered& delivered() {
  static Delivered d;
  return d;
}

// CUPTI's own recommendation is a few MB per buffer; 8 MiB holds ~40k kernel records.
constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::size_t kBufferAlignment = 8;  // CUPTI requires 8-byte aligned activity buffers

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

std::string memcpy_name(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "[CUDA memcpy Host-to-Device]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "[CUDA memcpy Device-to-Host]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "[CUDA memcpy Device-to-Device]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "[CUDA memcpy Host-to-Host]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "[CUDA memcpy Peer-to-Peer]";
    default: return "[CUDA memcpy]";
  }
}

// Names as Nsight Systems shows them: demangled.
std::string demangle(const char* name) {
  if (name == nullptr) return "[unknown kernel]";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                   &std::free);
  return status == 0 && text ? std::string(text.get()) : std::string(name);
}

GpuOpRecord op_record(GpuOpKind kind, std::string name, std::uint32_t device, std::uint32_t stream,
                      std::uint64_t start, std::uint64_t end, std::uint32_t correlation) {
  return GpuOpRecord{.kind = kind,
                     .name = std::move(name),
                     .device = static_cast<int>(device),
                     .stream = stream,
                     .start_ns = static_cast<std::int64_t>(start),
                     .end_ns = static_cast<std::int64_t>(end),
                     .correlation = correlation};
}

void take_record(const CUpti_Activity* record, Delivered& d) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      d.ops.push_back(op_record(GpuOpKind::kKernel, demangle(k->name), k->deviceId, k->streamId, k->start,
                                k->end, k->correlationId));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      d.ops.push_back(op_record(GpuOpKind::kMemcpy, memcpy_name(m->copyKind), m->deviceId, m->streamId,
                                m->start, m->end, m->correlationId));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      d.ops.push_back(op_record(GpuOpKind::kMemset, "[CUDA memset]", m->deviceId, m->streamId, m->start,
                                m->end, m->correlationId));
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      // A runtime call and the driver call it makes can share an id; the runtime's name is the
      // one the user wrote.
      auto [it, inserted] = d.calls.try_emplace(a->correlationId);
      if (inserted || record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
        it->second =
            ApiCall{.domain = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                          : CUPTI_CB_DOMAIN_DRIVER_API,
                    .cbid = a->cbid,
                    .thread = a->threadId,
                    .start_ns = static_cast<std::int64_t>(a->start),
                    .end_ns = static_cast<std::int64_t>(a->end)};
      }
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  const CuptiApi& api = cupti().value();
  Delivered& d = delivered();
  {
    std::lock_guard lock(d.mutex);
    CUpti_Activity* record = nullptr;
    while (api.next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS) take_record(record, d);
  }
  std::free(buffer);
}

std::uint64_t CUPTIAPI tracer_timestamp() {
  return static_cast<std::uint64_t>(now_ns());
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER};

class CuptiCapture final : public GpuCapture {
 public:
  ~CuptiCapture() override { disable(); }
  CaptureMode mode() const override { return CaptureMode::kCupti; }
  Status start();
  Result<CapturedWork> finish() override;

 private:
  void disable();
  void join(std::vector<GpuOpRecord>& ops, const std::unordered_map<std::uint32_t, ApiCall>& calls) const;
  std::vector<BlockingCall> blocking(const std::vector<GpuOpRecord>& ops,
                                     const std::unordered_map<std::uint32_t, ApiCall>& calls) const;

  bool enabled_ = false;
  // Added to CUPTI's times when CUPTI would not take the tracer's clock; 0 when it does.
  std::int64_t offset_ns_ = 0;
};

Status CuptiCapture::start() {
  FOVEA_TRY(cupti().status());
  const CuptiApi& api = cupti().value();
  {
    Delivered& d = delivered();
    std::lock_guard lock(d.mutex);
    d.ops.clear();
    d.calls.clear();
  }
  // CUPTI stamps CPU records with CLOCK_REALTIME by default; handing it the tracer's clock puts
  // everything on one clock. Older libraries refuse, and a measured offset has to do.
  if (api.register_timestamp(tracer_timestamp) != CUPTI_SUCCESS) {
    std::uint64_t cupti_now = 0;
    const std::int64_t before = now_ns();
    FOVEA_CUPTI_TRY(api.get_timestamp(&cupti_now));
    offset_ns_ = before + (now_ns() - before) / 2 - static_cast<std::int64_t>(cupti_now);
  }
  FOVEA_CUPTI_TRY(api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  FOVEA_CUPTI_TRY(api.register_callbacks(buffer_requested, buffer_completed));
  for (CUpti_ActivityKind kind : kKinds) {
    const CUptiResult result = api.enable(kind);
    if (result != CUPTI_SUCCESS) {
      disable();
      const char* text = "unknown error";
      api.result_string(result, &text);
      return make_error(StatusCode::kUnsupported, "CUPTI: cuptiActivityEnable failed: ", text);
    }
    enabled_ = true;
  }
  return Status::ok();
}

void CuptiCapture::disable() {
  if (!enabled_) return;
  for (CUpti_ActivityKind kind : kKinds) cupti().value().disable(kind);
  enabled_ = false;
}

void CuptiCapture::join(std::vector<GpuOpRecord>& ops,
                        const std::unordered_map<std::uint32_t, ApiCall>& calls) const {
  const CuptiApi& api = cupti().value();
  for (GpuOpRecord& op : ops) {
    op.start_ns += offset_ns_;
    op.end_ns += offset_ns_;
    auto it = calls.find(static_cast<std::uint32_t>(op.correlation));
    if (it == calls.end()) continue;  // launched before the session began: belongs to no range
    const char* name = "?";
    api.callback_name(it->second.domain, it->second.cbid, &name);
    op.api_name = name;
    op.api_thread = it->second.thread;
    op.api_start_ns = it->second.start_ns + offset_ns_;
    op.api_end_ns = it->second.end_ns + offset_ns_;
  }
}

// The calls that launched none of `ops` and lasted kBlockingCallNs or more.
std::vector<BlockingCall> CuptiCapture::blocking(
    const std::vector<GpuOpRecord>& ops, const std::unordered_map<std::uint32_t, ApiCall>& calls) const {
  const CuptiApi& api = cupti().value();
  std::unordered_set<std::uint64_t> launching;
  for (const GpuOpRecord& op : ops) launching.insert(op.correlation);
  std::vector<BlockingCall> blocked;
  for (const auto& [correlation, call] : calls) {
    if (call.end_ns - call.start_ns < kBlockingCallNs || launching.count(correlation) > 0) continue;
    const char* name = "?";
    api.callback_name(call.domain, call.cbid, &name);
    blocked.push_back({.name = name,
                       .thread = call.thread,
                       .start_ns = call.start_ns + offset_ns_,
                       .end_ns = call.end_ns + offset_ns_});
  }
  std::sort(blocked.begin(), blocked.end(),
            [](const BlockingCall& a, const BlockingCall& b) { return a.start_ns < b.start_ns; });
  return blocked;
}

Result<CapturedWork> CuptiCapture::finish() {
  const CuptiApi& api = cupti().value();
  // Records exist only for work that has completed.
  FOVEA_CUDA_TRY(cudaDeviceSynchronize());
  FOVEA_CUPTI_TRY(api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  disable();
  FOVEA_CUPTI_TRY(api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  Delivered& d = delivered();
  std::lock_guard lock(d.mutex);
  CapturedWork work{.ops = std::move(d.ops), .blocking_calls = {}};
  join(work.ops, d.calls);
  work.blocking_calls = blocking(work.ops, d.calls);
  d.ops.clear();
  d.calls.clear();
  return work;
}

}  // namespace

Result<std::unique_ptr<GpuCapture>> start_cupti_capture() {
  auto capture = std::make_unique<CuptiCapture>();
  FOVEA_TRY(capture->start());
  return std::unique_ptr<GpuCapture>(std::move(capture));
}

}  // namespace fovea::trace
