// fovea model calibrate MODEL.onnx (--images IN... | --video FILE...) -o MODEL.calib: runs the float
// model over sample pictures, prepared exactly as a flow prepares them for this model, and writes
// the calibration cache that `--precision int8 --calib` and `precision: int8` plan with
// (runtime/quant/calibrator.h, calibration_table.h; docs/int8.md).
//
// The preprocessing is the flows': the model's entry of a flow file (--config), or the defaults of
// a `models:` entry, with --size, --normalize/--mean/--std, --color and --letterbox on top; the
// flow's own model opening (pipeline::open_flow_model) settles the input size and the parameters,
// and the flow's CPU preprocess (image::run_preprocess_cpu) makes the tensors, from RGB pictures
// (io/image_codec.h) or NV12 video frames (the CPU decoder).
//
// Exit codes as the other commands (commands.h): 0 written; 3 written, but some inputs could not
// be read (named); 1 nothing written because the work failed (no readable sample, the model, the
// device); 2 the command line was wrong (nothing ran); 130 on Ctrl-C (nothing written).
#include "cmd_calibrate.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "core/frame.h"
#include "core/log.h"
#include "core/output_file.h"
#include "flow_command.h"
#include "image/preprocess.h"
#include "io/decoder.h"
#include "io/demuxer.h"
#include "io/image_codec.h"
#include "io/image_files.h"
#include "pipeline/config.h"
#include "pipeline/model_ops.h"
#include "runtime/engine.h"
#include "runtime/onnx_loader.h"
#include "runtime/quant/calibrator.h"

namespace fovea::app {
namespace {

namespace fs = std::filesystem;
using runtime::quant::Calibrator;
using Clock = std::chrono::steady_clock;

// Calibration holds every activation of a batch at once (each is an output of the model it runs),
// so its memory grows with the batch: one sample at a time unless asked.
constexpr int kDefaultBatch = 1;
constexpr int kDefaultSamples = 500;  // issue 23's figure; TensorRT's samples suggest 500 to 1000
constexpr int kSummaryTensors = 5;
// The progress line is redrawn at most this often (as transcode's).
constexpr auto kProgressInterval = std::chrono::seconds(1);

struct CalibrateArgs {
  std::string model;
  std::vector<std::string> images;
  std::vector<std::string> videos;
  bool recursive = false;
  std::string method = "entropy";
  double percentile = runtime::quant::kDefaultPercentile;
  double min_sqnr_db = runtime::quant::kDefaultMinSqnrDb;
  int samples = kDefaultSamples;
  std::optional<int> batch;
  std::string device = "cpu";
  std::string output;
  std::string config;
  std::string config_model;  // --model NAME: the entry of --config
  std::string size;
  std::optional<std::string> normalize;
  std::vector<float> mean;  // 3 values, or none
  std::vector<float> std;
  std::optional<std::string> color;
  bool letterbox = false;
};

// --config's entry (or a default `models:` entry) with MODEL and the preprocessing flags applied,
// run in float32 on the CPU: calibration observes the float model, and the entry's own precision
// and engine folder are what the int8 run uses later. Its `calibration:` is where the cache goes
// when -o is left out.
Result<pipeline::ModelConfig> model_config(const CalibrateArgs& args) {
  pipeline::ModelConfig model;
  if (!args.config.empty()) {
    FOVEA_ASSIGN_OR_RETURN(const pipeline::PipelineConfig flow, pipeline::load_config(args.config));
    const pipeline::ModelConfig* entry = pipeline::find_model(flow, args.config_model);
    if (entry == nullptr) {
      return make_error(StatusCode::kInvalidArgument, "--model ", args.config_model, ": ", args.config,
                        " has no model of that name");
    }
    model = *entry;
    std::error_code error;
    if (!args.model.empty() && !fs::equivalent(args.model, model.path, error)) {
      return make_error(StatusCode::kInvalidArgument, "MODEL ", args.model, " is not the model of ",
                        args.config, " (", model.path, "); leave MODEL out or pick the entry with --model");
    }
  } else if (args.model.empty()) {
    return make_error(StatusCode::kInvalidArgument, "give the MODEL to calibrate, or --config with its flow");
  }
  if (!args.model.empty()) model.path = args.model;
  if (!args.size.empty()) {
    FOVEA_ASSIGN_OR_RETURN(const auto size, parse_size(args.size, "--size"));
    model.input_width = size.first;
    model.input_height = size.second;
  }
  if (args.normalize) {
    const bool imagenet = *args.normalize == "imagenet";
    model.mean = imagenet ? pipeline::kImagenetMean : std::array<float, 3>{0.0f, 0.0f, 0.0f};
    model.std = imagenet ? pipeline::kImagenetStd : std::array<float, 3>{1.0f, 1.0f, 1.0f};
  }
  if (!args.mean.empty()) std::copy(args.mean.begin(), args.mean.end(), model.mean.begin());
  if (!args.std.empty()) std::copy(args.std.begin(), args.std.end(), model.std.begin());
  if (std::any_of(model.std.begin(), model.std.end(), [](float s) { return !(s > 0.0f); })) {
    return make_error(StatusCode::kInvalidArgument, "--std: every channel's std must be above 0");
  }
  if (args.color)
    model.color_order = *args.color == "bgr" ? pipeline::ColorOrder::kBgr : pipeline::ColorOrder::kRgb;
  if (args.letterbox) model.keep_aspect = true;
  model.precision = runtime::Precision::kFloat32;
  model.engine_cache.reset();
  return model;
}

// "224x224 imagenet rgb letterbox": how the samples were prepared, for people reading the cache.
std::string preprocess_text(const pipeline::ModelConfig& model, const image::PreprocessParams& params) {
  std::string normalization;
  if (model.mean == pipeline::kImagenetMean && model.std == pipeline::kImagenetStd) {
    normalization = "imagenet";
  } else if (model.mean == std::array<float, 3>{0, 0, 0} && model.std == std::array<float, 3>{1, 1, 1}) {
    normalization = "none";
  } else {
    normalization = fmt::format("mean {} std {}", fmt::join(model.mean, ","), fmt::join(model.std, ","));
  }
  return fmt::format("{}x{} {} {}{}", params.width, params.height, normalization,
                     model.color_order == pipeline::ColorOrder::kBgr ? "bgr" : "rgb",
                     model.keep_aspect ? " letterbox" : "");
}

// Refuses an -o that is one of the inputs, that cannot be written, or that exists and is not a
// calibration cache fovea reads (a cache of another model or version is replaced).
Status check_output(const CalibrateArgs& args, const std::string& model_path,
                    const std::vector<std::string>& inputs) {
  std::vector<std::string> all_inputs = inputs;
  all_inputs.push_back(model_path);
  if (!args.config.empty()) all_inputs.push_back(args.config);
  FOVEA_TRY(check_outputs({{.what = "-o", .path = args.output}}, all_inputs));
  std::error_code error;
  if (!fs::exists(args.output, error)) return Status::ok();
  const Result<runtime::quant::CalibrationTable> existing = runtime::quant::read_calibration(args.output);
  if (existing.is_ok() || existing.status().code() == StatusCode::kUnsupported) return Status::ok();
  return make_error(StatusCode::kInvalidArgument, "-o ", args.output,
                    " exists and is not a calibration cache; not replacing it (", existing.status().message(),
                    ")");
}

// Shows "calibrate: 120/500 samples  14.2 samples/s" on a terminal, redrawn at most once a second.
class Progress {
 public:
  explicit Progress(int wanted) : wanted_(wanted), enabled_(isatty(fileno(stderr)) != 0) {}
  ~Progress() { end(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(int samples) {
    const auto now = Clock::now();
    if (!enabled_ || now - last_ < kProgressInterval) return;
    last_ = now;
    shown_ = true;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\rcalibrate: %d/%d samples  %.1f samples/s   ", samples, wanted_,
                 static_cast<double>(samples) / elapsed);
    std::fflush(stderr);
  }
  // Ends the line, so that what is printed next starts on its own.
  void end() {
    if (shown_) std::fputc('\n', stderr);
    shown_ = false;
  }
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  int wanted_;
  bool enabled_;  // only on a terminal: a log file would fill with redrawn lines
  bool shown_ = false;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = start_;
};

// Pictures waiting for their batch, each with what keeps its pixels alive; a full batch is
// preprocessed as the flow does it and run through the calibrator.
class BatchFeeder {
 public:
  BatchFeeder(const pipeline::FlowModel& model, Calibrator& calibrator, int wanted, bool batch_fixed)
      : model_(model),
        calibrator_(calibrator),
        progress_(wanted),
        wanted_(wanted),
        batch_fixed_(batch_fixed) {}

  // Queues one host picture (RGB8 or NV12); runs the batch once it is full.
  Status add(const ImageView& picture, std::shared_ptr<const void> owner) {
    pending_.images.push_back(picture);
    owners_.push_back(std::move(owner));
    if (pending_.size() < model_.batch_size) return Status::ok();
    return run_pending();
  }
  // The last, partial batch: run at its own size, or left out when the model fixes its batch.
  Status flush() {
    FOVEA_TRY(run_partial());
    progress_.end();
    return Status::ok();
  }
  // Samples queued or run: the inputs still needed are wanted - taken().
  int taken() const { return calibrator_.samples() + pending_.size(); }
  int wanted() const { return wanted_; }
  double elapsed_s() const { return progress_.elapsed_s(); }

 private:
  Status run_partial() {
    if (pending_.size() == 0) return Status::ok();
    if (batch_fixed_) {
      log_warn("{}: the model's batch is fixed at {}; the last {} samples, too few for a batch, are left out",
               model_.config.path, model_.batch_size, pending_.size());
      pending_.images.clear();
      owners_.clear();
      return Status::ok();
    }
    return run_pending();
  }

  Status run_pending() {
    const image::PreprocessParams& params = model_.preprocess;
    const std::int64_t count = pending_.size();
    runtime::Tensor tensor =
        runtime::Tensor::allocate(DataType::kFloat32, {count, 3, params.height, params.width});
    FOVEA_TRY(image::run_preprocess_cpu(pending_, params,
                                        contiguous_tensor(tensor.raw(), DataType::kFloat32, MemoryKind::kHost,
                                                          {count, 3, params.height, params.width})));
    pending_.images.clear();
    owners_.clear();
    FOVEA_TRY(calibrator_.add_batch({std::move(tensor)}));
    progress_.update(calibrator_.samples());
    return Status::ok();
  }

  const pipeline::FlowModel& model_;
  Calibrator& calibrator_;
  Progress progress_;
  int wanted_;
  bool batch_fixed_;
  image::ImageBatch pending_;
  std::vector<std::shared_ptr<const void>> owners_;
};

// The inputs that could not be read, by name and reason, for the summary and the exit code.
using Unreadable = std::vector<std::string>;

// The listed images in the order they are tried: `wanted` spread evenly over the sorted list (a
// folder sorted by class gives every class its share), then the rest, in order, standing in for
// files that cannot be read.
std::vector<std::size_t> image_order(std::size_t count, std::size_t wanted) {
  std::vector<std::size_t> order;
  std::vector<bool> picked(count, false);
  const std::size_t spread = std::min(count, wanted);
  for (std::size_t k = 0; k < spread; ++k) {
    const std::size_t i = k * count / spread;
    order.push_back(i);
    picked[i] = true;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!picked[i]) order.push_back(i);
  }
  return order;
}

Status feed_images(const std::vector<io::ListedImage>& images, BatchFeeder& feeder, Unreadable& unreadable) {
  for (std::size_t i : image_order(images.size(), static_cast<std::size_t>(feeder.wanted()))) {
    if (feeder.taken() >= feeder.wanted() || interrupt_flag().load()) break;
    Result<io::DecodedImage> decoded = io::decode_image_file(images[i].path);
    if (!decoded.is_ok()) {
      log_warn("{}", decoded.status().to_string());
      unreadable.push_back(decoded.status().message());
      continue;
    }
    auto picture = std::make_shared<io::HostImage>(std::move(decoded->image));
    FOVEA_TRY(feeder.add(picture->view(), picture));
  }
  return feeder.flush();
}

// Up to `quota` frames of `path`, spread over the video when its length is known. A video that
// cannot be read is named in `unreadable` (the frames it gave before count); the error returned is
// the calibration's.
Status feed_video(const std::string& path, int quota, BatchFeeder& feeder, Unreadable& unreadable) {
  const auto unreadable_video = [&](const Status& status) {
    log_warn("{}", status.to_string());
    unreadable.push_back(status.message());
    return Status::ok();
  };
  io::DemuxOptions demux_options;
  demux_options.cancel = &interrupt_flag();
  Result<std::unique_ptr<io::Demuxer>> demuxer = io::Demuxer::open(path, demux_options);
  if (!demuxer.is_ok()) return unreadable_video(demuxer.status());
  const io::StreamInfo& info = (*demuxer)->info();
  io::DecoderOptions options{.backend = io::DecoderBackend::kCpu, .cpu_output = PixelFormat::kNV12};
  options.eight_bit_output = true;
  // 4:2:0 frames have even sides (the flows' mux rounds down the same way).
  if (info.width % 2 != 0 || info.height % 2 != 0) {
    options.output_width = std::max(2, info.width / 2 * 2);
    options.output_height = std::max(2, info.height / 2 * 2);
  }
  Result<std::unique_ptr<io::Decoder>> decoder = io::open_cpu_decoder(info, options);
  if (!decoder.is_ok()) return unreadable_video(decoder.status().with_context(path + ": "));
  const std::int64_t stride = info.frame_count > quota ? info.frame_count / quota : 1;
  int taken = 0;
  std::vector<Frame> ready;
  const auto on_frame = [&](Frame&& frame) {
    if (frame.index % stride == 0 && taken + static_cast<int>(ready.size()) < quota)
      ready.push_back(std::move(frame));
  };
  io::Packet packet;
  bool more = true;
  while (more && taken < quota && !interrupt_flag().load()) {
    const Result<bool> read = (*demuxer)->read(packet);
    more = read.is_ok() && *read;
    const Status decoded = !read.is_ok() ? read.status()
                           : more        ? io::send_and_receive(**decoder, packet, on_frame)
                                         : io::finish_and_receive(**decoder, on_frame);
    for (Frame& frame : ready) FOVEA_TRY(feeder.add(frame.image, std::move(frame.owner)));
    taken += static_cast<int>(ready.size());
    ready.clear();
    if (!decoded.is_ok()) return unreadable_video(decoded.with_context(path + ": "));
  }
  if (taken == 0 && !interrupt_flag().load()) {
    return unreadable_video(make_error(StatusCode::kCorruptData, path, ": no frame could be decoded"));
  }
  return Status::ok();
}

// Each video's share of the samples still wanted; a video that fails is named and the others go on.
Status feed_videos(const std::vector<std::string>& videos, BatchFeeder& feeder, Unreadable& unreadable) {
  for (std::size_t v = 0; v < videos.size() && !interrupt_flag().load(); ++v) {
    const int left = feeder.wanted() - feeder.taken();
    if (left <= 0) break;
    const int videos_left = static_cast<int>(videos.size() - v);
    FOVEA_TRY(feed_video(videos[v], (left + videos_left - 1) / videos_left, feeder, unreadable));
  }
  return feeder.flush();
}

// The batch the model's input fixes, if it does.
std::optional<int> fixed_batch(const runtime::Graph& graph) {
  if (graph.inputs.size() != 1) return std::nullopt;  // open_flow_model refuses the model, saying why
  const std::optional<runtime::Dims>& dims = graph.value(graph.inputs.front()).type.dims;
  if (!dims || dims->empty() || !dims->front().known()) return std::nullopt;
  return static_cast<int>(dims->front().value);
}

// The tensors the SQNR rule keeps in float (their readers run unquantized), lowest SQNR first.
void print_kept_float(const runtime::quant::CalibrationTable& table) {
  std::vector<std::pair<float, std::string>> kept;
  for (const auto& [name, range] : table.tensors) {
    if (range.keep_float) kept.emplace_back(range.sqnr_db.value_or(0.0f), name);
  }
  std::sort(kept.begin(), kept.end());
  if (kept.empty()) {
    std::printf("  every tensor quantizes at or above --min-sqnr: every layer can run in int8\n");
    return;
  }
  std::printf("  %zu tensors below --min-sqnr: the layers reading them stay in float (keep_float):\n",
              kept.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(kept.size(), kSummaryTensors); ++i) {
    std::printf("    %-40s SQNR %.1f dB\n", kept[i].second.c_str(), kept[i].first);
  }
}

void print_summary(const CalibrateArgs& args, const runtime::quant::CalibrationTable& table,
                   const Calibrator& calibrator, double seconds) {
  const std::string method(runtime::quant::calibration_method_name(table.method));
  std::printf("calibrated %s on %d samples (%s) in %.1f s: %zu tensors, method %s -> %s\n",
              table.model.c_str(), table.samples, table.preprocess.c_str(), seconds, table.tensors.size(),
              table.method == runtime::quant::CalibrationMethod::kPercentile
                  ? fmt::format("{} {}", method, args.percentile).c_str()
                  : method.c_str(),
              args.output.c_str());
  struct Clipped {
    std::string name;
    float amax;
    float max_abs;
  };
  std::vector<Clipped> clipped;
  for (const auto& [tensor_name, histogram] : calibrator.histograms()) {
    const float amax = table.tensors.at(tensor_name).amax;
    if (amax < histogram.max_abs()) clipped.push_back({tensor_name, amax, histogram.max_abs()});
  }
  const auto shown = std::min<std::size_t>(clipped.size(), kSummaryTensors);
  std::partial_sort(
      clipped.begin(), clipped.begin() + static_cast<std::ptrdiff_t>(shown), clipped.end(),
      [](const Clipped& a, const Clipped& b) { return a.amax / a.max_abs < b.amax / b.max_abs; });
  print_kept_float(table);
  if (shown == 0) std::printf("  no tensor clipped: every amax is the largest |x| seen\n");
  if (shown > 0) std::printf("  most clipped (amax / max |x|), of %zu clipped:\n", clipped.size());
  for (std::size_t i = 0; i < shown; ++i) {
    std::printf("    %-40s amax %-12g max %-12g %.3f\n", clipped[i].name.c_str(), clipped[i].amax,
                clipped[i].max_abs, clipped[i].amax / clipped[i].max_abs);
  }
}

int fail(const Status& status, int exit_code) {
  log_error("{}", status.to_string());
  return exit_code;
}

// The inputs as files, for the output checks: the listed images, or the videos (each must exist).
// Entries the listing could not read are named in `unreadable`.
Result<std::vector<std::string>> input_files(const CalibrateArgs& args, std::vector<io::ListedImage>& images,
                                             Unreadable& unreadable) {
  std::vector<std::string> files;
  if (!args.images.empty()) {
    FOVEA_ASSIGN_OR_RETURN(io::ImageList listed, io::list_images(args.images, {.recursive = args.recursive}));
    for (const io::SkippedEntry& skipped : listed.skipped) {
      log_warn("{}: {}", skipped.path, skipped.reason);
      unreadable.push_back(skipped.path + ": " + skipped.reason);
    }
    images = std::move(listed.images);
    for (const io::ListedImage& image : images) files.push_back(image.path.string());
    return files;
  }
  for (const std::string& video : args.videos) {
    std::error_code error;
    if (!fs::is_regular_file(video, error)) {
      return make_error(StatusCode::kNotFound, "--video ", video, ": no such file");
    }
  }
  return args.videos;
}

int run_calibrate(CalibrateArgs args) {
  if (args.images.empty() == args.videos.empty()) {
    return fail(
        make_error(StatusCode::kInvalidArgument, "give the samples as --images or as --video (one of them)"),
        kExitUsage);
  }
  if (!(args.percentile > 0.0)) {
    return fail(make_error(StatusCode::kInvalidArgument, "--percentile must be above 0"), kExitUsage);
  }
  Result<runtime::quant::CalibrationMethod> method = runtime::quant::parse_calibration_method(args.method);
  Result<runtime::Device> device = runtime::parse_device(args.device);
  Result<pipeline::ModelConfig> config = model_config(args);
  for (const Status& status : {method.status(), device.status(), config.status()}) {
    if (!status.is_ok()) return fail(status, kExitUsage);
  }
  if (args.output.empty()) {
    if (!config->calibration) {
      return fail(make_error(StatusCode::kInvalidArgument, "-o: name the calibration cache to write"),
                  kExitUsage);
    }
    args.output = *config->calibration;
  }
  config->calibration.reset();  // the cache being made, not one to plan with
  std::vector<io::ListedImage> images;
  Unreadable unreadable;
  Result<std::vector<std::string>> inputs = input_files(args, images, unreadable);
  if (!inputs.is_ok()) {
    return fail(inputs.status(), inputs.status().code() == StatusCode::kNotFound ? kExitUsage : kExitFailure);
  }
  if (Status checked = check_output(args, config->path, *inputs); !checked.is_ok())
    return fail(checked, kExitUsage);

  Result<runtime::Model> model = runtime::load_onnx(config->path);
  if (!model.is_ok()) return fail(model.status(), kExitFailure);
  // --batch, else the model's fixed batch, else the default; open_flow_model refuses a --batch the
  // model's fixed batch contradicts.
  const std::optional<int> fixed = fixed_batch(model->graph);
  const int batch = args.batch.value_or(fixed.value_or(kDefaultBatch));
  // The flow's own opening of the model: its checks, its input size and its preprocessing.
  Result<std::unique_ptr<pipeline::FlowModel>> flow_model =
      pipeline::open_flow_model(*config, batch, pipeline::FlowShape{.batch_size = batch});
  if (!flow_model.is_ok()) {
    return fail(flow_model.status(),
                flow_model.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure);
  }
  (*flow_model)->session.reset();  // its preprocessing is what is needed; the calibrator runs its own
  Result<std::string> digest = runtime::file_digest(config->path);
  Result<std::unique_ptr<Calibrator>> calibrator = Calibrator::create(model->graph, *device);
  for (const Status& status : {digest.status(), calibrator.status()}) {
    if (!status.is_ok()) return fail(status, kExitFailure);
  }

  BatchFeeder feeder(**flow_model, **calibrator, args.samples, fixed.has_value());
  const Status fed =
      images.empty() ? feed_videos(args.videos, feeder, unreadable) : feed_images(images, feeder, unreadable);
  if (interrupt_flag().load()) {
    log_warn("interrupted: no calibration cache written");
    return kExitInterrupted;
  }
  if (!fed.is_ok()) return fail(fed, kExitFailure);
  const int samples = (*calibrator)->samples();
  if (samples == 0) {
    return fail(make_error(StatusCode::kCorruptData, "no batch of samples could be calibrated from ",
                           fmt::format("{}", fmt::join(images.empty() ? args.videos : args.images, ", "))),
                kExitFailure);
  }
  if (samples < args.samples) {
    log_warn("calibrated on {} samples, fewer than the {} asked for (--samples): the inputs hold no more",
             samples, args.samples);
  }
  Result<runtime::quant::CalibrationTable> table =
      (*calibrator)->finish(*method, args.percentile, args.min_sqnr_db);
  if (!table.is_ok()) return fail(table.status(), kExitFailure);
  table->model = fs::path(config->path).filename().string();
  table->model_digest = *digest;
  table->preprocess = preprocess_text(*config, (*flow_model)->preprocess);
  if (Status written = runtime::quant::write_calibration(args.output, *table); !written.is_ok()) {
    return fail(written, kExitFailure);
  }
  print_summary(args, *table, **calibrator, feeder.elapsed_s());
  if (unreadable.empty()) return kExitOk;
  std::printf("  %zu inputs could not be read:\n", unreadable.size());
  for (const std::string& reason : unreadable) std::printf("    %s\n", reason.c_str());
  return kExitPartial;
}

}  // namespace

void add_calibrate_command(CLI::App* model, Action* action) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* calibrate = model->add_subcommand(
      "calibrate", "Run the float model over sample pictures and write the calibration cache int8 runs with");
  calibrate->add_option("MODEL", args->model, "ONNX file (or the model of --config)")
      ->check(CLI::ExistingFile);
  calibrate->add_option("--images", args->images,
                        "Sample pictures: folders, globs, list files (.txt) or files (JPEG, PNG, BMP, WebP)");
  calibrate->add_flag("--recursive", args->recursive, "With --images: the folders' subfolders too");
  calibrate->add_option("--video", args->videos, "Sample videos: frames spread over each (repeatable)");
  calibrate->add_option("-o,--output", args->output,
                        "The calibration cache to write (default: the --config model's `calibration:`)");
  calibrate
      ->add_option(
          "--method", args->method,
          "entropy (TensorRT's, the usual choice), percentile (clips a fixed share) or minmax (clips "
          "nothing)")
      ->check(CLI::IsMember({"entropy", "percentile", "minmax"}))
      ->capture_default_str();
  calibrate
      ->add_option("--percentile", args->percentile, "With --method percentile: the share of |x| kept, in %")
      ->check(number_in(0.0, 100.0))
      ->capture_default_str();
  calibrate
      ->add_option("--min-sqnr", args->min_sqnr_db,
                   "Layers whose input quantizes below this signal-to-noise ratio in dB stay in float "
                   "(keep_float in the cache); 0 quantizes every layer")
      ->check(number_in(0.0, 200.0))
      ->capture_default_str();
  calibrate->add_option("--samples", args->samples, "Pictures or frames to calibrate on")
      ->check(at_least(1))
      ->capture_default_str();
  calibrate
      ->add_option("--batch", args->batch,
                   fmt::format("Samples per run (default {}, or the model's fixed batch); memory grows with "
                               "it, as every activation of a batch is kept",
                               kDefaultBatch))
      ->check(at_least(1));
  calibrate->add_option("--device", args->device, "cpu or cuda: where the float model runs")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  calibrate
      ->add_option("--config", args->config,
                   "A flow file: the preprocessing of its model entry (the flags below override it)")
      ->check(CLI::ExistingFile);
  calibrate->add_option("--model", args->config_model, "With --config: the models: entry (default the first)")
      ->needs("--config");
  calibrate->add_option("--size", args->size, "Network input WIDTHxHEIGHT; default the model's own");
  calibrate
      ->add_option("--normalize", args->normalize, "imagenet (torchvision models) or none (pixels / 255)")
      ->check(CLI::IsMember({"imagenet", "none"}));
  calibrate
      ->add_option("--mean", args->mean,
                   "Per-channel mean on the 0..1 scale, 3 values (overrides --normalize): (pixel / 255 - "
                   "mean) / std")
      ->expected(3)
      ->check(number_in(-1e6, 1e6))
      ->excludes("--normalize");
  calibrate
      ->add_option("--std", args->std, "Per-channel std on the 0..1 scale, 3 values (overrides --normalize)")
      ->expected(3)
      ->check(number_in(1e-6, 1e6))
      ->excludes("--normalize");
  calibrate->add_option("--color", args->color, "Channel order of the tensor: rgb or bgr")
      ->check(CLI::IsMember({"rgb", "bgr"}));
  calibrate->add_flag("--letterbox", args->letterbox, "Keep the picture's aspect in the network input (pad)");
  calibrate->callback([args, action] { *action = [args] { return run_calibrate(*args); }; });
}

}  // namespace fovea::app
