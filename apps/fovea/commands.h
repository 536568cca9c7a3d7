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
void add_image_bench_command(CLI::App& app, Action* action);
void add_model_command(CLI::App& app, Action* action);
void add_report_command(CLI::App& app, Action* action);
void add_sweep_command(CLI::App& app, Action* action);
void add_pipeline_commands(CLI::App& app, Action* action);  // run, segment, demo
void add_detect_command(CLI::App& app, Action* action);
void add_serve_command(CLI::App& app, Action* action);
void add_images_command(CLI::App& app, Action* action);
// `fovea demo detect`, under the demo command (cmd_pipeline.cpp).
void add_detect_demo(CLI::App* demo, Action* action);

// Checks shared by the subcommands' options (cmd_pipeline.cpp), so that a bad value is refused
// before any work, with exit 2 and the option named.
// A whole number of at least `min`: "--frames: must be at least 1, got -5".
CLI::Validator at_least(long long min);
// A whole number within [min, max]: "--threads: must be between 0 and 1024, got 100000".
CLI::Validator whole_number_in(long long min, long long max);
// A finite number within [min, max]; unlike CLI::Range and CLI::PositiveNumber, NaN and infinity
// are refused ("must be a finite number between 0 and 200, got nan").
CLI::Validator number_in(double min, double max);
// An encoder preset: x264's names (ultrafast .. placebo) or NVENC's p1 .. p7.
CLI::Validator encoder_preset();

// Set by the first Ctrl-C (SIGINT/SIGTERM); long-running commands poll it, finish what they
// hold and finalize their outputs. A second signal only says how to abort; the third aborts
// without finalizing (exit 1), so that a signal delivered twice never costs an output.
const std::atomic<bool>& interrupt_flag();
void install_interrupt_handler();

}  // namespace fovea::app
