// Hand-built traces with known times, for the analysis tests.
#pragma once

#include <optional>
#include <string>

#include "trace/records.h"

namespace fovea::trace::testing {

inline RangeRecord range(const std::string& name, std::int64_t start, std::int64_t end, int level = 0,
                         std::uint64_t thread = 1, std::optional<std::int64_t> batch = std::nullopt) {
  return RangeRecord{.domain = "fovea",
                     .name = name,
                     .style = RangeStyle::kPushPop,
                     .thread = thread,
                     .start_ns = start,
                     .end_ns = end,
                     .level = level,
                     .batch = batch};
}

// A kernel launched by a call at [api_start, api_start + 10] on `thread`, running [start, end).
inline GpuOpRecord kernel(const std::string& name, std::int64_t api_start, std::int64_t start,
                          std::int64_t end, std::uint64_t thread = 1, std::uint64_t stream = 7,
                          int device = 0) {
  static std::uint64_t correlation = 0;
  return GpuOpRecord{.kind = GpuOpKind::kKernel,
                     .name = name,
                     .device = device,
                     .stream = stream,
                     .start_ns = start,
                     .end_ns = end,
                     .correlation = ++correlation,
                     .api_name = "cudaLaunchKernel",
                     .api_thread = thread,
                     .api_start_ns = api_start,
                     .api_end_ns = api_start + 10};
}

}  // namespace fovea::trace::testing
