// Live servers for the live-source tests (issue 24): a real RTSP server in a child process
// (fovea_rtsp_test_server, on GStreamer's RTSP server) that a test starts, stops, kills, stalls
// and restarts with another stream, and two TCP servers that misbehave on purpose, one that never
// says a word and one that answers garbage.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace fovea::testing {

// The live H.264 stream the server sends: a moving ball, `gop` frames from keyframe to keyframe.
struct RtspStreamSpec {
  int width = 320;
  int height = 240;
  int fps = 30;
  int gop = 30;
};

class RtspServerProcess {
 public:
  // Starts the server on a free loopback port (it picks one) and waits for its ready line.
  static Result<std::unique_ptr<RtspServerProcess>> start(const RtspStreamSpec& spec = {});
  ~RtspServerProcess();  // kills the server if it still runs
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
  // SIGKILL and reap, if it runs.
  void reap_killed();

  RtspStreamSpec spec_;
  pid_t pid_ = -1;
  bool paused_ = false;
  int port_ = 0;
  std::string url_;
};

// A TCP server on a free loopback port. An accept thread hands every connection to `serve`, which
// returns true to keep it open (until the server is destroyed) or false to have it closed.
class LoopbackTcpServer {
 public:
  explicit LoopbackTcpServer(std::function<bool(int connection_fd)> serve);
  ~LoopbackTcpServer();
  LoopbackTcpServer(const LoopbackTcpServer&) = delete;
  LoopbackTcpServer& operator=(const LoopbackTcpServer&) = delete;

  int port() const { return port_; }
  // rtsp://127.0.0.1:PORT/cam
  std::string rtsp_url() const;

 private:
  void accept_loop();

  std::function<bool(int)> serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<int> open_connections_;  // the accept thread's until it is joined
  std::thread thread_;
};

// Accepts every connection and never sends a byte: a client waits for an answer that never comes.
class SilentTcpServer : public LoopbackTcpServer {
 public:
  SilentTcpServer();
};

// Answers every connection with a few kilobytes of random bytes, then closes it.
class GarbageTcpServer : public LoopbackTcpServer {
 public:
  GarbageTcpServer();
};

// A loopback port nothing listens on (bound, then closed again): connecting is refused.
int unused_loopback_port();

}  // namespace fovea::testing
