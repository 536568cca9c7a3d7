// fovea images IN... -o OUT --model M.onnx: an image collection through a model, the same job as
// `fovea run` with an `images:` section: files decoded on CPU threads, batched, preprocessed and
// inferred on the GPU, and written back while the next batch loads (pipeline/image_source.h,
// image_sink.h). --task image2image writes a picture per image (pix2pix), --task segmentation a
// label image per image (PNG, a class index per pixel, at the image's size) and the target classes'
// share as metadata, --task detection the boxes and --task classification the top classes as
// metadata. Exit codes as every flow command (flow_command.h): 3 when some files were skipped or
// not written and the others went through.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "core/log.h"
#include "flow_command.h"
#include "pipeline/config.h"
#include "post/detect_post.h"

namespace fovea::app {
namespace {

struct ImagesArgs {
  std::vector<std::string> inputs;
  std::string output_dir;
  std::string model;
  std::string task = "image2image";
  std::optional<int> batch;
  std::string size;
  std::optional<std::string> precision;
  std::string calibration;
  std::optional<std::string> normalize;
  std::string format = "png";
  std::optional<int> quality;
  bool recursive = false;
  std::string shard;
  std::string split;
  std::optional<int> threads;
  std::string decoder;
  std::optional<int> jpeg_threads;
  std::optional<int> jpeg_batch;
  std::string encoder;
  std::string metadata;
  std::string engine_cache;
  std::string parser;
  std::string labels;
  std::optional<float> confidence;
  std::optional<float> iou;
  std::optional<int> top_k;
  std::optional<float> min_score;
  std::vector<int> classes;
  CommonArgs common;
};

// --decoder and --encoder (CLI11 has checked the value; "" when the flag is left out: auto).
pipeline::JpegCodec jpeg_codec(std::string_view flag) {
  if (flag == "cpu") return pipeline::JpegCodec::kCpu;
  if (flag == "nvjpeg") return pipeline::JpegCodec::kNvjpeg;
  return pipeline::JpegCodec::kAuto;
}

// The flag each configuration key came from, for the configuration's errors.
std::string flag_of_key(std::string_view key) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"images.inputs", "the inputs"},
      {"images.shard", "--shard"},
      {"images.threads", "--threads"},
      {"images.jpeg_threads", "--jpeg-threads"},
      {"images.jpeg_batch", "--jpeg-batch"},
      {"images.split", "--split-ab"},
      {"sinks.images.output_dir", "-o"},
      {"sinks.images.quality", "--quality"},
      {"sinks.images.format", "--format"},
      {"sinks.images.encoder", "--encoder"},
      {"task.classes", "--class"},
      {"classify_frames.top_k", "--top-k"},
      {"classify_frames.min_score", "--min-score"},
      {"sinks.metadata", "--metadata"},
      {"mux.batch_size", "--batch"},
      {"models.0.input_width", "--size"},
      {"models.0.input_height", "--size"},
      {"models.0.parser", "--parser"},
      {"models.0.labels", "--labels"},
      {"detect.confidence", "--conf"},
      {"detect.iou", "--iou"},
      {"detect.top_k", "--top-k"},
      {"stats.report", "--report"}};
  for (const auto& [prefix, flag] : kFlags) {
    if (key.starts_with(prefix)) return std::string(flag);
  }
  return key.empty() ? std::string("the command line") : std::string(key);
}

Status apply_model_flags(const ImagesArgs& args, pipeline::ModelConfig& model) {
  model.path = args.model;
  FOVEA_TRY(apply_precision_flags(args.precision, args.calibration, model));
  // pix2pix and most image generators are trained on [-1, 1] pictures; torchvision's detectors,
  // segmenters and classifiers on ImageNet's.
  const std::string normalize =
      args.normalize.value_or(args.task == "image2image" ? "symmetric" : "imagenet");
  if (normalize == "symmetric") {
    model.mean = {0.5f, 0.5f, 0.5f};
    model.std = {0.5f, 0.5f, 0.5f};
  } else if (normalize == "none") {
    model.mean = {0.0f, 0.0f, 0.0f};
    model.std = {1.0f, 1.0f, 1.0f};
  }
  if (!args.size.empty()) {
    FOVEA_ASSIGN_OR_RETURN(const auto size, parse_size(args.size, "--size"));
    model.input_width = size.first;
    model.input_height = size.second;
  }
  if (!args.engine_cache.empty()) model.engine_cache = args.engine_cache;
  if (!args.labels.empty()) model.labels = args.labels;
  if (args.task == "detection") {
    if (args.parser.empty())
      return make_error(StatusCode::kInvalidArgument, "--task detection needs --parser");
    FOVEA_ASSIGN_OR_RETURN(model.parser, post::parse_parser_name(args.parser));
  }
  return Status::ok();
}

// The flow --task picks, with the flags of that task.
Status apply_task_flags(const ImagesArgs& args, pipeline::PipelineConfig& config) {
  if (args.task == "detection") {
    config.flow = pipeline::FlowKind::kDetection;
    config.stages = {pipeline::StageKind::kDetect};
    if (args.confidence) config.detect.confidence = *args.confidence;
    if (args.iou) config.detect.iou = *args.iou;
    if (args.top_k) config.detect.top_k = *args.top_k;
    return Status::ok();
  }
  if (args.task == "classification") {
    config.flow = pipeline::FlowKind::kClassification;
    if (args.top_k) config.classify_frames.top_k = *args.top_k;
    if (args.min_score) config.classify_frames.min_score = *args.min_score;
    return Status::ok();
  }
  config.flow =
      args.task == "segmentation" ? pipeline::FlowKind::kSegmentation : pipeline::FlowKind::kImage2Image;
  config.task.classes = args.classes;
  if (!args.output_dir.empty()) {
    config.sinks.images =
        pipeline::ImageSinkConfig{.output_dir = args.output_dir,
                                  .format = args.format == "jpeg" ? pipeline::ImageOutputFormat::kJpeg
                                                                  : pipeline::ImageOutputFormat::kPng,
                                  .quality = args.quality.value_or(pipeline::ImageSinkConfig{}.quality)};
    config.sinks.images->encoder = jpeg_codec(args.encoder);
  }
  return Status::ok();
}

Result<pipeline::PipelineConfig> images_config(const ImagesArgs& args) {
  pipeline::PipelineConfig config;
  pipeline::ImagesConfig images{.inputs = args.inputs, .recursive = args.recursive};
  if (!args.shard.empty()) images.shard = args.shard;
  if (args.threads) images.threads = *args.threads;
  if (args.split == "a") images.split = pipeline::AbSplit::kA;
  if (args.split == "b") images.split = pipeline::AbSplit::kB;
  images.decoder = jpeg_codec(args.decoder);
  if (args.jpeg_threads) images.jpeg_threads = *args.jpeg_threads;
  if (args.jpeg_batch) images.jpeg_batch = *args.jpeg_batch;
  config.images = std::move(images);
  pipeline::ModelConfig model;
  FOVEA_TRY(apply_model_flags(args, model));
  config.models = {std::move(model)};
  if (args.batch) config.mux.batch_size = *args.batch;
  FOVEA_TRY(apply_task_flags(args, config));
  if (!args.metadata.empty()) config.sinks.metadata = pipeline::MetadataSinkConfig{.path = args.metadata};
  config.sinks.null = !config.sinks.images && !config.sinks.metadata;
  apply_common(args.common, config);
  return pipeline::check_config(config, [](std::string_view key) { return flag_of_key(key); });
}

Status flow_error_with_flags(const Status& status) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"sinks.images.output_dir", "-o"}, {"images.shard", "--shard"}, {"task.classes", "--class"}};
  return flow_error_naming_flags(status, kFlags);
}

int run_images(const ImagesArgs& args) {
  if ((args.task == "detection" || args.task == "classification") && !args.output_dir.empty()) {
    log_error(
        "-o: --task {} writes its results with --metadata FILE; pictures come from --task image2image and "
        "label images from --task segmentation",
        args.task);
    return kExitUsage;
  }
  Result<pipeline::PipelineConfig> config = images_config(args);
  if (!config.is_ok()) return refuse(config.status());
  if (config->sinks.null)
    log_info("no -o and no --metadata: the results are discarded (a null sink, for benchmarks)");
  return run_flow_command(*config, args.common, flow_error_with_flags);
}

}  // namespace

void add_images_command(CLI::App& app, Action* action) {
  const pipeline::PipelineConfig defaults;
  auto args = std::make_shared<ImagesArgs>();
  CLI::App* images = app.add_subcommand(
      "images", "An image collection through a model: decode -> batch -> infer -> pictures or metadata");
  images->add_option("inputs", args->inputs, "Image folders, globs ('photos/*.jpg'), list files or images")
      ->required();
  images->add_option("-o,--output", args->output_dir,
                     "Folder for the output pictures (image2image) or label images (segmentation): the "
                     "inputs' tree, mirrored");
  images
      ->add_option("--model", args->model,
                   "ONNX model: [N,3,H,W] in; out [N,3,H,W] (image2image), class scores [N,C,h,w] "
                   "(segmentation), logits [N,C] (classification) or a detector's outputs (--parser)")
      ->required()
      ->check(CLI::ExistingFile);
  images
      ->add_option("--task", args->task,
                   "image2image (a picture out per image), segmentation (a PNG of class indices per image, "
                   "at its size), detection (boxes) or classification (the top classes per image)")
      ->check(CLI::IsMember({"image2image", "segmentation", "detection", "classification"}))
      ->capture_default_str();
  images->add_option("--batch", args->batch,
                     fmt::format("Images per batch (default {})", defaults.mux.batch_size));
  images->add_option("--size", args->size,
                     "Network input WIDTHxHEIGHT, e.g. 256x256; default the model's own (required when the "
                     "model's input size is not fixed)");
  images
      ->add_option("--precision", args->precision,
                   "fp16, fp32 (GPU; the CPU runs fp32) or int8 (with --calib) (default fp16)")
      ->check(CLI::IsMember({"fp16", "fp32", "int8"}));
  add_calibration_flag(images, &args->calibration);
  images
      ->add_option(
          "--normalize", args->normalize,
          "symmetric ((pixel / 255 - 0.5) / 0.5: pix2pix and most image generators; the image2image "
          "default), imagenet (torchvision models; the default of the other tasks) or none (pixels / "
          "255); image2image outputs are mapped back the same way")
      ->check(CLI::IsMember({"symmetric", "imagenet", "none"}));
  images
      ->add_option("--format", args->format,
                   "Output picture format: png or jpeg (image2image; label images are PNG only)")
      ->check(CLI::IsMember({"png", "jpeg"}))
      ->capture_default_str();
  images->add_option("--quality", args->quality, "JPEG quality, 1..100 (default 90)");
  images->add_flag("--recursive", args->recursive, "Folders' subfolders too");
  images->add_option("--shard", args->shard, "i/N: this process takes every N-th image from the i-th");
  images
      ->add_option("--split-ab", args->split,
                   "pix2pix AB pairs: a (left half) or b (right half) of each image")
      ->check(CLI::IsMember({"a", "b"}));
  images->add_option("--threads", args->threads, "Decode threads (default one per core)");
  images
      ->add_option(
          "--decoder", args->decoder,
          "JPEG: nvjpeg (the GPU's JPEG decoder), cpu (libjpeg-turbo), or auto: nvJPEG where it loads "
          "(default auto)")
      ->check(CLI::IsMember({"auto", "cpu", "nvjpeg"}));
  images->add_option("--jpeg-threads", args->jpeg_threads, "Threads that call nvJPEG (default 2)");
  images->add_option("--jpeg-batch", args->jpeg_batch, "JPEGs per nvJPEG call (default 32)");
  images
      ->add_option("--encoder", args->encoder,
                   "--format jpeg: cpu or auto (libjpeg-turbo on the writer threads, the faster on the GPU "
                   "machine; default auto), or nvjpeg (encoded on the GPU, which frees the CPU cores)")
      ->check(CLI::IsMember({"auto", "cpu", "nvjpeg"}));
  images->add_option("--metadata", args->metadata, "Per-image JSON Lines file (docs/metadata.md)");
  images->add_option("--engine-cache", args->engine_cache,
                     "GPU: keep the planned model in this folder, so later runs skip the algorithm search");
  images->add_option("--parser", args->parser, "--task detection: ssd, yolo, detectnet or boxes");
  images
      ->add_option("--labels", args->labels,
                   "Label file: one class name per line, line 1 naming class 0 (detection, classification)")
      ->check(CLI::ExistingFile);
  images->add_option("--conf", args->confidence, "--task detection: score a box must exceed, 0..1");
  images->add_option("--iou", args->iou, "--task detection: NMS overlap threshold");
  images->add_option("--top-k", args->top_k,
                     fmt::format("--task detection: boxes per image, at most (default {}); --task "
                                 "classification: classes per image, the most likely (default {})",
                                 defaults.detect.top_k, defaults.classify_frames.top_k));
  images->add_option("--min-score", args->min_score,
                     "--task classification: leave out classes less likely than this, 0..1 (default 0)");
  images->add_option("--class", args->classes,
                     "--task segmentation: a target class for the metadata's target_fraction (repeatable); "
                     "default every class but 0");
  add_common_options(images, &args->common);
  images->callback([action, args] { *action = [args] { return run_images(*args); }; });
}

}  // namespace fovea::app
