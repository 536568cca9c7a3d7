// fovea: GPU video analytics. One file per subcommand; this file wires them up.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "commands.h"
#include "core/gpu.h"
#include "core/log.h"
#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::app {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signals{0};

// Only async-signal-safe calls here: write(2) and _Exit.
void say(std::string_view message) {
  // Nothing to do if stderr is gone; a cast to void does not quiet glibc's warn_unused_result.
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, message.data(), message.size());
}

// Finalizing outputs must survive repeated signals: `timeout` and process managers signal the
// process and its group, so one interruption often arrives twice. The first signal asks the
// command to drain and finalize; the second only says how to abort; the third aborts without
// finalizing, which is then not exit 130 (130 promises finalized outputs).
void on_interrupt(int) {
  const int count = g_signals.fetch_add(1) + 1;
  if (count == 1) {
    g_interrupted.store(true);
    say("\nfovea: interrupted: finishing outputs\n");
  } else if (count == 2) {
    say("\nfovea: finishing outputs, press Ctrl-C again to abort without finalizing\n");
  } else {
    say("\nfovea: aborted: outputs were not finalized (unfinished files end in .partial)\n");
    std::_Exit(kExitFailure);
  }
}

}  // namespace

const std::atomic<bool>& interrupt_flag() {
  return g_interrupted;
}

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A peer that closes its end (a camera, a broker, an HTTP client) makes a write fail with EPIPE,
  // which every caller handles; the signal would kill the whole process instead.
  std::signal(SIGPIPE, SIG_IGN);
}

// `fovea --version`: CMake's project version, and whether this build can use a GPU.
std::string version_text() {
#if defined(FOVEA_HAVE_CUDA)
  return fmt::format("fovea {}\nCUDA: yes (toolkit {}, code for sm_{}); GPUs visible: {}", FOVEA_VERSION,
                     FOVEA_CUDA_VERSION, FOVEA_CUDA_ARCHITECTURES, cuda_device_count());
#else
  return fmt::format("fovea {}\nCUDA: no (built CPU-only)", FOVEA_VERSION);
#endif
}

int run(int argc, char** argv) {
  CLI::App app{"fovea: GPU video analytics (decode, batch, infer, postprocess, encode, profile)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "Print the version and the build's CUDA support");
  // Subcommands inherit this: -q and -v after the subcommand (`fovea report DIR -q`) reach the
  // flags below, as the help's footer promises.
  app.fallthrough();
  app.footer(
      "Exit codes: 0 ok, 1 failed, 2 bad command line, 3 some inputs failed, 130 interrupted.\n"
      "Logging: -v/--verbose, -q/--quiet, or FOVEA_LOG_LEVEL=error|warn|info|debug.");
  bool verbose = false;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "Log debug messages");
  app.add_flag("-q,--quiet", quiet, "Log errors only");

  Action action;
  add_probe_command(app, &action);
  add_transcode_command(app, &action);
  add_decode_bench_command(app, &action);
  add_image_bench_command(app, &action);
  add_model_command(app, &action);
  add_pipeline_commands(app, &action);
  add_detect_command(app, &action);
  add_serve_command(app, &action);
  add_images_command(app, &action);
  add_report_command(app, &action);
  add_sweep_command(app, &action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (verbose) {
    set_log_level(LogLevel::kDebug);
  } else if (quiet) {
    set_log_level(LogLevel::kError);
  }
  install_interrupt_handler();
  return action();
}

}  // namespace fovea::app

int main(int argc, char** argv) {
  // The one top-level handler: nothing below main lets an exception cross a library boundary,
  // but a std::bad_alloc from the standard library still ends here with a clear message.
  try {
    fovea::widen_cuda_work_queues();  // before any CUDA call: the driver reads it once
    return fovea::app::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fovea: fatal: %s\n", e.what());
    return fovea::app::kExitFailure;
  }
}
