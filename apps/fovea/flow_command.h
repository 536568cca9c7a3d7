// What the flow commands (run, segment, detect, demo) share: the common options, running a
// configuration with the summary and the exit code the README documents, and WIDTHxHEIGHT sizes.
//
// Exit codes: 0 when every source went through, 3 when some sources (or their outputs) failed and
// the others completed, 1 when the flow itself failed, 2 when the command line or the configuration
// asked for something wrong (nothing ran), 130 on Ctrl-C (outputs finalized).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "pipeline/config.h"
#include "pipeline/flow_runner.h"

namespace fovea::app {

struct CommonArgs {
  std::string device = "auto";
  bool no_progress = false;
  std::string report;
  std::string trace;
};

void add_common_options(CLI::App* command, CommonArgs* args);
pipeline::FlowOptions flow_options(const CommonArgs& args);
void apply_common(const CommonArgs& args, pipeline::PipelineConfig& config);
// Whether the flow will run on the CPU (asked for, or no GPU).
bool runs_on_cpu(const CommonArgs& args);

// How a command names what the flow refused: the flow names configuration keys; a command whose user
// typed flags rewrites them (segment's --class for task.classes, ...).
using ErrorNamer = Status (*)(const Status&);
Status keys_as_written(const Status& status);

// Runs the flow, prints the stats table and the outputs, and returns the exit code.
int run_flow_command(const pipeline::PipelineConfig& config, const CommonArgs& args,
                     ErrorNamer name_error = keys_as_written);

// "960x544" -> {width, height}: WIDTHxHEIGHT, as FFmpeg's -s and every size fovea prints. The
// configuration's checks judge the numbers; the error names `flag`.
Result<std::pair<int, int>> parse_size(const std::string& text, std::string_view flag);

}  // namespace fovea::app
