#include "support/cli_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>

namespace fovea::testing {

pid_t start_cli(const std::string& binary, const std::vector<std::string>& args,
                const std::filesystem::path& log, const CliLaunch& launch) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (launch.own_process_group) setpgid(0, 0);
    if (launch.die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!launch.cwd.empty() && chdir(launch.cwd.c_str()) != 0) _exit(126);
    const int fd = log.empty() ? -1 : open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    if (launch.stdout_fd >= 0) dup2(launch.stdout_fd, STDOUT_FILENO);
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  // Also from the parent: a signal sent to the group right after the fork must find it.
  if (pid > 0 && launch.own_process_group) setpgid(pid, pid);
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

int run_cli(const std::string& binary, const std::vector<std::string>& args,
            const std::filesystem::path& log) {
  return wait_exit(start_cli(binary, args, log));
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace fovea::testing
