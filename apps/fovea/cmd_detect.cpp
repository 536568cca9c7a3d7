// fovea detect INPUT... --model M.onnx --parser ssd|yolo|detectnet|boxes: the detection flow from
// the command line (many sources -> batched detector -> box decode + NMS on the GPU -> OSD -> video
// and metadata), the same job as `fovea run` with `flow: detection` and the same defaults
// (pipeline/config.h). Exit codes as every flow command (flow_command.h).
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "core/log.h"
#include "core/output_file.h"
#include "flow_command.h"
#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "pipeline/frame_record.h"
#include "runtime/demo_detector.h"
#include "trace/report_io.h"

namespace fovea::app {
namespace {

// What the user typed beyond the shared flags (flow_command.h).
struct DetectArgs {
  FlowFlags flow;
  std::string parser;
  std::string labels;
  std::optional<float> confidence;
  std::optional<float> iou;
  std::vector<int> classes;
  std::optional<int> top_k;
  std::optional<int> candidates;
  std::optional<int> interval;
  std::vector<float> mean;  // 3 values, or none
  std::vector<float> std;
  bool letterbox = false;
  bool osd = false;
  std::vector<int> blur_classes;
  bool mosaic = false;
  std::string mosaic_size;
};

// The flag a configuration key came from, for the configuration's errors ("--conf: ...").
std::string flag_of_key(const DetectArgs& args, const pipeline::PipelineConfig& config,
                        std::string_view key) {
  if (std::optional<std::string> flag = shared_flag_of_key(args.flow, config, key)) return *flag;
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"models.0.parser", "--parser"},
      {"models.0.labels", "--labels"},
      {"models.0.mean", "--mean"},
      {"models.0.std", "--std"},
      {"detect.confidence", "--conf"},
      {"detect.iou", "--iou"},
      {"detect.classes", "--class"},
      {"detect.top_k", "--top-k"},
      {"detect.candidates_per_class", "--candidates"},
      {"detect.interval", "--interval"},
      {"osd.blur_classes", "--blur-class"},
      {"sinks.video.mosaic", "--mosaic-size"}};
  for (const auto& [prefix, flag] : kFlags) {
    if (key.starts_with(prefix)) return std::string(flag);
  }
  return key.empty() ? std::string("the command line") : std::string(key);
}

Status flow_error_with_flags(const Status& status) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {{"detect.model", "--model"}};
  return flow_error_naming_flags(status, kFlags);
}

Result<pipeline::PipelineConfig> detect_config(const DetectArgs& args) {
  pipeline::PipelineConfig config;
  config.flow = pipeline::FlowKind::kDetection;
  pipeline::ModelConfig model{.name = "detector"};
  FOVEA_ASSIGN_OR_RETURN(model.parser, post::parse_parser_name(args.parser));
  if (!args.labels.empty()) model.labels = args.labels;
  model.keep_aspect = args.letterbox;
  FOVEA_TRY(apply_flow_flags(args.flow, std::move(model), config));
  pipeline::ModelConfig& detector = config.models[0];
  if (!args.mean.empty()) std::copy(args.mean.begin(), args.mean.end(), detector.mean.begin());
  if (!args.std.empty()) std::copy(args.std.begin(), args.std.end(), detector.std.begin());
  if (args.confidence) config.detect.confidence = *args.confidence;
  if (args.iou) config.detect.iou = *args.iou;
  config.detect.classes = args.classes;
  if (args.top_k) config.detect.top_k = *args.top_k;
  config.detect.candidates_per_class = args.candidates;
  if (args.interval) config.detect.interval = *args.interval;
  config.osd.enabled = args.osd;
  config.osd.blur_classes = args.blur_classes;
  if (args.mosaic && config.sinks.video) {
    config.sinks.video->mosaic = pipeline::MosaicConfig{};
    if (!args.mosaic_size.empty()) {
      FOVEA_ASSIGN_OR_RETURN(std::tie(config.sinks.video->mosaic->width, config.sinks.video->mosaic->height),
                             parse_size(args.mosaic_size, "--mosaic-size"));
    }
  }
  return pipeline::check_config(config, [&](std::string_view key) { return flag_of_key(args, config, key); });
}

int run_detect(const DetectArgs& args) {
  if (args.mosaic && args.flow.output_dir.empty()) {
    log_error("--mosaic: the mosaic is a video output; give -o DIR");
    return kExitUsage;
  }
  Result<pipeline::PipelineConfig> config = detect_config(args);
  if (!config.is_ok()) return refuse(config.status());
  if (args.flow.output_dir.empty() && args.flow.metadata.empty()) {
    log_info("no -o and no --metadata: the detections are discarded (a null sink, for benchmarks)");
  }
  return run_flow_command(*config, args.flow.common, flow_error_with_flags);
}

// --- fovea demo detect -----------------------------------------------------------------------

struct DetectDemoArgs {
  std::string dir = "fovea-demo";
  std::optional<int> frames;  // absent: 90 on the GPU, 24 on the CPU
  CommonArgs common;
};

// The demo's detections, read back from its metadata, scored against the clip's known objects.
Status check_demo_detections(const std::string& metadata, int width, int height) {
  std::ifstream file(metadata);
  if (!file) return make_error(StatusCode::kIoError, metadata, ": cannot read the detections back");
  io::SyntheticMatch total;
  std::string line;
  while (std::getline(file, line)) {
    FOVEA_ASSIGN_OR_RETURN(const pipeline::ParsedFrameRecord record, pipeline::parse_frame_record(line));
    std::vector<io::SyntheticObject> found;
    for (const pipeline::ParsedObject& object :
         record.objects.value_or(std::vector<pipeline::ParsedObject>{})) {
      found.push_back({object.class_id, Box{object.box[0], object.box[1], object.box[2], object.box[3]}});
    }
    total += io::match_ground_truth(static_cast<int>(record.frame), width, height, found);
  }
  std::printf(
      "\n%lld of %lld objects found (class and box), %lld false detections, corners within %.1f pixels\n",
      static_cast<long long>(total.matched), static_cast<long long>(total.objects),
      static_cast<long long>(total.false_positives), total.worst_corner_error);
  return Status::ok();
}

int run_detect_demo(const DetectDemoArgs& args) {
  const std::filesystem::path dir(args.dir);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    log_error("-o {}: {}", args.dir, error.message());
    return kExitFailure;
  }
  const bool cpu = runs_on_cpu(args.common);
  const std::string clip = (dir / "demo_clip.mp4").string();
  const std::string model = (dir / "demo_detector.onnx").string();
  const std::string labels = (dir / "demo_detector.labels").string();
  const std::string metadata = (dir / "detect_output" / "detections.jsonl").string();
  const int frames = args.frames.value_or(cpu ? 24 : 90);
  const io::SyntheticClipOptions clip_options{.frames = frames};
  std::printf("fovea demo detect: %s\n  1. a synthetic 1080p clip, %d frames: %s\n",
              cpu ? "on the CPU (no GPU found)" : "on the GPU", frames, clip.c_str());
  std::fflush(stdout);
  if (Status status = io::write_synthetic_clip(clip, clip_options); !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  std::printf("  2. a detector written by fovea (boxes each colored shape by its color): %s\n",
              model.c_str());
  if (Status status = runtime::write_demo_detection_model(model); !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  if (Status status = write_file_atomically(labels, "background\nred\ngreen\nblue\n", "the label file");
      !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  pipeline::PipelineConfig config;
  config.flow = pipeline::FlowKind::kDetection;
  config.sources.push_back({.uri = clip});
  pipeline::ModelConfig detector{.name = "demo_detector", .path = model};
  detector.mean = runtime::kDemoDetectorMean;
  detector.std = runtime::kDemoDetectorStd;
  detector.input_width = runtime::kDemoDetectorInputWidth;
  detector.input_height = runtime::kDemoDetectorInputHeight;
  detector.parser = post::DetectParser::kBoxes;
  detector.labels = labels;
  config.models = {detector};
  // A detection's score is the share of its cell showing the color: above one half is inside.
  config.detect.confidence = 0.5f;
  config.osd.enabled = true;
  config.sinks.video =
      pipeline::VideoSinkConfig{.output_dir = (dir / "detect_output").string(), .preset = "veryfast"};
  config.sinks.metadata = pipeline::MetadataSinkConfig{.path = metadata};
  config.stats.report = (dir / "detect_output" / trace::kStatsFile).string();
  apply_common(args.common, config);
  std::printf(
      "  3. detection: decode -> detect -> NMS -> draw boxes -> encode, and the detections as JSON Lines\n");
  std::fflush(stdout);
  const int code = run_flow_command(config, args.common);
  if (code != kExitOk) return code;
  if (Status status = check_demo_detections(metadata, clip_options.width, clip_options.height);
      !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  std::printf("Open %s: every shape boxed and labeled with its color. The detections: %s\n",
              (dir / "detect_output" / "demo_clip.mp4").string().c_str(), metadata.c_str());
  return code;
}

}  // namespace

void add_detect_demo(CLI::App* demo, Action* action) {
  auto args = std::make_shared<DetectDemoArgs>();
  CLI::App* detect = demo->add_subcommand(
      "detect",
      "Generate a 1080p clip and a small detector, box the clip's shapes, check them against the truth");
  detect->add_option("-o,--output", args->dir, "Folder for the clip, the model and the output")
      ->capture_default_str();
  detect->add_option("--frames", args->frames, "Frames in the clip (default 90 on the GPU, 24 on the CPU)")
      ->check(at_least(1));
  add_common_options(detect, &args->common);
  detect->callback([action, args] { *action = [args] { return run_detect_demo(*args); }; });
}

void add_detect_command(CLI::App& app, Action* action) {
  const pipeline::PipelineConfig defaults;
  auto args = std::make_shared<DetectArgs>();
  CLI::App* detect = app.add_subcommand(
      "detect",
      "Object detection on many sources: decode -> batch -> detect -> NMS -> OSD -> video and metadata");
  add_flow_flags(detect, &args->flow, "ONNX detector: [N,3,H,W] in, its outputs read by --parser");
  detect
      ->add_option("--parser", args->parser,
                   "How the model's outputs read: ssd (torchvision SSD/SSDLite), yolo (v5..v11 exports), "
                   "detectnet (PeopleNet-style grids), boxes (decoded boxes or a graph ending in NMS)")
      ->required();
  detect->add_option("--labels", args->labels, "Label file: one class name per line, line i = class i")
      ->check(CLI::ExistingFile);
  detect->add_option(
      "--conf", args->confidence,
      fmt::format("Score a detection must exceed, 0..1 (default {})", defaults.detect.confidence));
  detect->add_option("--iou", args->iou,
                     fmt::format("NMS: overlap above which the weaker box of a class goes (default {})",
                                 defaults.detect.iou));
  detect->add_option("--class", args->classes, "Keep only this class (repeatable); default every class");
  detect->add_option("--top-k", args->top_k,
                     fmt::format("Detections per frame, at most (default {})", defaults.detect.top_k));
  detect->add_option("--candidates", args->candidates,
                     "Best boxes per class that go into NMS (default the parser's: ssd 400, others 1024)");
  detect->add_option("--interval", args->interval,
                     "Frames skipped between two detections per source (default 0: every frame)");
  detect
      ->add_option("--mean", args->mean,
                   "Per-channel mean on the 0..1 scale, 3 values (overrides --normalize): (pixel / 255 - "
                   "mean) / std")
      ->expected(3)
      ->excludes("--normalize");
  detect
      ->add_option("--std", args->std, "Per-channel std on the 0..1 scale, 3 values (overrides --normalize)")
      ->expected(3)
      ->excludes("--normalize");
  detect->add_flag("--letterbox", args->letterbox,
                   "Keep the frame's aspect in the network input (pad the rest)");
  detect->add_flag("--osd", args->osd, "Draw boxes, labels and scores on the output video");
  detect->add_option("--blur-class", args->blur_classes,
                     "With --osd: pixelate this class's boxes (repeatable)");
  detect->add_flag("--mosaic", args->mosaic,
                   "One tiled video of every source (mosaic.mp4) instead of one per source");
  detect->add_option("--mosaic-size", args->mosaic_size, "The mosaic's WIDTHxHEIGHT (default 1920x1080)");
  detect->callback([action, args] { *action = [args] { return run_detect(*args); }; });
}

}  // namespace fovea::app
