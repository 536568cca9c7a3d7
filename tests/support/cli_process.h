// Running the fovea binary from tests (the CLI tests): start it with arguments, its stdout and
// stderr into a file, and wait for its exit code.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fovea::testing {

// How the child starts: in a working folder of its own, and as the leader of a process group of
// its own, so that a test can signal its group as `timeout` and terminals do (kill(-pid, ...)).
struct CliLaunch {
  std::filesystem::path cwd;  // empty: the test's own
  bool own_process_group = false;
  // Killed (SIGKILL) when the test process dies: a server a crashed test must not leave behind.
  bool die_with_parent = false;
  // At least 0: stdout into this descriptor (a pipe the test reads) rather than into `log`.
  int stdout_fd = -1;
};

// Starts `binary` with `args`, stdout and stderr into `log` (truncated; empty: the test's own);
// returns its pid, or -1 if it could not fork.
pid_t start_cli(const std::string& binary, const std::vector<std::string>& args,
                const std::filesystem::path& log, const CliLaunch& launch = {});

// Waits for `pid`; its exit code, or -1 when it died of a signal.
int wait_exit(pid_t pid);

// start_cli, then wait_exit.
int run_cli(const std::string& binary, const std::vector<std::string>& args,
            const std::filesystem::path& log);

// The whole file as text ("" when it cannot be read).
std::string read_text(const std::filesystem::path& path);

}  // namespace fovea::testing
