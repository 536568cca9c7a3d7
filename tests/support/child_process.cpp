#include "support/child_process.h"

#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <thread>

namespace fovea::testing {
namespace {

// How often a wait for the child's exit looks again.
constexpr auto kPollInterval = std::chrono::milliseconds(10);

}  // namespace

ChildProcess::~ChildProcess() {
  kill();
}

Status ChildProcess::start(const std::string& binary, const std::vector<std::string>& args,
                           const std::filesystem::path& log, CliLaunch launch) {
  if (running()) return make_error(StatusCode::kInternal, binary, " is already running");
  launch.die_with_parent = true;
  pid_ = start_cli(binary, args, log, launch);
  if (pid_ < 0) return make_error(StatusCode::kIoError, binary, ": cannot fork");
  return Status::ok();
}

std::optional<int> ChildProcess::exited() {
  if (!running()) return std::nullopt;
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_ || (done < 0 && errno != EINTR)) {
    pid_ = -1;
    return status;
  }
  return std::nullopt;
}

std::optional<int> ChildProcess::terminate(std::chrono::milliseconds timeout) {
  if (!running()) return std::nullopt;
  ::kill(pid_, SIGTERM);
  resume();  // a stopped process handles the SIGTERM only once it runs again
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const std::optional<int> status = exited()) return status;
    std::this_thread::sleep_for(kPollInterval);
  }
  kill();
  return std::nullopt;
}

void ChildProcess::kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ChildProcess::stall() {
  signal(SIGSTOP);
}

void ChildProcess::resume() {
  signal(SIGCONT);
}

void ChildProcess::signal(int signal_number) {
  if (running()) ::kill(pid_, signal_number);
}

}  // namespace fovea::testing
