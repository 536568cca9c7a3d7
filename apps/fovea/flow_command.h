// What the flow commands (run, segment, detect, demo) share: the common options, running a
// configuration with the summary and the exit code the README documents, and WIDTHxHEIGHT sizes.
//
// Exit codes: 0 when every source went through, 3 when some sources (or their outputs) failed and
// the others completed, 1 when the flow itself failed, 2 when the command line or the configuration
// asked for something wrong (nothing ran), 130 on Ctrl-C (outputs finalized).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Logs why a command could not start (its configuration, a service it opens) and gives the exit
// code: 2 when the command line asked for something wrong (kInvalidArgument), else 1.
int refuse(const Status& status);

// Runs the flow, prints the stats table and the outputs, and returns the exit code. `options` are
// flow_options(args) with what a command adds (fovea serve's source control).
int run_flow_command(const pipeline::PipelineConfig& config, const CommonArgs& args,
                     ErrorNamer name_error = keys_as_written);
int run_flow_command(const pipeline::PipelineConfig& config, const pipeline::FlowOptions& options,
                     ErrorNamer name_error = keys_as_written);

// A configuration file with its --set overrides and the common options applied, its models
// checked to exist; none (the error logged: exit 2) when any of it is wrong.
std::optional<pipeline::PipelineConfig> load_config_file(const std::string& path,
                                                         const std::vector<std::string>& overrides,
                                                         const CommonArgs& common);

// The flags the flow commands (segment, detect) share: the sources, the batching, the primary
// model's file, input size, precision and normalization, and the outputs. An option left out keeps
// the configuration's default (config.h), so that a command and a minimal YAML file run the same job.
struct FlowFlags {
  std::vector<std::string> inputs;
  std::string model;
  std::optional<int> batch;
  std::string size;        // WIDTHxHEIGHT of the network input
  std::string frame_size;  // WIDTHxHEIGHT of the frames
  std::optional<std::string> precision;
  std::string calibration;  // --calib, with --precision int8
  std::optional<std::string> normalize;
  std::optional<std::string> decoder;
  std::string output_dir;
  std::optional<std::string> preset;
  std::string metadata;
  std::string engine_cache;
  bool loop = false;
  CommonArgs common;
};

// Registers the shared flags; `model_help` says what model the command takes.
void add_flow_flags(CLI::App* command, FlowFlags* flags, const std::string& model_help);
// `config` with the shared flags applied: sources, mux, `model` (the flags' file, input size,
// precision, normalization, engine cache) as models[0], the video (or null) and metadata sinks, the
// common options. Errors name the flag.
Status apply_flow_flags(const FlowFlags& flags, pipeline::ModelConfig model,
                        pipeline::PipelineConfig& config);
// The flag and value a shared configuration key came from ("--frame-size 1920x1080"); none for
// keys the shared flags do not set.
std::optional<std::string> shared_flag_of_key(const FlowFlags& flags, const pipeline::PipelineConfig& config,
                                              std::string_view key);
// The index in a key such as "task.classes.1" after `prefix` ("task.classes."), when it is one.
std::optional<std::size_t> key_index(std::string_view key, std::string_view prefix);
// An error the flow gives about a key the shared flags set, rewritten to name the flag: "-o ...",
// "--metadata ...", "--report ..."; `extra` maps the command's own keys the same way.
Status flow_error_naming_flags(const Status& status,
                               std::span<const std::pair<std::string_view, std::string_view>> extra = {});

// "960x544" -> {width, height}: WIDTHxHEIGHT, as FFmpeg's -s and every size fovea prints. The
// configuration's checks judge the numbers; the error names `flag`.
Result<std::pair<int, int>> parse_size(const std::string& text, std::string_view flag);

// --calib FILE, the calibration cache --precision int8 runs with.
void add_calibration_flag(CLI::App* command, std::string* calibration);
// --precision and --calib into the model's entry: int8 without a cache (or a cache without int8) is
// an error naming the flags.
Status apply_precision_flags(const std::optional<std::string>& precision, const std::string& calibration,
                             pipeline::ModelConfig& model);

}  // namespace fovea::app
