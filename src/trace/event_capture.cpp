// cuda-events capture: the fallback when CUPTI is unavailable. A range that names a stream gets a
// timed event recorded on that stream at its begin and at its end; the time between them on the
// GPU becomes one GPU op of kind range-span, launched (for the projection) at the range's begin.
// Event times are put on the tracer clock through one anchor event per device.
#include <cuda_runtime_api.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/log.h"
#include "trace/clock.h"
#include "trace/gpu_capture.h"

namespace fovea::trace {
namespace {

// An event whose completion time is known on the tracer clock.
struct Anchor {
  cudaEvent_t event = nullptr;
  std::int64_t cpu_ns = 0;
};

struct Span {
  cudaEvent_t begin = nullptr;
  cudaEvent_t end = nullptr;
  int device = 0;
  Stream stream = nullptr;
  RangeRecord range;
};

class EventCapture final : public GpuCapture {
 public:
  ~EventCapture() override;
  // Anchors the current device, so that a broken CUDA set-up shows at session start.
  Status start();
  CaptureMode mode() const override { return CaptureMode::kCudaEvents; }
  std::optional<std::uint64_t> begin_stream_range(Stream stream) override;
  void end_stream_range(std::uint64_t token, Stream stream, const RangeRecord& range) override;
  Result<CapturedWork> finish() override;

 private:
  Result<cudaEvent_t> take_event();
  Result<const Anchor*> anchor(int device);
  Status to_op(const Span& span);
  void harvest();

  // Guarded by the tracer's lock: begin/end are called under it, finish after the session ended.
  std::vector<cudaEvent_t> free_events_;
  std::vector<cudaEvent_t> all_events_;
  std::map<int, Anchor> anchors_;
  std::unordered_map<std::uint64_t, Span> spans_;  // by token
  std::deque<std::uint64_t> ended_;                // tokens of ended spans, in the order they ended
  std::uint64_t next_token_ = 0;
  std::vector<GpuOpRecord> ops_;
  bool warned_ = false;
};

Status EventCapture::start() {
  int device = 0;
  FOVEA_CUDA_TRY(cudaGetDevice(&device));
  return anchor(device).status();
}

EventCapture::~EventCapture() {
  for (cudaEvent_t e : all_events_) cudaEventDestroy(e);
  for (auto& [device, a] : anchors_) cudaEventDestroy(a.event);
}

Result<cudaEvent_t> EventCapture::take_event() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  FOVEA_CUDA_TRY(cudaEventCreate(&e));
  all_events_.push_back(e);
  return e;
}

// The anchor is recorded on an idle stream of its own and waited for: its GPU time lies between
// the CPU times before the record and after the wait, so their midpoint is off by at most half
// that interval. The first record of a process pays for set-up, and another process's work on the
// GPU can delay one, so several are taken and the one with the shortest interval kept
// (microseconds).
constexpr int kAnchorTries = 8;

Result<const Anchor*> EventCapture::anchor(int device) {
  if (auto it = anchors_.find(device); it != anchors_.end()) return &it->second;
  cudaStream_t stream = nullptr;
  FOVEA_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Anchor a;
  std::int64_t best_interval = 0;
  Status status = [&]() -> Status {
    for (int attempt = 0; attempt < kAnchorTries; ++attempt) {
      cudaEvent_t event = nullptr;
      FOVEA_CUDA_TRY(cudaEventCreate(&event));
      const std::int64_t before = now_ns();
      const cudaError_t recorded = cudaEventRecord(event, stream);
      const cudaError_t waited = recorded == cudaSuccess ? cudaEventSynchronize(event) : recorded;
      const std::int64_t interval = now_ns() - before;
      if (waited != cudaSuccess || (a.event != nullptr && interval >= best_interval)) {
        cudaEventDestroy(event);
        FOVEA_CUDA_TRY(waited);
        continue;
      }
      if (a.event != nullptr) cudaEventDestroy(a.event);
      a.event = event;
      a.cpu_ns = before + interval / 2;
      best_interval = interval;
    }
    return Status::ok();
  }();
  cudaStreamDestroy(stream);
  if (!status.is_ok()) {
    if (a.event != nullptr) cudaEventDestroy(a.event);
    return status;
  }
  return &anchors_.emplace(device, a).first->second;
}

// Turns the oldest spans into ops once their work is done, so that their events are reused and
// a long session does not keep creating events.
void EventCapture::harvest() {
  while (!ended_.empty()) {
    auto it = spans_.find(ended_.front());
    if (cudaEventQuery(it->second.end) != cudaSuccess || !to_op(it->second).is_ok()) return;
    free_events_.push_back(it->second.begin);
    free_events_.push_back(it->second.end);
    spans_.erase(it);
    ended_.pop_front();
  }
}

std::optional<std::uint64_t> EventCapture::begin_stream_range(Stream stream) {
  harvest();
  // An event recorded into a stream being captured into a CUDA graph would become a graph node
  // and have no time.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  int device = 0;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess || capturing != cudaStreamCaptureStatusNone ||
      cudaGetDevice(&device) != cudaSuccess || !anchor(device).is_ok()) {
    return std::nullopt;
  }
  auto begin = take_event();
  auto end = take_event();
  if (!begin.is_ok() || !end.is_ok() || cudaEventRecord(*begin, stream) != cudaSuccess) {
    if (!warned_) log_warn("trace: CUDA events could not be recorded; some ranges have no GPU time");
    warned_ = true;
    return std::nullopt;
  }
  spans_.emplace(next_token_, Span{.begin = *begin, .end = *end, .device = device, .stream = stream});
  return next_token_++;
}

void EventCapture::end_stream_range(std::uint64_t token, Stream stream, const RangeRecord& range) {
  auto it = spans_.find(token);
  it->second.range = range;
  if (cudaEventRecord(it->second.end, stream) == cudaSuccess) {
    ended_.push_back(token);
  } else {
    spans_.erase(it);  // its events stay owned by all_events_
  }
}

Status EventCapture::to_op(const Span& span) {
  FOVEA_CUDA_TRY(cudaEventSynchronize(span.end));
  FOVEA_ASSIGN_OR_RETURN(const Anchor* a, anchor(span.device));
  float since_anchor_ms = 0;
  float duration_ms = 0;
  FOVEA_CUDA_TRY(cudaEventElapsedTime(&since_anchor_ms, a->event, span.begin));
  FOVEA_CUDA_TRY(cudaEventElapsedTime(&duration_ms, span.begin, span.end));
  const auto start = a->cpu_ns + static_cast<std::int64_t>(static_cast<double>(since_anchor_ms) * 1e6);
  ops_.push_back(
      GpuOpRecord{.kind = GpuOpKind::kRangeSpan,
                  .name = span.range.name,
                  .device = span.device,
                  .stream = reinterpret_cast<std::uint64_t>(span.stream),
                  .start_ns = start,
                  .end_ns = start + static_cast<std::int64_t>(static_cast<double>(duration_ms) * 1e6),
                  .correlation = ops_.size() + 1,
                  .api_name = "range begin",
                  .api_thread = span.range.thread,
                  .api_start_ns = span.range.start_ns,
                  .api_end_ns = span.range.start_ns});
  return Status::ok();
}

Result<CapturedWork> EventCapture::finish() {
  // Spans whose range never ended (the session stopped first) have no end event and are left out.
  for (std::uint64_t token : ended_) FOVEA_TRY(to_op(spans_.at(token)));
  ended_.clear();
  spans_.clear();
  return CapturedWork{.ops = std::move(ops_), .blocking_calls = {}};
}

}  // namespace

Result<std::unique_ptr<GpuCapture>> start_event_capture() {
  auto capture = std::make_unique<EventCapture>();
  FOVEA_TRY(capture->start());
  return std::unique_ptr<GpuCapture>(std::move(capture));
}

}  // namespace fovea::trace
