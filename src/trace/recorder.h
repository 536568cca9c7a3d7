// The state behind the ranges: which session records, and what it has collected. Internal to
// src/trace; trace::Session is the public face.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "trace/gpu_capture.h"
#include "trace/records.h"

namespace fovea::trace::detail {

struct Collected {
  std::int64_t origin_ns = 0;  // when recording began, on the tracer clock
  std::int64_t end_ns = 0;
  std::vector<RangeRecord> ranges;  // absolute times
  std::unique_ptr<GpuCapture> capture;
};

// Starts recording; fails when a session is already recording (one per process).
Status begin_session(std::unique_ptr<GpuCapture> capture);
// Stops recording. Ranges still open are left out: their end was never seen.
Collected end_session();

}  // namespace fovea::trace::detail
