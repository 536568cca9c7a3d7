#include "support/rtsp_server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>

namespace fovea::testing {
namespace {

using Clock = std::chrono::steady_clock;

// GStreamer's start (plugin registry, encoder) takes about a second on a busy two-core machine;
// this bound only ends a start that went wrong.
constexpr auto kReadyTimeout = std::chrono::seconds(20);
// A clean stop takes milliseconds; past this the server is taken to hang and is killed.
constexpr auto kStopTimeout = std::chrono::seconds(3);
// How often the waits below look again.
constexpr auto kPollInterval = std::chrono::milliseconds(10);
constexpr int kPollIntervalMs = 10;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

std::string errno_text() {
  return std::strerror(errno);
}

// Waits for `pid` until `deadline`; its raw wait status, or nullopt if it still runs.
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline) {
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) {
      return status;
    }
    if (Clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
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

RtspServerProcess::~RtspServerProcess() {
  reap_killed();
}

Status RtspServerProcess::launch(int port) {
  const std::vector<std::string> args = {FOVEA_RTSP_TEST_SERVER_PATH,
                                         "--port",
                                         std::to_string(port),
                                         "--mount",
                                         "/cam",
                                         "--width",
                                         std::to_string(spec_.width),
                                         "--height",
                                         std::to_string(spec_.height),
                                         "--fps",
                                         std::to_string(spec_.fps),
                                         "--gop",
                                         std::to_string(spec_.gop)};
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  int stdout_pipe[2];
  if (pipe2(stdout_pipe, O_CLOEXEC) != 0) {
    return make_error(StatusCode::kIoError, "rtsp test server: pipe: ", errno_text());
  }
  pid_ = fork();
  if (pid_ == 0) {
    // The server must not outlive a test process that crashed or was killed.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(stdout_pipe[1], STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(stdout_pipe[1]);
  if (pid_ < 0) {
    close(stdout_pipe[0]);
    return make_error(StatusCode::kIoError, "rtsp test server: fork: ", errno_text());
  }
  paused_ = false;
  const Status ready = read_ready_line(stdout_pipe[0]);
  close(stdout_pipe[0]);  // it prints nothing after the ready line
  if (!ready.is_ok()) {
    reap_killed();
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
  if (pid_ < 0) {
    return Status::ok();
  }
  resume();  // a stopped process holds the SIGTERM until it runs again
  ::kill(pid_, SIGTERM);
  const std::optional<int> status = wait_until(pid_, Clock::now() + kStopTimeout);
  if (!status) {
    reap_killed();
    return make_error(StatusCode::kInternal, "rtsp test server ignored SIGTERM for ",
                      std::to_string(kStopTimeout.count()), " s and was killed");
  }
  pid_ = -1;
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return make_error(StatusCode::kInternal, "rtsp test server did not exit cleanly on SIGTERM (wait status ",
                      std::to_string(*status), ")");
  }
  return Status::ok();
}

void RtspServerProcess::kill() {
  reap_killed();
}

void RtspServerProcess::reap_killed() {
  if (pid_ < 0) {
    return;
  }
  ::kill(pid_, SIGKILL);  // also ends a stopped process
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  paused_ = false;
}

void RtspServerProcess::pause() {
  if (pid_ > 0 && !paused_) {
    ::kill(pid_, SIGSTOP);
    paused_ = true;
  }
}

void RtspServerProcess::resume() {
  if (pid_ > 0 && paused_) {
    ::kill(pid_, SIGCONT);
    paused_ = false;
  }
}

Status RtspServerProcess::restart(const std::optional<RtspStreamSpec>& spec) {
  FOVEA_TRY(stop());
  if (spec) {
    spec_ = *spec;
  }
  return launch(port_);
}

LoopbackTcpServer::LoopbackTcpServer(std::function<bool(int)> serve) : serve_(std::move(serve)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listen_fd_, 8) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "cannot listen on a loopback port: " << errno_text();
    return;
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { accept_loop(); });
}

LoopbackTcpServer::~LoopbackTcpServer() {
  stopping_ = true;
  if (thread_.joinable()) {
    thread_.join();
  }
  for (int fd : open_connections_) close(fd);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
  }
}

std::string LoopbackTcpServer::rtsp_url() const {
  return "rtsp://127.0.0.1:" + std::to_string(port_) + "/cam";
}

void LoopbackTcpServer::accept_loop() {
  while (!stopping_) {
    pollfd pending{listen_fd_, POLLIN, 0};
    if (poll(&pending, 1, kPollIntervalMs) <= 0) {
      continue;
    }
    const int connection = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      continue;
    }
    if (serve_(connection)) {
      open_connections_.push_back(connection);
    } else {
      close(connection);
    }
  }
}

SilentTcpServer::SilentTcpServer() : LoopbackTcpServer([](int) { return true; }) {}

// The client speaks first (an RTSP OPTIONS request); its request is read before the answer, so
// that the close after it is an orderly end (FIN) and the client reads all of the garbage, where a
// close with unread input would reset the connection instead.
GarbageTcpServer::GarbageTcpServer()
    : LoopbackTcpServer([](int connection) {
        pollfd request{connection, POLLIN, 0};
        char discarded[4096];
        if (poll(&request, 1, 1000) > 0) {
          [[maybe_unused]] const ssize_t ignored = read(connection, discarded, sizeof(discarded));
        }
        std::mt19937 random(24);  // fixed: every run sends the same garbage
        std::vector<unsigned char> garbage(4096);
        for (unsigned char& byte : garbage) byte = static_cast<unsigned char>(random());
        [[maybe_unused]] const ssize_t sent = send(connection, garbage.data(), garbage.size(), MSG_NOSIGNAL);
        shutdown(connection, SHUT_WR);
        return false;
      }) {}

int unused_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  const bool bound = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) close(fd);
  if (!bound) {
    ADD_FAILURE() << "cannot bind a loopback port: " << errno_text();
    return 0;
  }
  return ntohs(address.sin_port);
}

}  // namespace fovea::testing
