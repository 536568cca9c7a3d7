#include "pipeline/flow.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/log.h"
#include "core/output_file.h"
#include "pipeline/classify_ops.h"
#include "pipeline/detect_ops.h"
#include "pipeline/display_ops.h"
#include "pipeline/frame_classify_ops.h"
#include "pipeline/image_ops.h"
#include "pipeline/image_sink.h"
#include "pipeline/image_source.h"
#include "pipeline/model_ops.h"
#include "pipeline/segment_ops.h"
#include "pipeline/track_ops.h"
#include "trace/report_io.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {

namespace {

// Encoders share the machine's cores: each gets its share, at least one.
int encoder_threads(std::size_t streams) {
  if (streams <= 1) return 0;  // the encoder's own default: every core
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores / streams));
}

bool has_stage(const std::vector<StageKind>& stages, StageKind kind) {
  return std::find(stages.begin(), stages.end(), kind) != stages.end();
}

// What the flow does, by its primary stage, for the run's log.
std::string flow_name(const PipelineConfig& config) {
  const std::vector<StageKind> stages = stages_of(config);
  if (has_stage(stages, StageKind::kImage2Image)) return "image2image";
  if (has_stage(stages, StageKind::kClassifyFrames)) return "classification";
  if (has_stage(stages, StageKind::kSegment)) return "segmentation";
  return "detection";
}

// Everything the run will write, named by its configuration key, for the checks before the run.
std::vector<PlannedOutput> planned_outputs(const PipelineConfig& config,
                                           const std::vector<std::string>& names,
                                           const FlowOptions& options) {
  std::vector<PlannedOutput> outputs;
  if (const auto& video = config.sinks.video) {
    outputs.push_back({.what = "sinks.video.output_dir", .path = video->output_dir, .is_folder = true});
    if (video->mosaic) {
      outputs.push_back({.what = "the mosaic video", .path = video_output_path(*video, kMosaicStreamName)});
    } else {
      for (const std::string& name : names) {
        outputs.push_back({.what = "the video output", .path = video_output_path(*video, name)});
      }
    }
  }
  if (config.sinks.metadata)
    outputs.push_back({.what = "sinks.metadata.path", .path = config.sinks.metadata->path});
  if (config.sinks.images) {
    outputs.push_back(
        {.what = "sinks.images.output_dir", .path = config.sinks.images->output_dir, .is_folder = true});
  }
  if (config.sinks.stream && config.sinks.stream->hls)
    outputs.push_back({.what = "sinks.stream.hls", .path = *config.sinks.stream->hls, .is_folder = true});
  if (config.stats.report) outputs.push_back({.what = "stats.report", .path = *config.stats.report});
  if (!options.trace_dir.empty()) {
    outputs.push_back({.what = "the trace folder", .path = options.trace_dir, .is_folder = true});
    for (const char* file : {trace::kTraceFile, trace::kReportFile}) {
      outputs.push_back({.what = "the trace", .path = std::filesystem::path(options.trace_dir) / file});
    }
  }
  return outputs;
}

// No output may be an input (the configuration file, a source, a model, its labels or
// calibration) or another output, and each must be creatable. All are mistakes in what the user
// asked for: kInvalidArgument.
Status check_flow_outputs(const PipelineConfig& config, const std::vector<std::string>& names,
                          const FlowOptions& options) {
  std::vector<std::string> inputs;
  if (config.file) inputs.push_back(*config.file);
  for (const ModelConfig& model : config.models) {
    inputs.push_back(model.path);
    if (model.labels) inputs.push_back(*model.labels);
    if (model.calibration) inputs.push_back(*model.calibration);
  }
  for (const SourceConfig& source : config.sources) inputs.push_back(source.uri);
  if (config.images) inputs.insert(inputs.end(), config.images->inputs.begin(), config.images->inputs.end());
  const Status status = check_outputs(planned_outputs(config, names, options), inputs);
  if (!status.is_ok()) return Status(StatusCode::kInvalidArgument, status.message());
  if (config.sinks.stream && config.sinks.stream->hls)
    return check_hls_folder(*config.sinks.stream->hls, inputs);
  return Status::ok();
}

template <typename T>
T* add_op(FlowPlan& plan, std::unique_ptr<T> op) {
  T* raw = op.get();
  plan.ops.push_back(std::move(op));
  return raw;
}

Result<FlowModel*> open_primary(FlowPlan& plan, const PipelineConfig& config, std::string_view name) {
  const ModelConfig* model = find_model(config, name);
  if (model == nullptr)
    return make_error(StatusCode::kInvalidArgument, "detect.model '", name, "': no such model");
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<FlowModel> opened,
                         open_flow_model(*model, config.mux.batch_size, plan.shape));
  std::shared_ptr<FlowModel> shared = std::move(opened);
  plan.keep_alive.push_back(shared);
  plan.description = shared->session->device_description() + ", " + shared->description();
  return shared.get();
}

// An encoding sink (video file or live stream) with one stream per source.
template <typename EncodingSinkType, typename SinkConfig>
void add_per_source_sink(FlowPlan& plan, const SinkConfig& sink, PicturePicker pick) {
  plan.sinks.push_back(std::make_unique<EncodingSinkType>(
      sink, plan.shape.source_names, EncodingSink::Streams::kPerSource, plan.shape.frame_width,
      plan.shape.frame_height, encoder_threads(plan.shape.source_names.size()), std::move(pick)));
}

// An encoding sink with the mosaic as its one stream.
template <typename EncodingSinkType, typename SinkConfig>
void add_mosaic_sink(FlowPlan& plan, const SinkConfig& sink) {
  plan.sinks.push_back(std::make_unique<EncodingSinkType>(
      sink, std::vector<std::string>{kMosaicStreamName}, EncodingSink::Streams::kMosaic, sink.mosaic->width,
      sink.mosaic->height, encoder_threads(1), [](const FrameBatch& batch, std::vector<Picture>& pictures) {
        const std::vector<std::size_t> rounds = mosaic_rounds(batch);
        for (std::size_t round = 0; round < mosaic_round_count(rounds); ++round) {
          // Timed by the round's first frame.
          const auto first =
              static_cast<std::size_t>(std::find(rounds.begin(), rounds.end(), round) - rounds.begin());
          pictures.push_back({.stream = 0,
                              .frame = first,
                              .image = batch.slot->images(kMosaicHost)[round],
                              .since_start = true});
        }
      }));
}

// Adds a video or stream sink, per source or as the mosaic.
template <typename EncodingSinkType, typename SinkConfig>
void add_encoding_sink(FlowPlan& plan, const SinkConfig& sink, const PicturePicker& frames) {
  if (sink.mosaic) {
    add_mosaic_sink<EncodingSinkType>(plan, sink);
  } else {
    add_per_source_sink<EncodingSinkType>(plan, sink, frames);
  }
}

Status add_segment(FlowPlan& plan, const PipelineConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(FlowModel * model, open_primary(plan, config, ""));
  FOVEA_ASSIGN_OR_RETURN(const SegmentSetup setup,
                         plan_segment(*model, config.task, config.sinks.video || config.sinks.stream,
                                      config.sinks.metadata.has_value() || config.sinks.mqtt.has_value()));
  auto* rgb = add_op(plan, std::make_unique<FrameRgbOp>(plan.shape));
  auto* preprocess = add_op(plan, std::make_unique<PreprocessOp>(*model));
  auto* inference = add_op(plan, std::make_unique<InferenceOp>(*model));
  auto* class_map = add_op(plan, std::make_unique<ClassMapOp>(*inference, setup));
  auto* mask = add_op(plan, std::make_unique<SegmentMaskOp>(*model, setup, plan.shape));
  auto* composite = add_op(plan, std::make_unique<CompositeOp>(setup, plan.shape));
  plan.stages.push_back({.name = "preprocess", .ops = {preprocess, rgb}});
  plan.stages.push_back({.name = "inference", .ops = {inference, class_map}, .high_priority = false});
  plan.stages.push_back({.name = "postprocess", .ops = {mask}});
  plan.stages.push_back({.name = "composite", .ops = {composite}});
  const PicturePicker composited = [](const FrameBatch& batch, std::vector<Picture>& pictures) {
    const std::vector<ImageView>& yuv = batch.slot->images(kYuvHost);
    for (std::size_t i = 0; i < batch.size(); ++i) pictures.push_back({batch.frames[i].source, i, yuv[i]});
  };
  if (config.sinks.video) add_per_source_sink<VideoSink>(plan, *config.sinks.video, composited);
  if (config.sinks.stream) add_per_source_sink<StreamSink>(plan, *config.sinks.stream, composited);
  return Status::ok();
}

// Returns the detector's class names, for the display and the metadata.
Result<std::vector<std::string>> add_detect(FlowPlan& plan, const PipelineConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(FlowModel * model, open_primary(plan, config, config.detect.model));
  FOVEA_ASSIGN_OR_RETURN(DetectSetup setup, plan_detect(*model, config.detect, plan.shape.gpu));
  std::vector<std::string> labels = setup.labels;
  StageSpec preprocess_stage{.name = "preprocess"};
  if (config.detect.interval > 0) {
    preprocess_stage.ops.push_back(add_op(plan, std::make_unique<GateOp>(config.detect.interval)));
  }
  preprocess_stage.ops.push_back(add_op(plan, std::make_unique<PreprocessOp>(*model)));
  auto* inference = add_op(plan, std::make_unique<InferenceOp>(*model));
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<DetectOp> detect,
                         DetectOp::create(*inference, std::move(setup), plan.shape));
  auto* detect_op = add_op(plan, std::move(detect));
  plan.stages.push_back(std::move(preprocess_stage));
  plan.stages.push_back({.name = "inference", .ops = {inference, detect_op}, .high_priority = false});
  return labels;
}

// track: one host stage after the inference stage, every source's tracks (track_ops.h).
Status add_track(FlowPlan& plan, const PipelineConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<TrackOp> track,
                         TrackOp::create(tracker_params(config.track), plan.shape.source_names.size()));
  plan.stages.push_back({.name = "track", .ops = {add_op(plan, std::move(track))}});
  return Status::ok();
}

// A class the detector cannot give would make a secondary model silently idle: refused.
Status check_object_classes(const SecondaryConfig& entry, std::size_t index,
                            const std::vector<std::string>& detector_labels) {
  if (detector_labels.empty()) return Status::ok();  // the class count is the label file's
  for (const int class_id : entry.operate_on_classes) {
    if (static_cast<std::size_t>(class_id) >= detector_labels.size()) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("secondary.{}.operate_on_classes: class {}: the detector has {} classes "
                                    "(0..{})",
                                    index, class_id, detector_labels.size(), detector_labels.size() - 1));
    }
  }
  return Status::ok();
}

// classify: a stage per secondary model, in the order `secondary:` lists them (classify_ops.h),
// each at the model's own batch size.
Status add_classify(FlowPlan& plan, const PipelineConfig& config, const std::vector<std::string>& labels) {
  constexpr int kDefaultSecondaryBatch = 16;
  const int max_objects = config.mux.batch_size * config.detect.top_k;
  for (std::size_t i = 0; i < config.secondary.size(); ++i) {
    const SecondaryConfig& entry = config.secondary[i];
    FOVEA_TRY(check_object_classes(entry, i, labels));
    const ModelConfig* model_config = find_model(config, entry.model);
    if (model_config == nullptr) {
      return make_error(StatusCode::kInvalidArgument, "secondary.", std::to_string(i), ".model '",
                        entry.model, "': no such model");
    }
    // A secondary model sees object crops: the frame size, which a primary model without a fixed
    // input size runs at, is no size for a crop (a 1080p input per object). Such a model needs
    // input_width and input_height.
    FlowShape crops = plan.shape;
    crops.frame_width = crops.frame_height = 0;
    auto opened =
        open_flow_model(*model_config, model_config->batch_size.value_or(kDefaultSecondaryBatch), crops);
    if (!opened.is_ok()) {
      return opened.status().with_context(
          fmt::format("secondary.{} (model '{}', run on object crops)", i, entry.model));
    }
    std::shared_ptr<FlowModel> model = std::move(*opened);
    plan.keep_alive.push_back(model);
    FOVEA_ASSIGN_OR_RETURN(ClassifySetup setup, plan_classify(*model, entry, max_objects));
    auto* classify = add_op(plan, std::make_unique<ClassifyOp>(*model, std::move(setup), plan.shape));
    plan.stages.push_back({.name = classify->name(), .ops = {classify}, .high_priority = false});
  }
  return Status::ok();
}

// The display stage and the video sink of a detection flow: the frames as they are, or with the
// OSD when the osd stage runs and osd.enabled; per source or as one mosaic.
Status add_display(FlowPlan& plan, const PipelineConfig& config, const std::vector<std::string>& labels,
                   bool osd) {
  StageSpec display{.name = "display"};
  if (osd && config.osd.enabled) {
    display.ops.push_back(
        add_op(plan, std::make_unique<OsdOp>(config.osd, labels, config.detect.top_k, plan.shape)));
  }
  // The video and stream sinks share one mosaic (the configuration holds them equal) and one
  // download of the frames.
  const auto& video = config.sinks.video;
  const auto& stream = config.sinks.stream;
  const MosaicConfig* mosaic = video && video->mosaic     ? &*video->mosaic
                               : stream && stream->mosaic ? &*stream->mosaic
                                                          : nullptr;
  if (mosaic != nullptr) {
    FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<MosaicOp> tiler, MosaicOp::create(*mosaic, plan.shape));
    display.ops.push_back(add_op(plan, std::move(tiler)));
  }
  if ((video && !video->mosaic) || (stream && !stream->mosaic)) {
    display.ops.push_back(add_op(plan, std::make_unique<FrameDownloadOp>(plan.shape)));
  }
  const bool gpu = plan.shape.gpu;
  const PicturePicker frames = [gpu](const FrameBatch& batch, std::vector<Picture>& pictures) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      pictures.push_back(
          {batch.frames[i].source, i, gpu ? batch.slot->images(kFramesHost)[i] : batch.image(i)});
    }
  };
  if (video) add_encoding_sink<VideoSink>(plan, *video, frames);
  if (stream) add_encoding_sink<StreamSink>(plan, *stream, frames);
  if (!display.ops.empty()) plan.stages.push_back(std::move(display));
  return Status::ok();
}

// segment on images: a label image per frame (the class map at the image's own size), written by
// sinks.images, and the target fraction for the metadata.
Status add_segment_images(FlowPlan& plan, const PipelineConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(FlowModel * model, open_primary(plan, config, ""));
  FOVEA_ASSIGN_OR_RETURN(const SegmentSetup setup, plan_segment(*model, config.task, false, true));
  auto* preprocess = add_op(plan, std::make_unique<PreprocessOp>(*model));
  auto* inference = add_op(plan, std::make_unique<InferenceOp>(*model));
  auto* class_map = add_op(plan, std::make_unique<ClassMapOp>(*inference, setup));
  auto* label_map = add_op(plan, std::make_unique<LabelMapOp>(*model, setup, plan.shape));
  plan.stages.push_back({.name = "preprocess", .ops = {preprocess}});
  plan.stages.push_back(
      {.name = "inference", .ops = {inference, class_map, label_map}, .high_priority = false});
  if (config.sinks.images) {
    plan.sinks.push_back(
        std::make_unique<ImageSink>(*config.sinks.images, plan.images.images, plan.shape.gpu));
  }
  return Status::ok();
}

// classify_frames: the primary model's classes per frame, for the metadata; a video flow's frames
// go to its video and stream sinks as they are.
Status add_classify_frames(FlowPlan& plan, const PipelineConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(FlowModel * model, open_primary(plan, config, config.classify_frames.model));
  FOVEA_ASSIGN_OR_RETURN(ClassifyFramesSetup setup, plan_classify_frames(*model, config.classify_frames));
  auto* preprocess = add_op(plan, std::make_unique<PreprocessOp>(*model));
  auto* inference = add_op(plan, std::make_unique<InferenceOp>(*model));
  auto* classify = add_op(plan, std::make_unique<ClassifyFramesOp>(*inference, std::move(setup), plan.shape));
  plan.stages.push_back({.name = "preprocess", .ops = {preprocess}});
  // The logits are read from the session's outputs, which the next run overwrites: same stage.
  plan.stages.push_back({.name = "inference", .ops = {inference, classify}, .high_priority = false});
  if (config.images) return Status::ok();
  return add_display(plan, config, {}, false);
}

// image2image: the model's output back to a picture per frame, written by sinks.images.
Status add_image2image(FlowPlan& plan, const PipelineConfig& config) {
  FOVEA_ASSIGN_OR_RETURN(FlowModel * model, open_primary(plan, config, ""));
  auto* preprocess = add_op(plan, std::make_unique<PreprocessOp>(*model));
  auto* inference = add_op(plan, std::make_unique<InferenceOp>(*model));
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<PictureOp> picture, PictureOp::create(*inference, plan.shape));
  auto* picture_op = add_op(plan, std::move(picture));
  plan.stages.push_back({.name = "preprocess", .ops = {preprocess}});
  // The pictures are read from the session's outputs, which the next run overwrites: same stage.
  plan.stages.push_back({.name = "inference", .ops = {inference, picture_op}, .high_priority = false});
  if (config.sinks.images) {
    plan.sinks.push_back(
        std::make_unique<ImageSink>(*config.sinks.images, plan.images.images, plan.shape.gpu));
  }
  return Status::ok();
}

Result<FlowPlan> build_plan(const PipelineConfig& config, const FlowShape& shape, io::ImageList images) {
  FlowPlan plan;
  plan.shape = shape;
  plan.images = std::move(images);
  const std::vector<StageKind> stages = stages_of(config);
  std::vector<std::string> labels;
  if (has_stage(stages, StageKind::kImage2Image)) {
    FOVEA_TRY(add_image2image(plan, config));
  } else if (has_stage(stages, StageKind::kClassifyFrames)) {
    FOVEA_TRY(add_classify_frames(plan, config));
  } else if (has_stage(stages, StageKind::kSegment) && config.images) {
    FOVEA_TRY(add_segment_images(plan, config));
  } else if (has_stage(stages, StageKind::kSegment)) {
    FOVEA_TRY(add_segment(plan, config));
  } else {
    FOVEA_ASSIGN_OR_RETURN(labels, add_detect(plan, config));
    if (has_stage(stages, StageKind::kTrack)) FOVEA_TRY(add_track(plan, config));
    if (has_stage(stages, StageKind::kClassify)) FOVEA_TRY(add_classify(plan, config, labels));
    FOVEA_TRY(add_display(plan, config, labels, has_stage(stages, StageKind::kOsd)));
  }
  if (config.sinks.metadata) {
    plan.sinks.push_back(std::make_unique<MetadataSink>(*config.sinks.metadata, shape.source_names, labels));
  }
  if (config.sinks.mqtt) {
    plan.sinks.push_back(std::make_unique<MqttSink>(*config.sinks.mqtt, shape.source_names, labels));
  }
  return plan;
}

// A file's device and inode, or nullopt where stat fails.
std::optional<std::pair<dev_t, ino_t>> file_identity(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return std::pair{info.st_dev, info.st_ino};
}

// The image flow's files: listed, sharded, and their pictures' paths checked before anything runs
// (two inputs onto one output, an output that is an input).
Result<io::ImageList> list_flow_images(const PipelineConfig& config) {
  const ImagesConfig& images = *config.images;
  // The output folder is not listed: a second run into a folder inside the inputs does not take the
  // first run's pictures for inputs.
  const std::filesystem::path output_folder =
      config.sinks.images ? std::filesystem::path(config.sinks.images->output_dir) : std::filesystem::path();
  Result<io::ImageList> listed =
      io::list_images(images.inputs, {.recursive = images.recursive, .exclude = output_folder});
  // An input that is not there, or a folder without images, is a mistake in what was asked: nothing ran.
  if (!listed.is_ok() && listed.status().code() == StatusCode::kNotFound)
    return Status(StatusCode::kInvalidArgument, listed.status().message());
  FOVEA_ASSIGN_OR_RETURN(io::ImageList list, std::move(listed));
  FOVEA_ASSIGN_OR_RETURN(const io::Shard shard, io::parse_shard(images.shard));
  list.images = io::shard(list.images, shard);
  if (list.images.empty()) {
    return make_error(StatusCode::kInvalidArgument, "images.shard ", images.shard, ": this shard of the ",
                      "listed images is empty");
  }
  if (list.ignored > 0) {
    log_info("images: {} files that are not images by name were left out ({}{})", list.ignored,
             fmt::join(list.ignored_names, ", "), list.ignored > list.ignored_names.size() ? ", ..." : "");
  }
  if (!config.sinks.images) return list;
  const std::string extension = config.sinks.images->format == ImageOutputFormat::kPng ? ".png" : ".jpg";
  Result<std::vector<std::filesystem::path>> outputs =
      io::mirrored_output_paths(list.images, config.sinks.images->output_dir, extension);
  if (!outputs.is_ok()) return Status(StatusCode::kInvalidArgument, outputs.status().message());
  // By file identity: a symbolic or hard link to an input, or another spelling of its path, is it.
  // An output that cannot be looked up (not there yet, or a path too long) is no input.
  std::set<std::pair<dev_t, ino_t>> inputs;
  for (const io::ListedImage& image : list.images) {
    if (const auto id = file_identity(image.path)) inputs.insert(*id);
  }
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const auto id = file_identity((*outputs)[i]);
    if (id && inputs.count(*id) > 0) {
      return make_error(StatusCode::kInvalidArgument, "sinks.images.output_dir ",
                        config.sinks.images->output_dir, ": the picture of ", list.images[i].path.string(),
                        " would be written over the input ", (*outputs)[i].string(),
                        "; choose another folder or format");
    }
  }
  return list;
}

// An image flow: its frames are the files, each at its own size.
Result<FlowResult> run_image_flow(const PipelineConfig& config, const FlowOptions& options, bool gpu) {
  if (options.control != nullptr) {
    return make_error(StatusCode::kInvalidArgument,
                      "images: fovea serve runs video sources, not image files");
  }
  FOVEA_ASSIGN_OR_RETURN(io::ImageList images, list_flow_images(config));
  const ModelConfig* model = find_model(config, "");
  const FlowShape shape{.gpu = gpu,
                        .batch_size = config.mux.batch_size,
                        .frame_width = model != nullptr ? model->input_width.value_or(0) : 0,
                        .frame_height = model != nullptr ? model->input_height.value_or(0) : 0,
                        .source_names = {kImagesSourceName}};
  FOVEA_TRY(check_flow_outputs(config, shape.source_names, options));
#if defined(FOVEA_HAVE_CUDA)
  if (gpu) FOVEA_CUDA_TRY(cudaSetDevice(shape.device));
#endif
  const std::size_t count = images.images.size();
  FOVEA_ASSIGN_OR_RETURN(FlowPlan plan, build_plan(config, shape, std::move(images)));
  plan.description = fmt::format("{} on {} images, {}", flow_name(config), count, plan.description);
  log_info("{}", plan.description);
  if (!gpu) log_info("no GPU in use: the flow runs on the CPU (the reference kernels), which is slow");
  return run_flow_plan(plan, config, options);
}

}  // namespace

Result<FlowResult> run_flow(const PipelineConfig& requested, const FlowOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(const bool gpu, choose_gpu(options.device));
  if (requested.images) return run_image_flow(requested, options, gpu);
  const bool service = options.control != nullptr;
  if (requested.sources.empty() && !service) {
    return make_error(StatusCode::kInvalidArgument, "sources: the flow needs at least one source");
  }
  FOVEA_ASSIGN_OR_RETURN(const PipelineConfig config, with_frame_size(requested, options.interrupt));
  // A service's per-source state (trackers) is sized by its slots; sources name themselves.
  std::vector<std::string> names = source_names(config.sources);
  names.resize(std::max(names.size(), options.source_slots));
  const FlowShape shape{.gpu = gpu,
                        .batch_size = config.mux.batch_size,
                        .frame_width = *config.mux.width,
                        .frame_height = *config.mux.height,
                        .source_names = std::move(names)};
  if (service && config.sinks.video) {
    return make_error(StatusCode::kInvalidArgument,
                      "sinks.video: fovea serve takes its sources at run time, and a video sink opens its "
                      "outputs per source when the flow starts; use sinks.metadata, sinks.mqtt or "
                      "sinks.stream with a mosaic");
  }
  if (service && config.sinks.stream && !config.sinks.stream->mosaic) {
    return make_error(StatusCode::kInvalidArgument,
                      "sinks.stream: fovea serve takes its sources at run time, and per-source streams are "
                      "opened when the flow starts; set sinks.stream.mosaic to stream every source, "
                      "present and to come, as one mosaic");
  }
  FOVEA_TRY(check_flow_outputs(config, shape.source_names, options));
#if defined(FOVEA_HAVE_CUDA)
  if (gpu) FOVEA_CUDA_TRY(cudaSetDevice(shape.device));
#endif
  FOVEA_ASSIGN_OR_RETURN(FlowPlan plan, build_plan(config, shape, {}));
  // "segmentation on cuda (NVIDIA H200), model m.onnx at 960x544 batch 4 fp16"
  plan.description = flow_name(config) + " on " + plan.description;
  log_info("{}", plan.description);
  if (!gpu) log_info("no GPU in use: the flow runs on the CPU (the reference kernels), which is slow");
  return run_flow_plan(plan, config, options);
}

}  // namespace fovea::pipeline
