// The pipeline commands:
//
//   fovea run CONFIG.yaml [--set key=value ...]     the flow a configuration file describes
//   fovea segment INPUT... --model M.onnx -o DIR     the segmentation flow from the command line
//   fovea demo [-o DIR]                              a generated clip and model through that flow
//
// All three print the stats table at the end and exit 0 when every source went through, 3 when
// some sources (or their outputs) failed and the others completed, 1 when the flow itself failed,
// 130 on Ctrl-C (outputs finalized).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "core/log.h"
#include "io/demuxer.h"
#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "pipeline/segmentation_flow.h"
#include "runtime/demo_model.h"

namespace fovea::app {
namespace {

struct CommonArgs {
  std::string device = "auto";
  bool no_progress = false;
  std::string report;
  std::string trace;
};

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

int run_flow(const pipeline::PipelineConfig& config, const CommonArgs& args) {
  Result<pipeline::FlowResult> result = pipeline::run_segmentation_flow(config, flow_options(args));
  if (!result.is_ok()) {
    log_error("{}", result.status().to_string());
    return result.status().code() == StatusCode::kCancelled ? kExitInterrupted : kExitFailure;
  }
  std::printf("\nsegmentation on %s\n\n%s\n", result->device.c_str(),
              pipeline::format_table(result->stats).c_str());
  print_outputs(*result);
  if (config.stats.report) std::printf("  report: %s\n", config.stats.report->c_str());
  if (result->interrupted) return kExitInterrupted;
  if (result->stats.total_frames() == 0 && result->partial()) return kExitFailure;
  return result->partial() ? kExitPartial : kExitOk;
}

// The configuration's own checks, for a configuration built from command-line options: written out
// and read back, so that `segment` refuses exactly what a file would.
Result<pipeline::PipelineConfig> checked(const pipeline::PipelineConfig& config) {
  return pipeline::parse_config(pipeline::dump_config(config), "<command line>");
}

// --- fovea run ---------------------------------------------------------------------------------

struct RunArgs {
  std::string config;
  std::vector<std::string> overrides;
  CommonArgs common;
};

int run_config(const RunArgs& args) {
  Result<pipeline::PipelineConfig> config = pipeline::load_config(args.config);
  if (!config.is_ok()) {
    log_error("{}", config.status().to_string());
    return kExitUsage;
  }
  for (const std::string& assignment : args.overrides) {
    if (Status status = pipeline::apply_override(*config, assignment); !status.is_ok()) {
      log_error("{}", status.to_string());
      return kExitUsage;
    }
  }
  apply_common(args.common, *config);
  return run_flow(*config, args.common);
}

// --- fovea segment -----------------------------------------------------------------------------

struct SegmentArgs {
  std::vector<std::string> inputs;
  std::string model;
  std::vector<int> classes;
  int batch = 4;
  std::string size;        // HEIGHTxWIDTH of the network input
  std::string frame_size;  // HEIGHTxWIDTH of the frames
  std::string precision = "fp16";
  std::string normalize = "imagenet";
  std::string decoder = "auto";
  std::string output_dir;
  std::string metadata;
  bool loop = false;
  bool no_refine = false;
  int blur = 31;
  std::string preset = "medium";
  CommonArgs common;
};

// "544x960" -> {height, width}.
Result<std::pair<int, int>> parse_size(const std::string& text, const char* option) {
  int first = 0, second = 0;
  char x = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &first, &x, &second, &rest) != 3 || x != 'x' || first < 2 ||
      second < 2 || first > io::kMaxVideoSide || second > io::kMaxVideoSide) {
    return make_error(StatusCode::kInvalidArgument, option, " ", text, ": expected two sizes like 544x960");
  }
  return std::pair<int, int>{first, second};
}

Result<pipeline::PipelineConfig> segment_config(const SegmentArgs& args) {
  pipeline::PipelineConfig config;
  io::DecoderBackend backend = io::DecoderBackend::kAuto;
  if (!io::parse_decoder_backend(args.decoder, &backend)) {
    return make_error(StatusCode::kInvalidArgument, "--decoder ", args.decoder, ": use auto, nvdec or cpu");
  }
  for (const std::string& input : args.inputs) {
    config.sources.push_back({.uri = input, .decoder = backend, .loop = args.loop});
  }
  // Frames keep the first input's size unless told otherwise; other inputs are scaled to it.
  if (!args.frame_size.empty()) {
    FOVEA_ASSIGN_OR_RETURN(auto size, parse_size(args.frame_size, "--frame-size"));
    config.mux.height = size.first;
    config.mux.width = size.second;
  } else {
    FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Demuxer> demuxer,
                           io::Demuxer::open(args.inputs.front(), {.cancel = &interrupt_flag()}));
    config.mux.width = demuxer->info().width;
    config.mux.height = demuxer->info().height;
  }
  config.mux.batch_size = args.batch;
  config.model.path = args.model;
  if (!args.size.empty()) {
    FOVEA_ASSIGN_OR_RETURN(auto size, parse_size(args.size, "--size"));
    config.model.input_height = size.first;
    config.model.input_width = size.second;
  }
  if (args.precision != "fp16" && args.precision != "fp32") {
    return make_error(StatusCode::kInvalidArgument, "--precision ", args.precision, ": use fp16 or fp32");
  }
  config.model.precision =
      args.precision == "fp16" ? runtime::Precision::kFloat16 : runtime::Precision::kFloat32;
  if (args.normalize == "imagenet") {
    // torchvision's models are trained on images normalized with ImageNet's statistics.
    config.model.mean = {0.485f, 0.456f, 0.406f};
    config.model.std = {0.229f, 0.224f, 0.225f};
  }
  config.task.classes = args.classes;
  config.task.blur_kernel = args.blur;
  config.task.refine_mask = !args.no_refine;
  if (!args.output_dir.empty()) {
    config.sinks.video = pipeline::VideoSinkConfig{.output_dir = args.output_dir, .preset = args.preset};
  } else {
    config.sinks.null = true;
  }
  if (!args.metadata.empty()) config.sinks.metadata = pipeline::MetadataSinkConfig{.path = args.metadata};
  apply_common(args.common, config);
  return checked(config);
}

int run_segment(const SegmentArgs& args) {
  Result<pipeline::PipelineConfig> config = segment_config(args);
  if (!config.is_ok()) {
    log_error("{}", config.status().to_string());
    return config.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  return run_flow(*config, args.common);
}

// --- fovea demo --------------------------------------------------------------------------------

struct DemoArgs {
  std::string dir = "fovea-demo";
  int frames = 0;  // 0: 90 on the GPU, 24 on the CPU
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
                   (options.device == pipeline::DeviceChoice::kAuto && !pipeline::gpu_available());
  const std::string clip = (dir / "demo_clip.mp4").string();
  const std::string model = (dir / "demo_model.onnx").string();
  const int frames = args.frames > 0 ? args.frames : (cpu ? 24 : 90);
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
  config.mux.batch_size = cpu ? 1 : 4;
  config.model.path = model;
  config.model.mean = runtime::kDemoModelMean;
  config.model.std = runtime::kDemoModelStd;
  config.model.input_width = 960;  // half size each way: the subjects stay tens of pixels wide
  config.model.input_height = 540;
  config.model.precision = runtime::Precision::kFloat16;
  config.task.classes = {runtime::kDemoSubjectClass};
  config.task.refine_mask = !cpu;
  config.sinks.video =
      pipeline::VideoSinkConfig{.output_dir = (dir / "output").string(), .preset = "veryfast"};
  config.stats.report = (dir / "report.json").string();
  apply_common(args.common, config);
  std::printf("  3. background blur: decode -> segment -> blur 31x31 -> encode\n");
  std::fflush(stdout);
  const int code = run_flow(config, args.common);
  if (code == kExitOk) {
    std::printf("\nOpen %s: the colored shapes stay sharp, the textured background is blurred.\n",
                (dir / "output" / "demo_clip.mp4").string().c_str());
  }
  return code;
}

}  // namespace

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

  auto seg = std::make_shared<SegmentArgs>();
  CLI::App* segment = app.add_subcommand(
      "segment", "Segmentation with background blur: decode -> infer -> blur the background -> encode");
  segment->add_option("inputs", seg->inputs, "Video files or URLs")->required();
  segment
      ->add_option("--model", seg->model, "ONNX segmentation model: [N,3,H,W] in, class scores [N,C,H,W] out")
      ->required();
  segment->add_option("--class", seg->classes, "Class kept sharp (repeatable); default every class but 0");
  segment->add_option("--batch", seg->batch, "Frames per batch, across sources")->capture_default_str();
  segment->add_option("--size", seg->size,
                      "Network input HEIGHTxWIDTH, e.g. 544x960; default the model's own or the frame size");
  segment->add_option("--frame-size", seg->frame_size,
                      "Frames are scaled to HEIGHTxWIDTH, e.g. 1080x1920; default the first input's size");
  segment->add_option("--precision", seg->precision, "fp16 or fp32 (GPU)")->capture_default_str();
  segment->add_option("--normalize", seg->normalize, "imagenet (torchvision models) or none (pixels / 255)")
      ->check(CLI::IsMember({"imagenet", "none"}))
      ->capture_default_str();
  segment->add_option("--decoder", seg->decoder, "auto, nvdec or cpu")->capture_default_str();
  segment->add_option("--blur", seg->blur, "Blur kernel size, odd, up to 31")->capture_default_str();
  segment->add_flag("--no-refine", seg->no_refine, "Skip the mask's edge refinement (joint bilateral)");
  segment->add_flag("--loop", seg->loop, "Loop the inputs until Ctrl-C");
  segment->add_option("-o,--output", seg->output_dir,
                      "Folder for the output videos; none: a null sink (benchmark)");
  segment->add_option("--preset", seg->preset, "Encoder preset (x264 names)")->capture_default_str();
  segment->add_option("--metadata", seg->metadata, "Per-frame JSON Lines file");
  add_common_options(segment, &seg->common);
  segment->callback([action, seg] { *action = [seg] { return run_segment(*seg); }; });

  auto demo_args = std::make_shared<DemoArgs>();
  CLI::App* demo = app.add_subcommand(
      "demo",
      "Generate a 1080p clip and a small segmentation model, blur the clip's background, print the stats");
  demo->add_option("-o,--output", demo_args->dir, "Folder for the clip, the model and the output")
      ->capture_default_str();
  demo->add_option("--frames", demo_args->frames,
                   "Frames in the clip (default 90 on the GPU, 24 on the CPU)");
  add_common_options(demo, &demo_args->common);
  demo->callback([action, demo_args] { *action = [demo_args] { return run_demo(*demo_args); }; });
}

}  // namespace fovea::app
