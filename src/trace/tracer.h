// fovea's ranges: each one is an NVTX range in domain "fovea" (so Nsight Systems sees it) and,
// while a trace session is on (trace/session.h), a record for fovea's own profiler.
//
//   FOVEA_TRACE_RANGE("decode");                 // lasts until the end of the enclosing scope
//   FOVEA_TRACE_RANGE("inference", batch_id);    // the batch id becomes the NVTX payload
//   FOVEA_TRACE_RANGE("inference", batch_id, stream);  // also timed with CUDA events on `stream`
//                                                      // when CUPTI is unavailable
//
// With tracing off a range costs its NVTX push/pop (nothing without an attached tool) and one
// relaxed atomic load. Names must outlive the range (string literals do).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "core/status.h"

struct CUstream_st;

namespace fovea::trace {

// cudaStream_t, without making every includer include the CUDA headers.
using Stream = CUstream_st*;

namespace detail {
inline std::atomic<bool> g_enabled{false};

void nvtx_push(const char* name, std::optional<std::int64_t> batch);
void nvtx_pop();
std::uint64_t nvtx_start(const char* name, std::optional<std::int64_t> batch);
void nvtx_end(std::uint64_t id);
}  // namespace detail

// True while a trace session records.
inline bool enabled() {
  return detail::g_enabled.load(std::memory_order_relaxed);
}

// A push/pop range: begins and ends on one thread and nests with the thread's other ranges.
class ScopedRange {
 public:
  explicit ScopedRange(const char* name, std::optional<std::int64_t> batch = std::nullopt,
                       Stream stream = nullptr)
      : name_(name), batch_(batch), stream_(stream) {
    detail::nvtx_push(name, batch);
    if (enabled()) begin_recording();
  }
  ~ScopedRange() {
    if (session_ != 0) end_recording();
    detail::nvtx_pop();
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  void begin_recording();
  void end_recording();

  const char* name_;
  std::optional<std::int64_t> batch_;
  Stream stream_;
  std::uint64_t session_ = 0;  // the session recording this range; 0 when none is
  std::int64_t start_ns_ = 0;
  int level_ = 0;
  std::optional<std::uint64_t> gpu_token_;  // cuda-events mode: the begin event's slot
};

// A start/end range: may end on another thread (a batch's life across stages). It has no nesting
// level; its GPU projection counts the work launched from the thread that started it. It ends
// when end() is called or when it is destroyed.
class StartEndRange {
 public:
  explicit StartEndRange(const char* name, std::optional<std::int64_t> batch = std::nullopt);
  StartEndRange(StartEndRange&& other) noexcept;
  StartEndRange& operator=(StartEndRange&& other) noexcept;
  StartEndRange(const StartEndRange&) = delete;
  StartEndRange& operator=(const StartEndRange&) = delete;
  ~StartEndRange() { end(); }

  void end();

 private:
  const char* name_ = nullptr;
  std::optional<std::int64_t> batch_;
  std::optional<std::uint64_t> nvtx_id_;  // empty once ended or moved from
  std::uint64_t session_ = 0;
  std::uint64_t thread_ = 0;
  std::int64_t start_ns_ = 0;
};

}  // namespace fovea::trace

#define FOVEA_TRACE_RANGE(...) \
  ::fovea::trace::ScopedRange FOVEA_CONCAT(fovea_trace_range_, __LINE__)(__VA_ARGS__)
