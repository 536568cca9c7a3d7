#include "flow_command.h"

#include <charconv>
#include <cstdio>

#include "commands.h"
#include "core/gpu.h"
#include "core/log.h"
#include "pipeline/flow.h"

namespace fovea::app {

void add_common_options(CLI::App* command, CommonArgs* args) {
  command
      ->add_option("--device", args->device,
                   "Where the flow runs: auto (the GPU when there is one), cuda, cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  command->add_flag("--no-progress", args->no_progress, "No live progress line");
  command->add_option("--report", args->report, "Write the run's statistics to this JSON file");
  command->add_option("--trace", args->trace,
                      "Trace the run into this folder (trace.json, report.json; fovea report)");
}

pipeline::FlowOptions flow_options(const CommonArgs& args) {
  pipeline::FlowOptions options;
  options.device = args.device == "cuda"  ? pipeline::DeviceChoice::kGpu
                   : args.device == "cpu" ? pipeline::DeviceChoice::kCpu
                                          : pipeline::DeviceChoice::kAuto;
  options.interrupt = &interrupt_flag();
  options.trace_dir = args.trace;
  return options;
}

void apply_common(const CommonArgs& args, pipeline::PipelineConfig& config) {
  if (args.no_progress) config.stats.progress = false;
  if (!args.report.empty()) config.stats.report = args.report;
}

bool runs_on_cpu(const CommonArgs& args) {
  return args.device == "cpu" || (args.device == "auto" && !gpu_available());
}

Status keys_as_written(const Status& status) {
  return status;
}

namespace {

void print_outputs(const pipeline::FlowResult& result) {
  for (const pipeline::SinkReport& output : result.outputs) {
    if (!output.error.empty()) {
      std::printf("  %s: output failed: %s\n", output.source.c_str(), output.error.c_str());
    } else if (!output.path.empty()) {
      std::printf("  %s: %lld frames -> %s (%s)\n", output.source.c_str(),
                  static_cast<long long>(output.frames), output.path.c_str(), output.encoder.c_str());
    }
  }
}

}  // namespace

int run_flow_command(const pipeline::PipelineConfig& config, const CommonArgs& args, ErrorNamer name_error) {
  Result<pipeline::FlowResult> result = pipeline::run_flow(config, flow_options(args));
  if (!result.is_ok()) {
    log_error("{}", name_error(result.status()).to_string());
    switch (result.status().code()) {
      case StatusCode::kCancelled: return kExitInterrupted;  // before anything was written
      case StatusCode::kInvalidArgument:
        return kExitUsage;  // what was asked cannot run (an output that is an input, ...)
      default: return kExitFailure;
    }
  }
  std::printf("\n%s\n\n%s\n", result->device.c_str(), pipeline::format_table(result->stats).c_str());
  print_outputs(*result);
  if (!result->report_status.is_ok()) {
    log_error("{}", result->report_status.to_string());
    return kExitFailure;  // a requested output is missing
  }
  if (config.stats.report) std::printf("  report: %s\n", config.stats.report->c_str());
  // 130 promises that every output was finalized.
  if (result->interrupted) return result->failed_outputs > 0 ? kExitPartial : kExitInterrupted;
  if (result->stats.total_frames() == 0 && result->partial()) return kExitFailure;
  return result->partial() ? kExitPartial : kExitOk;
}

Result<std::pair<int, int>> parse_size(const std::string& text, std::string_view flag) {
  const auto number = [](std::string_view part, int& out) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && error == std::errc() && end == part.data() + part.size();
  };
  const std::size_t x = text.find('x');
  int width = 0;
  int height = 0;
  if (x == std::string::npos || !number(std::string_view(text).substr(0, x), width) ||
      !number(std::string_view(text).substr(x + 1), height)) {
    return make_error(StatusCode::kInvalidArgument, std::string(flag), " ", text,
                      ": expected WIDTHxHEIGHT, e.g. 960x544");
  }
  return std::pair{width, height};
}

}  // namespace fovea::app
