#include "trace/session.h"

#include <system_error>
#include <utility>

#include "core/log.h"
#include "trace/recorder.h"
#include "trace/report_io.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::trace {
namespace {

#if defined(FOVEA_HAVE_CUDA)
// CUPTI first: it sees every op. CUDA events see only ranges that name a stream.
std::unique_ptr<GpuCapture> start_capture(CaptureRequest request) {
  if (request == CaptureRequest::kCpuOnly) return nullptr;
  if (cuda_device_count() == 0) {
    log_info("trace: no CUDA device; recording CPU ranges only");
    return nullptr;
  }
  if (request == CaptureRequest::kAuto) {
    auto cupti = start_cupti_capture();
    if (cupti.is_ok()) return std::move(cupti).value();
    log_warn("trace: {}; timing GPU work with CUDA events around ranges that name a stream",
             cupti.status().message());
  }
  auto events = start_event_capture();
  if (events.is_ok()) return std::move(events).value();
  log_warn("trace: {}; recording CPU ranges only", events.status().to_string());
  return nullptr;
}
#else
std::unique_ptr<GpuCapture> start_capture(CaptureRequest) {
  return nullptr;
}
#endif

// Puts every time on the session's own scale: nanoseconds since it started.
void rebase(TraceData& data, std::int64_t origin) {
  for (RangeRecord& r : data.ranges) {
    r.start_ns -= origin;
    r.end_ns -= origin;
  }
  for (GpuOpRecord& o : data.ops) {
    o.start_ns -= origin;
    o.end_ns -= origin;
    // Ops launched before the session have no call; leave their zeros alone.
    if (o.api_thread != 0) {
      o.api_start_ns -= origin;
      o.api_end_ns -= origin;
    }
  }
  for (BlockingCall& c : data.blocking_calls) {
    c.start_ns -= origin;
    c.end_ns -= origin;
  }
}

}  // namespace

Result<Session> Session::start(SessionOptions options) {
  if (!options.dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.dir, ec);
    if (ec) {
      return make_error(StatusCode::kIoError, options.dir.string(),
                        ": could not create the trace directory: ", ec.message());
    }
  }
  FOVEA_TRY(detail::begin_session(start_capture(options.capture)));
  Session session(std::move(options));
  session.active_ = true;
  return session;
}

Session::Session(Session&& other) noexcept
    : options_(std::move(other.options_)), active_(std::exchange(other.active_, false)) {}

Session::~Session() {
  if (!active_) return;
  if (auto report = stop(); !report.is_ok()) log_error("trace: {}", report.status().to_string());
}

Result<Report> Session::stop() {
  if (!active_) return make_error(StatusCode::kInvalidArgument, "the trace session was already stopped");
  active_ = false;
  detail::Collected collected = detail::end_session();
  Report report;
  TraceData& data = report.data;
  data.mode = collected.capture ? collected.capture->mode() : CaptureMode::kCpuOnly;
  data.label = options_.label;
  data.duration_ns = collected.end_ns - collected.origin_ns;
  data.ranges = std::move(collected.ranges);
  if (collected.capture) {
    FOVEA_ASSIGN_OR_RETURN(CapturedWork work, collected.capture->finish());
    data.ops = std::move(work.ops);
    data.blocking_calls = std::move(work.blocking_calls);
  }
  rebase(data, collected.origin_ns);
  // The capture's own wait for the device at the end is not the run's.
  std::erase_if(data.blocking_calls, [&](const BlockingCall& c) { return c.start_ns > data.duration_ns; });
  report.tables = analyze(data, options_.gap_threshold_ns);
  if (!options_.dir.empty()) {
    FOVEA_TRY(write_report(report, options_.dir));
    log_info("trace: {} ranges, {} GPU ops ({}) written to {}", data.ranges.size(), data.ops.size(),
             capture_mode_name(data.mode), options_.dir.string());
  }
  return report;
}

Result<std::optional<Session>> start_session_if_requested(SessionOptions options) {
  if (options.dir.empty()) return std::optional<Session>();
  FOVEA_ASSIGN_OR_RETURN(Session session, Session::start(std::move(options)));
  return std::optional<Session>(std::move(session));
}

}  // namespace fovea::trace
