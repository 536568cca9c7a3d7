// The pipeline commands:
//
//   fovea run CONFIG.yaml [--set key=value ...]     the flow a configuration file describes
//   fovea segment INPUT... --model M.onnx -o DIR     the segmentation flow from the command line
//   fovea demo [-o DIR]                              a generated clip and model through that flow
//
// All three print the stats table at the end and exit 0 when every source went through, 3 when
// some sources (or their outputs) failed and the others completed, 1 when the flow itself failed,
// 2 when the command line or the configuration asked for something wrong (a flag's value, a
// missing model, a class the model does not have: nothing ran), 130 on Ctrl-C (outputs finalized).
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "core/gpu.h"
#include "core/log.h"
#include "flow_command.h"
#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "pipeline/flow.h"
#include "runtime/demo_model.h"
#include "trace/report_io.h"

namespace fovea::app {
namespace {

// --- fovea run ---------------------------------------------------------------------------------

struct RunArgs {
  std::string config;
  std::vector<std::string> overrides;
  CommonArgs common;
};

int run_config(const RunArgs& args) {
  const std::optional<pipeline::PipelineConfig> config =
      load_config_file(args.config, args.overrides, args.common);
  return config ? run_flow_command(*config, args.common) : kExitUsage;
}

// --- fovea segment -----------------------------------------------------------------------------

// What the user typed beyond the shared flags (flow_command.h).
struct SegmentArgs {
  FlowFlags flow;
  std::vector<int> classes;
  bool no_refine = false;
  std::optional<int> blur;
};

// The flag and value a configuration key came from, for the configuration's errors ("--blur 33").
std::string flag_of_key(const SegmentArgs& args, const pipeline::PipelineConfig& config,
                        std::string_view key) {
  if (std::optional<std::string> flag = shared_flag_of_key(args.flow, config, key)) return *flag;
  if (const std::optional<std::size_t> index = key_index(key, "task.classes.");
      index && *index < config.task.classes.size()) {
    return fmt::format("--class {}", config.task.classes[*index]);
  }
  if (key == "task.blur_kernel") return fmt::format("--blur {}", config.task.blur_kernel);
  return key.empty() ? std::string("the command line") : std::string(key);
}

// The flow names the keys it refuses ("task.classes: class 5 is not among the model's 2 classes",
// "stats.report out.json: cannot create ..."); segment's user typed the flags that set them.
Status flow_error_with_flags(const Status& status) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {{"task.classes", "--class"}};
  return flow_error_naming_flags(status, kFlags);
}

Result<pipeline::PipelineConfig> segment_config(const SegmentArgs& args) {
  pipeline::PipelineConfig config;
  FOVEA_TRY(apply_flow_flags(args.flow, pipeline::ModelConfig{}, config));
  config.task.classes = args.classes;
  if (args.blur) config.task.blur_kernel = *args.blur;
  if (args.no_refine) config.task.refine_mask = false;
  // The file's checks, their errors naming the flags.
  return pipeline::check_config(config, [&](std::string_view key) { return flag_of_key(args, config, key); });
}

int run_segment(const SegmentArgs& args) {
  Result<pipeline::PipelineConfig> config = segment_config(args);
  if (!config.is_ok()) return refuse(config.status());
  if (args.flow.output_dir.empty()) {
    log_info("no -o: the blurred video is discarded (a null sink, for benchmarks); -o DIR keeps it");
  }
  return run_flow_command(*config, args.flow.common, flow_error_with_flags);
}

// --- fovea demo --------------------------------------------------------------------------------

struct DemoArgs {
  std::string dir = "fovea-demo";
  std::optional<int> frames;  // absent: 90 on the GPU, 24 on the CPU
  CommonArgs common;
};

int run_demo(const DemoArgs& args) {
  const std::filesystem::path dir(args.dir);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    log_error("-o {}: {}", args.dir, error.message());
    return kExitFailure;
  }
  // The CPU path runs the reference kernels, about a second per 1080p frame on a few cores: it
  // gets a shorter clip and no mask refinement (the joint bilateral filter is the slowest op there).
  const pipeline::FlowOptions options = flow_options(args.common);
  const bool cpu = options.device == pipeline::DeviceChoice::kCpu ||
                   (options.device == pipeline::DeviceChoice::kAuto && !gpu_available());
  const std::string clip = (dir / "demo_clip.mp4").string();
  const std::string model = (dir / "demo_model.onnx").string();
  const int frames = args.frames.value_or(cpu ? 24 : 90);
  std::printf("fovea demo: %s\n  1. a synthetic 1080p clip, %d frames: %s\n",
              cpu ? "on the CPU (no GPU found)" : "on the GPU", frames, clip.c_str());
  std::fflush(stdout);
  if (Status status = io::write_synthetic_clip(clip, {.frames = frames}); !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  std::printf("  2. a segmentation model written by fovea (colored subjects vs. background): %s\n",
              model.c_str());
  if (Status status = runtime::write_demo_segmentation_model(model); !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  pipeline::PipelineConfig config;
  config.sources.push_back({.uri = clip});
  pipeline::ModelConfig& segmenter = config.models.emplace_back(pipeline::ModelConfig{.path = model});
  segmenter.mean = runtime::kDemoModelMean;
  segmenter.std = runtime::kDemoModelStd;
  segmenter.input_width = 960;  // half size each way: the subjects stay tens of pixels wide
  segmenter.input_height = 540;
  config.task.classes = {runtime::kDemoSubjectClass};
  config.task.refine_mask = !cpu;
  config.sinks.video =
      pipeline::VideoSinkConfig{.output_dir = (dir / "output").string(), .preset = "veryfast"};
  // The demo traces itself into its folder (tracing costs the flow nothing measurable), so that
  // `fovea report DIR` works on it; the statistics take their own name beside the trace's files.
  config.stats.report = (dir / trace::kStatsFile).string();
  apply_common(args.common, config);
  CommonArgs common = args.common;
  if (common.trace.empty()) common.trace = dir.string();
  std::printf("  3. background blur: decode -> segment -> blur 31x31 -> encode\n");
  std::fflush(stdout);
  const int code = run_flow_command(config, common);
  if (code == kExitOk) {
    std::printf("\nOpen %s: the colored shapes stay sharp, the textured background is blurred.\n",
                (dir / "output" / "demo_clip.mp4").string().c_str());
    std::printf("Where the time went: fovea report %s\n", common.trace.c_str());
  }
  return code;
}

}  // namespace

CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](const std::string& text) {
        long long value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size())
          return "expected a whole number, got " + text;
        return value < min ? fmt::format("must be at least {}, got {}", min, text) : std::string();
      },
      fmt::format("INT>={}", min));
}

CLI::Validator whole_number_in(long long min, long long max) {
  return CLI::Validator(
      [min, max](const std::string& text) {
        long long value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size())
          return "expected a whole number, got " + text;
        return value < min || value > max ? fmt::format("must be between {} and {}, got {}", min, max, text)
                                          : std::string();
      },
      fmt::format("INT in [{} - {}]", min, max));
}

CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](const std::string& text) {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
            value < min || value > max)
          return fmt::format("must be a finite number between {} and {}, got {}", min, max, text);
        return std::string();
      },
      fmt::format("NUMBER in [{} - {}]", min, max));
}

CLI::Validator encoder_preset() {
  return CLI::IsMember(
      std::vector<std::string>(pipeline::encoder_presets().begin(), pipeline::encoder_presets().end()));
}

void add_pipeline_commands(CLI::App& app, Action* action) {
  auto run_args = std::make_shared<RunArgs>();
  CLI::App* run =
      app.add_subcommand("run", "Run the pipeline a YAML configuration describes (docs/config.md)");
  run->add_option("config", run_args->config, "Configuration file")->required()->check(CLI::ExistingFile);
  // One value per --set, so that `--set k=v CONFIG.yaml` does not take the file for an override.
  run->add_option("--set", run_args->overrides, "Override a key: --set mux.batch_size=8 (repeatable)")
      ->allow_extra_args(false);
  add_common_options(run, &run_args->common);
  run->callback([action, run_args] { *action = [run_args] { return run_config(*run_args); }; });

  // segment's defaults are the configuration's (config.h), shown from there.
  const pipeline::PipelineConfig defaults;
  auto seg = std::make_shared<SegmentArgs>();
  CLI::App* segment = app.add_subcommand(
      "segment", "Segmentation with background blur: decode -> infer -> blur the background -> encode");
  add_flow_flags(segment, &seg->flow, "ONNX segmentation model: [N,3,H,W] in, class scores [N,C,H,W] out");
  segment->add_option("--class", seg->classes,
                      "Class kept sharp (repeatable), one of the model's classes; default every class but 0");
  segment->add_option("--blur", seg->blur,
                      fmt::format("Blur kernel size, odd, up to 31 (default {})", defaults.task.blur_kernel));
  segment->add_flag("--no-refine", seg->no_refine, "Skip the mask's edge refinement (joint bilateral)");
  segment->callback([action, seg] { *action = [seg] { return run_segment(*seg); }; });

  auto demo_args = std::make_shared<DemoArgs>();
  CLI::App* demo = app.add_subcommand(
      "demo",
      "Generate a 1080p clip and a small segmentation model, blur the clip's background, print the stats");
  demo->add_option("-o,--output", demo_args->dir, "Folder for the clip, the model and the output")
      ->capture_default_str();
  demo->add_option("--frames", demo_args->frames, "Frames in the clip (default 90 on the GPU, 24 on the CPU)")
      ->check(at_least(1));
  add_common_options(demo, &demo_args->common);
  add_detect_demo(demo, action);
  // CLI11 runs the parent's callback after a subcommand's: `demo detect` keeps its own action.
  demo->callback([action, demo_args, demo] {
    if (demo->got_subcommand("detect")) return;
    *action = [demo_args] { return run_demo(*demo_args); };
  });
}

}  // namespace fovea::app
