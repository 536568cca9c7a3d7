// The CLI's subcommands. Each lives in its own file and registers itself on the CLI11 app with
// an add_*_command function; main() runs the action of the one the user picked.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <functional>

namespace fovea::app {

// Exit codes, documented in `fovea --help` and README.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;        // the work failed (bad input, device error, ...)
inline constexpr int kExitUsage = 2;          // the command line was wrong
inline constexpr int kExitPartial = 3;        // some inputs failed, the others completed
inline constexpr int kExitInterrupted = 130;  // Ctrl-C; outputs were finalized

using Action = std::function<int()>;

void add_probe_command(CLI::App& app, Action* action);
void add_transcode_command(CLI::App& app, Action* action);
void add_decode_bench_command(CLI::App& app, Action* action);
void add_model_command(CLI::App& app, Action* action);
void add_report_command(CLI::App& app, Action* action);
void add_sweep_command(CLI::App& app, Action* action);
void add_pipeline_commands(CLI::App& app, Action* action);  // run, segment, demo

// Set by the first Ctrl-C (SIGINT/SIGTERM); long-running commands poll it, finish what they
// hold and finalize their outputs. A second Ctrl-C exits at once.
const std::atomic<bool>& interrupt_flag();
void install_interrupt_handler();

}  // namespace fovea::app
