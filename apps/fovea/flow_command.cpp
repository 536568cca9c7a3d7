#include "flow_command.h"

#include <array>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "commands.h"
#include "core/gpu.h"
#include "core/log.h"
#include "io/decoder.h"
#include "pipeline/flow.h"
#include "runtime/session.h"

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

// The inputs a source skipped (image files that could not be read or decoded), the first few by
// name; the report lists up to pipeline::kMaxListedFailures.
void print_skipped_inputs(const pipeline::PipelineStats& stats) {
  constexpr std::size_t kPrinted = 10;
  for (const pipeline::SourceStats& source : stats.sources) {
    if (source.items_failed == 0) continue;
    std::printf("  %s: %llu inputs skipped:\n", source.name.c_str(),
                static_cast<unsigned long long>(source.items_failed));
    for (std::size_t i = 0; i < source.failed_items.size() && i < kPrinted; ++i) {
      std::printf("    %s: %s\n", source.failed_items[i].path.c_str(), source.failed_items[i].reason.c_str());
    }
    if (source.items_failed > kPrinted) {
      std::printf("    ... and %llu more (the report lists the first %zu)\n",
                  static_cast<unsigned long long>(source.items_failed - kPrinted),
                  pipeline::kMaxListedFailures);
    }
  }
}

void print_outputs(const pipeline::FlowResult& result) {
  print_skipped_inputs(result.stats);
  for (const pipeline::SinkReport& output : result.outputs) {
    if (!output.error.empty()) {
      std::printf("  %s: output failed: %s%s%s\n", output.source.c_str(), output.path.c_str(),
                  output.path.empty() ? "" : ": ", output.error.c_str());
    } else if (!output.path.empty()) {
      // Live outputs (sinks.stream) say what they lost to full queues and absent servers.
      const std::string losses =
          output.dropped > 0 || output.reconnects > 0
              ? fmt::format(", {} dropped, {} reconnects", output.dropped, output.reconnects)
              : std::string();
      std::printf("  %s: %lld frames -> %s (%s)%s\n", output.source.c_str(),
                  static_cast<long long>(output.frames), output.path.c_str(), output.encoder.c_str(),
                  losses.c_str());
    }
  }
}

}  // namespace

std::optional<pipeline::PipelineConfig> load_config_file(const std::string& path,
                                                         const std::vector<std::string>& overrides,
                                                         const CommonArgs& common) {
  Result<pipeline::PipelineConfig> config = pipeline::load_config(path);
  if (!config.is_ok()) {
    log_error("{}", config.status().to_string());
    return std::nullopt;
  }
  if (Status status = pipeline::apply_overrides(*config, overrides); !status.is_ok()) {
    log_error("{}", status.to_string());
    return std::nullopt;
  }
  apply_common(common, *config);
  // As segment's --model: a model that is not there is a mistake in what was asked.
  for (std::size_t i = 0; i < config->models.size(); ++i) {
    if (!std::filesystem::is_regular_file(config->models[i].path)) {
      const bool folder = std::filesystem::is_directory(config->models[i].path);
      log_error("{}: models.{}.path '{}': {}", path, i, config->models[i].path,
                folder ? "is a folder, not an ONNX file" : "no such file");
      return std::nullopt;
    }
  }
  return std::move(config).value();
}

int refuse(const Status& status) {
  log_error("{}", status.to_string());
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

int run_flow_command(const pipeline::PipelineConfig& config, const CommonArgs& args, ErrorNamer name_error) {
  return run_flow_command(config, flow_options(args), name_error);
}

int run_flow_command(const pipeline::PipelineConfig& config, const pipeline::FlowOptions& options,
                     ErrorNamer name_error) {
  Result<pipeline::FlowResult> result = pipeline::run_flow(config, options);
  if (!result.is_ok()) {
    // A Ctrl-C while the flow was starting (a source that does not answer) ends it that way too.
    if (interrupt_flag().load()) {
      log_error("interrupted while starting: {}", name_error(result.status()).to_string());
      return kExitInterrupted;
    }
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

void add_calibration_flag(CLI::App* command, std::string* calibration) {
  command
      ->add_option("--calib", *calibration,
                   "With --precision int8: the calibration cache made for the model (fovea model calibrate)")
      ->check(CLI::ExistingFile);
}

Status apply_precision_flags(const std::optional<std::string>& precision, const std::string& calibration,
                             pipeline::ModelConfig& model) {
  if (precision) {
    FOVEA_ASSIGN_OR_RETURN(model.precision, runtime::parse_precision(*precision));
  }
  if (!calibration.empty()) model.calibration = calibration;
  const bool int8 = model.precision == runtime::Precision::kInt8;
  if (int8 && !model.calibration) {
    return make_error(
        StatusCode::kInvalidArgument,
        "--precision int8 needs --calib FILE, the cache fovea model calibrate makes for the model");
  }
  if (!int8 && model.calibration) {
    return make_error(StatusCode::kInvalidArgument, "--calib is for --precision int8");
  }
  return Status::ok();
}

void add_flow_flags(CLI::App* command, FlowFlags* flags, const std::string& model_help) {
  const pipeline::PipelineConfig defaults;
  const pipeline::ModelConfig model_defaults;
  command->add_option("inputs", flags->inputs, "Video files or URLs")->required();
  command->add_option("--model", flags->model, model_help)->required()->check(CLI::ExistingFile);
  command->add_option("--batch", flags->batch,
                      fmt::format("Frames per batch, across sources (default {})", defaults.mux.batch_size));
  command->add_option("--size", flags->size,
                      "Network input WIDTHxHEIGHT, e.g. 960x544; default the model's own or the frame size");
  command->add_option("--frame-size", flags->frame_size,
                      "Frames are scaled to WIDTHxHEIGHT, e.g. 1920x1080; default the inputs' own size (the "
                      "first input's when they differ)");
  command
      ->add_option("--precision", flags->precision,
                   fmt::format("fp16, fp32 (GPU; the CPU runs fp32) or int8 (with --calib) (default {})",
                               runtime::precision_name(model_defaults.precision)))
      ->check(CLI::IsMember({"fp16", "fp32", "int8"}));
  add_calibration_flag(command, &flags->calibration);
  command
      ->add_option("--normalize", flags->normalize,
                   fmt::format("imagenet (torchvision models) or none (pixels / 255) (default {})",
                               model_defaults.mean == pipeline::kImagenetMean ? "imagenet" : "none"))
      ->check(CLI::IsMember({"imagenet", "none"}));
  command->add_option("--decoder", flags->decoder,
                      fmt::format("auto, nvdec or cpu (default {})",
                                  io::decoder_backend_name(pipeline::SourceConfig{}.decoder)));
  command->add_flag("--loop", flags->loop, "Loop the inputs until Ctrl-C");
  command->add_option("-o,--output", flags->output_dir,
                      "Folder for the output videos; none: a null sink (benchmark)");
  command
      ->add_option("--preset", flags->preset,
                   fmt::format("Encoder preset, x264's names or NVENC's p1..p7 (default {})",
                               pipeline::VideoSinkConfig{}.preset))
      ->check(encoder_preset());
  command->add_option("--metadata", flags->metadata, "Per-frame JSON Lines file (docs/metadata.md)");
  command->add_option("--engine-cache", flags->engine_cache,
                      "GPU: keep the planned model in this folder, so later runs skip the algorithm search");
  add_common_options(command, &flags->common);
}

Status apply_flow_flags(const FlowFlags& flags, pipeline::ModelConfig model,
                        pipeline::PipelineConfig& config) {
  io::DecoderBackend backend = pipeline::SourceConfig{}.decoder;
  if (flags.decoder && !io::parse_decoder_backend(*flags.decoder, &backend)) {
    return make_error(StatusCode::kInvalidArgument, "--decoder ", *flags.decoder, ": use auto, nvdec or cpu");
  }
  for (const std::string& input : flags.inputs) {
    config.sources.push_back({.uri = input, .decoder = backend, .loop = flags.loop});
  }
  if (!flags.frame_size.empty()) {
    FOVEA_ASSIGN_OR_RETURN(std::tie(config.mux.width, config.mux.height),
                           parse_size(flags.frame_size, "--frame-size"));
  }
  if (flags.batch) config.mux.batch_size = *flags.batch;
  model.path = flags.model;
  if (!flags.size.empty()) {
    FOVEA_ASSIGN_OR_RETURN(std::tie(model.input_width, model.input_height), parse_size(flags.size, "--size"));
  }
  FOVEA_TRY(apply_precision_flags(flags.precision, flags.calibration, model));
  if (flags.normalize) {
    const bool imagenet = *flags.normalize == "imagenet";
    model.mean = imagenet ? pipeline::kImagenetMean : std::array<float, 3>{0.0f, 0.0f, 0.0f};
    model.std = imagenet ? pipeline::kImagenetStd : std::array<float, 3>{1.0f, 1.0f, 1.0f};
  }
  if (!flags.engine_cache.empty()) model.engine_cache = flags.engine_cache;
  config.models = {std::move(model)};
  if (!flags.output_dir.empty()) {
    config.sinks.video = pipeline::VideoSinkConfig{.output_dir = flags.output_dir};
    if (flags.preset) config.sinks.video->preset = *flags.preset;
  } else {
    config.sinks.null = true;
  }
  if (!flags.metadata.empty()) config.sinks.metadata = pipeline::MetadataSinkConfig{.path = flags.metadata};
  apply_common(flags.common, config);
  return Status::ok();
}

std::optional<std::string> shared_flag_of_key(const FlowFlags& flags, const pipeline::PipelineConfig& config,
                                              std::string_view key) {
  if (key.starts_with("sources.")) {
    const std::optional<std::size_t> index = key_index(key, "sources.");
    if (index && *index < config.sources.size()) return "input '" + config.sources[*index].uri + "'";
    return "an input";
  }
  if (key == "mux.batch_size") return fmt::format("--batch {}", config.mux.batch_size);
  if (key == "mux.width" || key == "mux.height") return "--frame-size " + flags.frame_size;
  if (key == "models.0.input_width" || key == "models.0.input_height") return "--size " + flags.size;
  if (key == "models.0.path") return "--model '" + flags.model + "'";
  if (key == "sinks.video.output_dir") return "-o '" + flags.output_dir + "'";
  if (key == "sinks.metadata.path") return "--metadata '" + flags.metadata + "'";
  if (key == "stats.report") return "--report '" + flags.common.report + "'";
  return std::nullopt;
}

std::optional<std::size_t> key_index(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = key.substr(prefix.size());
  std::size_t index = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
  if (error != std::errc() || end != rest.data() + rest.size()) return std::nullopt;
  return index;
}

Status flow_error_naming_flags(const Status& status,
                               std::span<const std::pair<std::string_view, std::string_view>> extra) {
  static constexpr std::pair<std::string_view, std::string_view> kShared[] = {
      {"sinks.video.output_dir", "-o"}, {"sinks.metadata.path", "--metadata"}, {"stats.report", "--report"}};
  const std::string& message = status.message();
  for (const auto& list : {std::span<const std::pair<std::string_view, std::string_view>>(kShared), extra}) {
    for (const auto& [key, flag] : list) {
      if (message.starts_with(key) && message.size() > key.size() &&
          (message[key.size()] == ':' || message[key.size()] == ' ')) {
        return Status(status.code(), std::string(flag) + message.substr(key.size()));
      }
    }
  }
  return status;
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
  const auto in_range = [](int side) { return side >= 1 && side <= pipeline::kMaxFrameSide; };
  if (!in_range(width) || !in_range(height)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("{} {}: each side must be 1..{}", flag, text, pipeline::kMaxFrameSide));
  }
  return std::pair{width, height};
}

}  // namespace fovea::app
