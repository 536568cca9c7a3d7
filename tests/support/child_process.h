// A server a test runs in a child process (the RTSP test server, mosquitto) and disrupts as the
// network does: stopped cleanly, killed mid-stream, stalled with its connections open, resumed.
// One place for the fork, the signals and the reaping, so that no test leaves a zombie or a server
// behind: the child dies with the test process, and with its ChildProcess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "support/cli_process.h"

namespace fovea::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // kill()
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `binary` with `args` (start_cli: `log` and `launch` say where its output goes); it dies
  // with the test process. kInternal if one is still running, kIoError if it cannot fork.
  Status start(const std::string& binary, const std::vector<std::string>& args,
               const std::filesystem::path& log, CliLaunch launch = {});

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Its wait status once it has exited (it is reaped); nullopt while it runs (or none was started).
  std::optional<int> exited();
  // SIGTERM, and waits at most `timeout` for it to exit; SIGKILL past that. Its wait status, or
  // nullopt when it had to be killed (or none ran). A stalled child is resumed to take the SIGTERM.
  std::optional<int> terminate(std::chrono::milliseconds timeout);
  // SIGKILL and reap: its sockets close at once, as when a machine loses power; also ends a
  // stalled child. Nothing if none runs.
  void kill();
  // SIGSTOP: its connections stay open but it answers nothing, as a hung server.
  void stall();
  // SIGCONT after stall(): it goes on where it stopped.
  void resume();
  // Any other signal (mosquitto saves its state on SIGUSR1).
  void signal(int signal_number);

 private:
  pid_t pid_ = -1;
};

}  // namespace fovea::testing
