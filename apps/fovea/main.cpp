// fovea: GPU video analytics. One file per subcommand; this file wires them up.
#include <csignal>
#include <cstdio>
#include <exception>

#include "commands.h"
#include "core/log.h"

namespace fovea::app {
namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  if (g_interrupted.exchange(true)) {
    std::_Exit(kExitInterrupted);  // second Ctrl-C: the user means it
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
}

int run(int argc, char** argv) {
  CLI::App app{"fovea: GPU video analytics (decode, batch, infer, postprocess, encode, profile)"};
  app.require_subcommand(1);
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
  add_model_command(app, &action);
  add_pipeline_commands(app, &action);
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
    return fovea::app::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fovea: fatal: %s\n", e.what());
    return fovea::app::kExitFailure;
  }
}
