// What the tracer records: CPU ranges and GPU operations, with every time in nanoseconds since the
// session started, on one clock (trace/clock.h). A report is computed from these records alone,
// so a report.json read back reproduces its tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fovea::trace {

// How GPU time was measured; the report names it.
enum class CaptureMode {
  kCupti,       // CUPTI activity records: every kernel, memcpy and memset, with its launch
  kCudaEvents,  // CUDA events at the begin and end of each range that names a stream
  kCpuOnly,     // no CUDA at build time or no GPU at run time: CPU ranges only
};

std::string_view capture_mode_name(CaptureMode mode);
std::optional<CaptureMode> parse_capture_mode(std::string_view name);

// Nsight Systems' two NVTX range styles: push/pop ranges nest on one thread; start/end ranges may
// end on another thread and have no nesting level.
enum class RangeStyle { kPushPop, kStartEnd };

std::string_view range_style_name(RangeStyle style);
std::optional<RangeStyle> parse_range_style(std::string_view name);

struct RangeRecord {
  std::string domain;
  std::string name;
  RangeStyle style = RangeStyle::kPushPop;
  std::uint64_t thread = 0;  // OS thread id (gettid), the id CUPTI reports for API calls
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int level = 0;  // push/pop depth among recorded ranges on the thread; 0 for start/end ranges
  std::optional<std::int64_t> batch;

  bool operator==(const RangeRecord&) const = default;
};

enum class GpuOpKind {
  kKernel,
  kMemcpy,
  kMemset,
  kRangeSpan,  // cuda-events mode: the stream time between a range's begin and end events
};

std::string_view gpu_op_kind_name(GpuOpKind kind);
std::optional<GpuOpKind> parse_gpu_op_kind(std::string_view name);

struct GpuOpRecord {
  GpuOpKind kind = GpuOpKind::kKernel;
  std::string name;
  int device = 0;
  std::uint64_t stream = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t correlation = 0;
  // The CUDA call that launched the op: its name, CPU thread and CPU time.
  std::string api_name;
  std::uint64_t api_thread = 0;
  std::int64_t api_start_ns = 0;
  std::int64_t api_end_ns = 0;

  bool operator==(const GpuOpRecord&) const = default;
};

// A CUDA call that launched no GPU work and held its thread at least kBlockingCallNs: a
// synchronization, an allocation or a free, a wait for the driver's lock. GPU ops carry the calls
// that launched them; these are the others, what host threads were blocked in (CUPTI capture only).
inline constexpr std::int64_t kBlockingCallNs = 20'000;
struct BlockingCall {
  std::string name;  // the CUDA runtime or driver function
  std::uint64_t thread = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;

  bool operator==(const BlockingCall&) const = default;
};

struct TraceData {
  CaptureMode mode = CaptureMode::kCpuOnly;
  std::string label;             // names the run in multi-run reports (a sweep sets it)
  std::int64_t duration_ns = 0;  // from session start to stop
  std::vector<RangeRecord> ranges;
  std::vector<GpuOpRecord> ops;
  std::vector<BlockingCall> blocking_calls;

  bool operator==(const TraceData&) const = default;
};

}  // namespace fovea::trace
