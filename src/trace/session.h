// A trace session: while it lives, fovea's ranges (trace/tracer.h) and the GPU work they launch
// are recorded; stop() writes DIR/trace.json and DIR/report.json. One session at a time.
//
//   FOVEA_ASSIGN_OR_RETURN(auto session, trace::Session::start({.dir = trace_dir}));
//   ... work ...
//   FOVEA_TRY(session.stop().status());
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/status.h"
#include "trace/analysis.h"

namespace fovea::trace {

enum class CaptureRequest {
  kAuto,        // CUPTI, else CUDA events, else CPU only (no CUDA or no GPU)
  kCudaEvents,  // CUDA events even where CUPTI works (the fallback's own tests)
  kCpuOnly,
};

struct SessionOptions {
  std::filesystem::path dir;  // where stop() writes; empty: nothing is written
  std::string label;          // names the run in multi-run reports
  CaptureRequest capture = CaptureRequest::kAuto;
  std::int64_t gap_threshold_ns = kDefaultGapThresholdNs;
};

class Session {
 public:
  // Fails when another session is recording or DIR cannot be created. A GPU capture that cannot
  // start is not an error: the session falls back (CUPTI → CUDA events → CPU only) and logs why.
  static Result<Session> start(SessionOptions options);

  Session(Session&& other) noexcept;
  Session& operator=(Session&&) = delete;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Stops and writes when stop() was not called; failures are logged.
  ~Session();

  // Stops recording, waits for the GPU work launched so far, computes the report and writes it.
  Result<Report> stop();

 private:
  explicit Session(SessionOptions options) : options_(std::move(options)) {}

  SessionOptions options_;
  bool active_ = false;
};

// For commands with a --trace DIR option: no session when options.dir is empty. The session
// writes its files when it goes out of scope.
Result<std::optional<Session>> start_session_if_requested(SessionOptions options);

}  // namespace fovea::trace
