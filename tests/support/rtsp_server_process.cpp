#include "support/rtsp_server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fovea::testing {
namespace {

using Clock = std::chrono::steady_clock;

// GStreamer's start (plugin registry, encoder) takes about a second on a busy two-core machine;
// this bound only ends a start that went wrong.
constexpr auto kReadyTimeout = std::chrono::seconds(20);
// A clean stop takes milliseconds; past this the server is taken to hang and is killed.
constexpr auto kStopTimeout = std::chrono::seconds(3);

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// The port of "rtsp://127.0.0.1:PORT/path".
int port_of(const std::string& url) {
  const std::size_t colon = url.rfind(':');
  const std::size_t slash = url.find('/', colon);
  return colon == std::string::npos ? 0 : std::atoi(url.substr(colon + 1, slash - colon - 1).c_str());
}

}  // namespace

Result<std::unique_ptr<RtspServerProcess>> RtspServerProcess::start(const RtspStreamSpec& spec) {
  std::unique_ptr<RtspServerProcess> server(new RtspServerProcess(spec));
  FOVEA_TRY(server->launch(0));
  return server;
}

std::unique_ptr<RtspServerProcess> start_rtsp_server(const RtspStreamSpec& spec) {
  Result<std::unique_ptr<RtspServerProcess>> server = RtspServerProcess::start(spec);
  EXPECT_TRUE(server.is_ok()) << server.status().to_string();
  return server.is_ok() ? std::move(server).value() : nullptr;
}

Status RtspServerProcess::launch(int port) {
  std::vector<std::string> args = {"--port",   std::to_string(port),
                                   "--mount",  "/cam",
                                   "--width",  std::to_string(spec_.width),
                                   "--height", std::to_string(spec_.height),
                                   "--fps",    std::to_string(spec_.fps),
                                   "--gop",    std::to_string(spec_.gop),
                                   "--codec",  spec_.codec};
  if (spec_.clock_jump_ms != 0) {
    args.insert(args.end(), {"--clock-jump-at-ms", std::to_string(spec_.clock_jump_at_ms), "--clock-jump-ms",
                             std::to_string(spec_.clock_jump_ms)});
  }
  int stdout_pipe[2];
  if (pipe2(stdout_pipe, O_CLOEXEC) != 0) {
    return make_error(StatusCode::kIoError, "rtsp test server: pipe: ", std::strerror(errno));
  }
  // Its stderr stays the test's: a server that fails to start says why in the test's log.
  const Status started = child_.start(FOVEA_RTSP_TEST_SERVER_PATH, args, "", {.stdout_fd = stdout_pipe[1]});
  close(stdout_pipe[1]);
  const Status ready = started.is_ok() ? read_ready_line(stdout_pipe[0]) : started;
  close(stdout_pipe[0]);  // it prints nothing after the ready line
  if (!ready.is_ok()) {
    child_.kill();
  }
  return ready;
}

Status RtspServerProcess::read_ready_line(int stdout_fd) {
  const Clock::time_point deadline = Clock::now() + kReadyTimeout;
  std::string output;
  while (output.find('\n') == std::string::npos) {
    pollfd readable{stdout_fd, POLLIN, 0};
    const int polled = poll(&readable, 1, remaining_ms(deadline));
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) {
      return make_error(StatusCode::kTimeout, "rtsp test server (", FOVEA_RTSP_TEST_SERVER_PATH,
                        ") printed no ready line within ", std::to_string(kReadyTimeout.count()),
                        " s; it printed: '", output, "'");
    }
    char buffer[256];
    const ssize_t got = read(stdout_fd, buffer, sizeof(buffer));
    if (got <= 0) {
      return make_error(StatusCode::kIoError, "rtsp test server (", FOVEA_RTSP_TEST_SERVER_PATH,
                        ") exited before it was ready (see its stderr above); it printed: '", output, "'");
    }
    output.append(buffer, static_cast<std::size_t>(got));
  }
  const std::string line = output.substr(0, output.find('\n'));
  const std::string prefix = "ready ";
  if (!line.starts_with(prefix) || port_of(line) <= 0) {
    return make_error(StatusCode::kInternal, "rtsp test server: unexpected ready line '", line, "'");
  }
  url_ = line.substr(prefix.size());
  port_ = port_of(url_);
  return Status::ok();
}

Status RtspServerProcess::stop() {
  if (!child_.running()) {
    return Status::ok();
  }
  const std::optional<int> status = child_.terminate(kStopTimeout);
  if (!status) {
    return make_error(StatusCode::kInternal, "rtsp test server ignored SIGTERM for ",
                      std::to_string(kStopTimeout.count()), " s and was killed");
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return make_error(StatusCode::kInternal, "rtsp test server did not exit cleanly on SIGTERM (wait status ",
                      std::to_string(*status), ")");
  }
  return Status::ok();
}

void RtspServerProcess::kill() {
  child_.kill();
}

void RtspServerProcess::pause() {
  child_.stall();
}

void RtspServerProcess::resume() {
  child_.resume();
}

Status RtspServerProcess::restart(const std::optional<RtspStreamSpec>& spec) {
  FOVEA_TRY(stop());
  if (spec) {
    spec_ = *spec;
  }
  return launch(port_);
}

}  // namespace fovea::testing
