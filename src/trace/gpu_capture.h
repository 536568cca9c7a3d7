// How GPU operations are captured during a session: CUPTI activity records, or CUDA events
// around ranges that name a stream. Internal to src/trace.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/status.h"
#include "trace/records.h"
#include "trace/tracer.h"

namespace fovea::trace {

// What a capture hands back when the session stops.
struct CapturedWork {
  std::vector<GpuOpRecord> ops;
  std::vector<BlockingCall> blocking_calls;
};

class GpuCapture {
 public:
  virtual ~GpuCapture() = default;
  virtual CaptureMode mode() const = 0;
  // Called on the range's thread when a range that names a stream begins and ends; only the
  // cuda-events capture uses them. The token from begin is passed to end.
  virtual std::optional<std::uint64_t> begin_stream_range(Stream) { return std::nullopt; }
  virtual void end_stream_range(std::uint64_t, Stream, const RangeRecord&) {}
  // Waits for the GPU work launched so far and returns its ops (and, where the capture sees them,
  // the calls that blocked), timed on the tracer clock (trace/clock.h, absolute).
  virtual Result<CapturedWork> finish() = 0;
};

#if defined(FOVEA_HAVE_CUDA)
// Fails (kUnsupported, with CUPTI's reason) when libcupti cannot be loaded or refuses to trace,
// e.g. CUPTI_ERROR_INSUFFICIENT_PRIVILEGES or another profiler already attached.
Result<std::unique_ptr<GpuCapture>> start_cupti_capture();
Result<std::unique_ptr<GpuCapture>> start_event_capture();
#endif

}  // namespace fovea::trace
