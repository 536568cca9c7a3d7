// The tracer's clock and thread ids. CPU ranges, CUDA API calls and GPU operations are all put on
// this one clock so that "the launch lies inside the range" is a plain comparison.
#pragma once

#include <cstdint>

namespace fovea::trace {

// CLOCK_MONOTONIC in nanoseconds (std::chrono::steady_clock on Linux).
std::int64_t now_ns();

// The OS thread id (gettid), which is what CUPTI reports for API calls once it is told to use
// system thread ids; pthread ids would not match.
std::uint64_t current_thread_id();

}  // namespace fovea::trace
