// The report's tables, computed from recorded ranges and GPU ops with Nsight Systems' definitions
// (nvtx_gpu_proj_sum, nvtx_sum, cuda_gpu_kern_sum, gpu_gaps) so the two can be compared:
// - A GPU op belongs to a range when the CUDA call that launched it lies inside the range (CPU
//   time, both ends inclusive) on the thread that began the range.
// - A range's projection runs from the first such op's start to the last one's end; work of
//   child ranges is not subtracted. Ranges without GPU ops have no projection and are left out
//   of nvtx_gpu_proj_sum.
// - Statistics: the median of an even count is the mean of the middle two; StdDev is the sample
//   standard deviation (n - 1), 0 for a single instance.
// All times are nanoseconds since the session started.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/records.h"

namespace fovea::trace {

// Nsight Systems' gpu_gaps default threshold.
inline constexpr std::int64_t kDefaultGapThresholdNs = 500'000;

struct Stats {
  std::int64_t total = 0;
  std::int64_t instances = 0;
  double avg = 0;
  double med = 0;
  std::int64_t min = 0;
  std::int64_t max = 0;
  double stddev = 0;

  bool operator==(const Stats&) const = default;
};

Stats compute_stats(std::vector<std::int64_t> values);

// One range instance seen on the GPU.
struct RangeProjection {
  std::int64_t gpu_ops = 0;
  std::optional<std::int64_t> proj_start_ns;  // empty without GPU ops
  std::optional<std::int64_t> proj_end_ns;
  std::int64_t children = 0;  // direct children: push/pop ranges one level deeper inside it

  bool operator==(const RangeProjection&) const = default;
};

// Parallel to data.ranges.
std::vector<RangeProjection> project_ranges(const TraceData& data);

// nvtx_gpu_proj_sum, one row per range name and style.
struct GpuProjRow {
  std::string range;
  RangeStyle style = RangeStyle::kPushPop;
  Stats proj;                       // Total Proj Time, Range Instances, Proj Avg/Med/Min/Max/StdDev
  std::int64_t total_range_ns = 0;  // CPU time of the same instances
  std::int64_t total_gpu_ops = 0;
  double avg_gpu_ops = 0;
  double avg_range_level = 0;
  double avg_num_child = 0;

  bool operator==(const GpuProjRow&) const = default;
};

// nvtx_sum, one row per range name and style.
struct NvtxRow {
  std::string range;
  RangeStyle style = RangeStyle::kPushPop;
  double time_percent = 0;
  Stats time;

  bool operator==(const NvtxRow&) const = default;
};

// cuda_gpu_kern_sum, one row per kernel name.
struct KernelRow {
  std::string name;
  double time_percent = 0;
  Stats time;

  bool operator==(const KernelRow&) const = default;
};

// cuda_api_blocking_sum: the CUDA calls that launched no GPU work and held their thread at least
// kBlockingCallNs (records.h), one row per function. Nsight Systems' cuda_api_sum counts every call;
// this counts only those that blocked, which is where a host thread waited on the GPU or the driver.
struct BlockingCallRow {
  std::string name;
  double time_percent = 0;  // of all blocking calls' time
  Stats time;
  std::int64_t threads = 0;  // how many threads made such calls

  bool operator==(const BlockingCallRow&) const = default;
};

// cuda_api_range_sum: the CUDA calls each range's thread made inside it, one row per innermost
// push/pop range and function: the calls that launched GPU work (once per call: a graph launch's
// kernels share one) and the blocking ones alike (CUPTI capture). What a stage's thread spent in the
// runtime and the driver, and on what: an upload staged from pageable memory, a free that waited
// for the device. Calls in no range are under kNoRange.
inline constexpr std::string_view kNoRange = "(no range)";
struct ApiRangeRow {
  std::string range;
  std::string name;
  double range_percent = 0;  // of the range's total time (its push/pop instances); 0 for kNoRange
  Stats time;

  bool operator==(const ApiRangeRow&) const = default;
};

// gpu_gaps: a stretch at least the threshold long in which a device ran no op on any stream.
struct GapRow {
  std::int64_t row = 0;  // 1-based, in start order
  int device = 0;
  std::int64_t duration_ns = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;

  bool operator==(const GapRow&) const = default;
};

struct Tables {
  std::vector<GpuProjRow> gpu_proj;             // by Total Proj Time, largest first
  std::vector<NvtxRow> nvtx;                    // by Total Time, largest first
  std::vector<KernelRow> kernels;               // by Total Time, largest first
  std::vector<BlockingCallRow> blocking_calls;  // by Total Time, largest first
  std::vector<ApiRangeRow> api_by_range;        // by Total Time, largest first
  std::vector<GapRow> gaps;
  std::int64_t gap_threshold_ns = kDefaultGapThresholdNs;

  bool operator==(const Tables&) const = default;
};

// "decode" for fovea's own domain, "domain:name" for others.
std::string range_label(const RangeRecord& range);

Tables analyze(const TraceData& data, std::int64_t gap_threshold_ns = kDefaultGapThresholdNs);

struct Report {
  TraceData data;
  Tables tables;

  bool operator==(const Report&) const = default;
};

}  // namespace fovea::trace
