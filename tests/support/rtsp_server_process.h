// A real RTSP server for the live-source tests (issue 24): fovea_rtsp_test_server (on GStreamer's
// RTSP server) in a child process that a test starts, stops, kills, stalls and restarts with
// another stream. The TCP servers that misbehave on purpose are in loopback_servers.h.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "support/child_process.h"

namespace fovea::testing {

// The live stream the server sends: a moving ball, `gop` frames from keyframe to keyframe, in
// H.264 or H.265 ("h264", "h265"). A wrong clock: from clock_jump_at_ms of the stream on, the
// frames' timestamps move by clock_jump_ms (negative: backwards).
struct RtspStreamSpec {
  int width = 320;
  int height = 240;
  int fps = 30;
  int gop = 30;
  std::string codec = "h264";
  int clock_jump_at_ms = 0;
  int clock_jump_ms = 0;
};

class RtspServerProcess {
 public:
  // Starts the server on a free loopback port (it picks one) and waits for its ready line.
  static Result<std::unique_ptr<RtspServerProcess>> start(const RtspStreamSpec& spec = {});
  ~RtspServerProcess() = default;  // kills the server if it still runs (ChildProcess)
  RtspServerProcess(const RtspServerProcess&) = delete;
  RtspServerProcess& operator=(const RtspServerProcess&) = delete;

  // rtsp://127.0.0.1:PORT/cam; the same across restarts.
  const std::string& url() const { return url_; }

  // SIGTERM, then SIGKILL if it has not exited within a few seconds. kInternal unless it exited
  // cleanly (status 0) on the SIGTERM.
  Status stop();
  // SIGKILL: its sockets close at once, as when a camera loses power mid-stream.
  void kill();
  // SIGSTOP: its connections stay open but nothing more arrives, as from a hung camera.
  void pause();
  // SIGCONT: it goes on where it stopped.
  void resume();
  // Stops it (if it runs) and starts it again on the same port, with `spec` when given (a camera
  // whose resolution was changed) or the previous stream.
  Status restart(const std::optional<RtspStreamSpec>& spec = std::nullopt);

 private:
  explicit RtspServerProcess(const RtspStreamSpec& spec) : spec_(spec) {}
  // Spawns the server on `port` (0: it picks) and waits for "ready URL" on its stdout.
  Status launch(int port);
  Status read_ready_line(int stdout_fd);

  RtspStreamSpec spec_;
  ChildProcess child_;
  int port_ = 0;
  std::string url_;
};

// RtspServerProcess::start for a test: the server, or nullptr with the reason recorded as a test
// failure.
std::unique_ptr<RtspServerProcess> start_rtsp_server(const RtspStreamSpec& spec = {});

}  // namespace fovea::testing
