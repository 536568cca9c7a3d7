#include "pipeline/segmentation_flow.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/gpu.h"
#include "core/log.h"
#include "core/output_file.h"
#include "pipeline/stage.h"
#include "pipeline/stream_mux.h"
#include "pipeline/video_source.h"
#include "trace/session.h"

namespace fovea::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
using SegmentQueue = BoundedQueue<SegmentBatch>;

// Batches in flight: one in each of the four working stages and the sink, plus one ready in the
// mux, so every stage has its next batch at hand when it finishes one. Each costs a slot's buffers
// (about 20 MB per 1080p frame on the GPU), so more would buy memory, not overlap.
constexpr int kSlots = 6;
// Between two stages one batch waits at most: the slots already bound what is in flight, and a
// short queue keeps a batch's latency close to its processing time.
constexpr std::size_t kStageQueueCapacity = 2;
// How often the monitor redraws the progress line and looks for Ctrl-C and failed stages.
constexpr auto kMonitorInterval = std::chrono::milliseconds(100);
constexpr auto kProgressInterval = std::chrono::milliseconds(500);
// Without a terminal the progress line is a log line, printed rarely.
constexpr auto kProgressLogInterval = std::chrono::seconds(10);

Result<bool> choose_gpu(DeviceChoice choice) {
  const bool available = gpu_available();
  if (choice == DeviceChoice::kGpu && !available) {
    return make_error(StatusCode::kUnsupported, "--device cuda: ",
#if defined(FOVEA_HAVE_CUDA)
                      "no CUDA device is available"
#else
                      "this fovea was built without CUDA"
#endif
    );
  }
  return choice == DeviceChoice::kCpu ? false : available;
}

// Encoders share the machine's cores: each gets its share, at least one.
int encoder_threads(std::size_t sources) {
  if (sources <= 1) return 0;  // the encoder's own default: every core
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores / sources));
}

// The parts of a running flow, declared in the order they must be destroyed in reverse: stages
// first (they hold batches), then the queues, sinks, sources, mux and the ops (the slots' memory).
struct Flow {
  std::unique_ptr<SegmentationOps> ops;
  std::unique_ptr<StreamMux<SourceFrame>> mux;
  std::unique_ptr<VideoSources> sources;
  std::unique_ptr<VideoSink> video;
  std::unique_ptr<MetadataSink> metadata;
  std::vector<std::unique_ptr<SegmentQueue>> queues;
  std::vector<std::string> queue_names;
  std::unique_ptr<SourceStage<SegmentBatch>> mux_stage;
  std::vector<std::unique_ptr<TransformStage<SegmentBatch, SegmentBatch>>> work_stages;
  std::unique_ptr<SinkStage<SegmentBatch>> sink_stage;
  // Set before any stage starts; the first output's time after it (-1 until then) and frames,
  // written by the sink's thread and read by the monitor's.
  Clock::time_point start;
  std::atomic<std::int64_t> first_output_ns{-1};
  std::atomic<std::uint64_t> first_output_frames{0};

  std::vector<Stage*> stages() const {
    std::vector<Stage*> all{mux_stage.get()};
    for (const auto& stage : work_stages) all.push_back(stage.get());
    all.push_back(sink_stage.get());
    return all;
  }
  Status first_stage_error() const {
    for (Stage* stage : stages()) {
      if (Status status = stage->status(); !status.is_ok()) return status;
    }
    return Status::ok();
  }
  // Ctrl-C: the sources stop; what they decoded still goes through, so the mux keeps taking slots.
  void drain() { mux->request_stop(); }
  // A stage failed (or the mux stage ended): the sources stop and a mux waiting for a slot wakes up
  // empty-handed, since the slots held downstream may never come back.
  void abort() {
    mux->request_stop();
    ops->slots().close();
  }
};

// The slot first, then the frames: while every slot is in use the frames wait in the mux's
// bounded per-source queues, where the sources' back-pressure starts, not in the mux stage's hands.
Result<std::optional<SegmentBatch>> next_batch(Flow& flow) {
  std::optional<SlotPool<BatchBuffers>::Handle> slot = flow.ops->slots().acquire();
  if (!slot) {
    return std::optional<SegmentBatch>();  // a stage failed
  }
  std::optional<Batch<SourceFrame>> batch;
  {
    FOVEA_TRACE_RANGE("mux");
    batch = flow.mux->next_batch();
  }
  if (!batch) {
    return std::optional<SegmentBatch>();  // every source has ended
  }
  SegmentBatch segment{
      .number = batch->number, .frames = std::move(batch->frames), .buffers = std::move(*slot)};
  segment.life.emplace("pipeline", static_cast<std::int64_t>(segment.number));
  return std::optional<SegmentBatch>(std::move(segment));
}

Status consume(Flow& flow, SegmentBatch&& batch) {
  FOVEA_TRY(flow.ops->wait_for_outputs(batch));
  if (flow.first_output_ns.load(std::memory_order_relaxed) < 0) {
    flow.first_output_frames.store(batch.frames.size(), std::memory_order_relaxed);
    const auto since_start = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - flow.start);
    flow.first_output_ns.store(since_start.count(), std::memory_order_release);
  }
  if (flow.metadata) FOVEA_TRY(flow.metadata->write(batch));
  if (flow.video) flow.video->write(std::make_shared<const SegmentBatch>(std::move(batch)));
  return Status::ok();
}

void build_stages(Flow& flow) {
  const std::vector<std::string> names = {"mux", "preprocess", "inference", "postprocess", "composite"};
  for (const std::string& name : names) {
    flow.queues.push_back(std::make_unique<SegmentQueue>(kStageQueueCapacity));
    flow.queue_names.push_back(name);
  }
  flow.mux_stage = std::make_unique<SourceStage<SegmentBatch>>(
      "mux", *flow.queues[0], [&flow] { return next_batch(flow); }, [&flow] { flow.abort(); });
  SegmentationOps& ops = *flow.ops;
  using Work = Status (SegmentationOps::*)(SegmentBatch&);
  const std::vector<std::pair<std::string, Work>> work = {{"preprocess", &SegmentationOps::preprocess},
                                                          {"inference", &SegmentationOps::infer},
                                                          {"postprocess", &SegmentationOps::postprocess},
                                                          {"composite", &SegmentationOps::composite}};
  for (std::size_t i = 0; i < work.size(); ++i) {
    const Work method = work[i].second;
    flow.work_stages.push_back(std::make_unique<TransformStage<SegmentBatch, SegmentBatch>>(
        work[i].first, *flow.queues[i], *flow.queues[i + 1],
        [&ops, method](SegmentBatch&& batch) -> Result<SegmentBatch> {
          FOVEA_TRY((ops.*method)(batch));
          return std::move(batch);
        }));
  }
  flow.sink_stage = std::make_unique<SinkStage<SegmentBatch>>(
      "sink", *flow.queues.back(), [&flow](SegmentBatch&& batch) { return consume(flow, std::move(batch)); });
}

// `end`: when the run ended, for the final figures; now while it runs.
PipelineStats snapshot(const Flow& flow, Clock::time_point start,
                       std::optional<Clock::time_point> end = std::nullopt) {
  PipelineStats stats;
  stats.elapsed_s = std::chrono::duration<double>(end.value_or(Clock::now()) - start).count();
  stats.batches = flow.mux->batches();
  if (const std::int64_t first_ns = flow.first_output_ns.load(std::memory_order_acquire); first_ns >= 0) {
    stats.first_output_s = static_cast<double>(first_ns) * 1e-9;
    stats.first_output_frames = flow.first_output_frames.load(std::memory_order_relaxed);
  }
  stats.sources = flow.mux->source_stats();
  const std::vector<SourceReport> reports = flow.sources->reports();
  for (std::size_t s = 0; s < stats.sources.size() && s < reports.size(); ++s) {
    stats.sources[s].decoder = std::string(io::decoder_backend_name(reports[s].backend));
    stats.sources[s].fallback = !reports[s].fallback_reason.empty();
    stats.sources[s].decoded = static_cast<std::uint64_t>(reports[s].frames_decoded);
    stats.sources[s].expected = static_cast<std::uint64_t>(reports[s].expected_frames);
  }
  for (Stage* stage : flow.stages()) stats.stages.push_back(stage->stats());
  for (std::size_t q = 0; q < flow.queues.size(); ++q) {
    stats.queues.push_back({flow.queue_names[q], flow.queues[q]->counters()});
  }
  return stats;
}

// Watches the running flow from the calling thread until the sink stage ends: redraws the progress
// line, turns Ctrl-C into a drain, and stops the sources when a stage failed.
bool monitor(Flow& flow, const PipelineConfig& config, const FlowOptions& options, Clock::time_point start,
             std::atomic<bool>& sink_done) {
  const bool terminal = options.progress != nullptr && isatty(fileno(options.progress)) != 0;
  const bool show = config.stats.progress && options.progress != nullptr;
  bool interrupted = false, draining = false, aborted = false;
  auto last_progress = Clock::now();
  ProgressMeter meter;
  while (!sink_done.load()) {
    std::this_thread::sleep_for(kMonitorInterval);
    if (!interrupted && options.interrupt != nullptr && options.interrupt->load()) {
      interrupted = true;
      log_warn(
          "interrupted: stopping the sources, draining the batches in flight and finalizing the outputs");
    }
    if (interrupted && !draining) {
      draining = true;
      flow.drain();
    }
    if (!aborted && !flow.first_stage_error().is_ok()) {
      aborted = true;
      flow.abort();
    }
    if (options.on_progress) options.on_progress(snapshot(flow, start));
    const auto now = Clock::now();
    if (show && now - last_progress >= (terminal ? kProgressInterval : kProgressLogInterval)) {
      last_progress = now;
      const std::string line = meter.line(snapshot(flow, start));
      if (terminal) {
        std::fprintf(options.progress, "\r\033[K%s", line.c_str());
      } else {
        std::fprintf(options.progress, "%s\n", line.c_str());
      }
      std::fflush(options.progress);
    }
  }
  if (show && terminal) std::fputc('\n', options.progress);
  return interrupted;
}

Result<SegmentationSettings> settings_for(const PipelineConfig& config, bool gpu) {
  SegmentationSettings settings{.gpu = gpu,
                                .batch_size = config.mux.batch_size,
                                .frame_width = *config.mux.width,
                                .frame_height = *config.mux.height,
                                .model = config.model,
                                .task = config.task,
                                .encode_outputs = config.sinks.video.has_value(),
                                .class_maps_on_host = config.sinks.metadata.has_value(),
                                .slots = kSlots};
  if (config.sources.empty()) {
    return make_error(StatusCode::kInvalidArgument, "sources: the flow needs at least one source");
  }
  return settings;
}

Status write_report(const PipelineConfig& config, const FlowResult& result) {
  nlohmann::json report = to_json(result.stats);
  report["device"] = result.device;
  report["interrupted"] = result.interrupted;
  nlohmann::json outputs = nlohmann::json::array();
  for (const SinkReport& output : result.outputs) {
    outputs.push_back({{"source", output.source},
                       {"path", output.path},
                       {"encoder", output.encoder},
                       {"frames", output.frames},
                       {"error", output.error}});
  }
  report["outputs"] = std::move(outputs);
  return write_file_atomically(*config.stats.report, report.dump(2) + '\n', "stats.report");
}

// Everything the run will write, named by its configuration key, for the checks before the run.
std::vector<PlannedOutput> planned_outputs(const PipelineConfig& config,
                                           const std::vector<std::string>& names,
                                           const FlowOptions& options) {
  std::vector<PlannedOutput> outputs;
  if (config.sinks.video) {
    outputs.push_back(
        {.what = "sinks.video.output_dir", .path = config.sinks.video->output_dir, .is_folder = true});
    for (const std::string& name : names) {
      outputs.push_back({.what = "the video output", .path = video_output_path(*config.sinks.video, name)});
    }
  }
  if (config.sinks.metadata)
    outputs.push_back({.what = "sinks.metadata.path", .path = config.sinks.metadata->path});
  if (config.stats.report) outputs.push_back({.what = "stats.report", .path = *config.stats.report});
  if (!options.trace_dir.empty()) {
    outputs.push_back({.what = "the trace folder", .path = options.trace_dir, .is_folder = true});
  }
  return outputs;
}

// Before anything runs: no output may be an input (a source or the model), and each must be
// creatable. Both are mistakes in what the user asked for: kInvalidArgument.
Status check_flow_outputs(const PipelineConfig& config, const std::vector<std::string>& names,
                          const FlowOptions& options) {
  std::vector<std::string> inputs{config.model.path};
  for (const SourceConfig& source : config.sources) inputs.push_back(source.uri);
  const Status status = check_outputs(planned_outputs(config, names, options), inputs);
  return status.is_ok() ? status : Status(StatusCode::kInvalidArgument, status.message());
}

}  // namespace

std::vector<std::string> source_names(const std::vector<SourceConfig>& sources) {
  std::vector<std::string> names;
  std::set<std::string> used;
  for (const SourceConfig& source : sources) {
    std::string stem = std::filesystem::path(source.uri).stem().string();
    if (stem.empty()) stem = "source";
    std::string name = stem;
    for (int k = 1; used.count(name) > 0; ++k) name = fmt::format("{}_{}", stem, k);
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

Result<FlowResult> run_segmentation_flow(const PipelineConfig& requested, const FlowOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(const bool gpu, choose_gpu(options.device));
  FOVEA_ASSIGN_OR_RETURN(const PipelineConfig config, with_frame_size(requested, options.interrupt));
  FOVEA_ASSIGN_OR_RETURN(const SegmentationSettings settings, settings_for(config, gpu));
  const std::vector<std::string> names = source_names(config.sources);
  FOVEA_TRY(check_flow_outputs(config, names, options));

  Flow flow;
  FOVEA_ASSIGN_OR_RETURN(flow.ops, SegmentationOps::create(settings));
  FlowResult result;
  result.device = flow.ops->description();
  log_info("segmentation on {}", result.device);
  if (!gpu) log_info("no GPU in use: the flow runs on the CPU (the reference kernels), which is slow");

  MuxOptions mux_options{.batch_size = static_cast<std::size_t>(config.mux.batch_size),
                         .push_timeout_us = config.mux.push_timeout_us,
                         .live = config.mux.live};
  if (config.mux.max_frames_per_source) {
    mux_options.max_frames_per_source_per_batch = static_cast<std::size_t>(*config.mux.max_frames_per_source);
  }
  FOVEA_TRY(validate(mux_options));
  flow.mux = std::make_unique<StreamMux<SourceFrame>>(mux_options, names);
  // A source's frames in flight: its mux queue, and its share of every batch the slots hold.
  const int per_batch =
      std::min(config.mux.batch_size, config.mux.max_frames_per_source.value_or(config.mux.batch_size));
  VideoSourceOptions source_options{
      .width = *config.mux.width,
      .height = *config.mux.height,
      .gpu = gpu,
      .max_frames_in_flight =
          static_cast<int>(mux_options.source_queue_capacity) + (kSlots + 1) * per_batch + 2,
      .cancel = options.interrupt};
  flow.sources = std::make_unique<VideoSources>(config.sources, source_options, *flow.mux);
  if (config.sinks.video) {
    flow.video = std::make_unique<VideoSink>(
        *config.sinks.video, names, *config.mux.width, *config.mux.height, encoder_threads(names.size()),
        [&flow](std::size_t s) { return flow.sources->reports().at(s).frame_rate; });
    FOVEA_TRY(flow.video->start());
  }
  if (config.sinks.metadata) {
    flow.metadata = std::make_unique<MetadataSink>(*config.sinks.metadata, names, flow.ops->classes());
    FOVEA_TRY(flow.metadata->start());
  }
  build_stages(flow);

  // No label: `fovea report` names the run by its trace folder (a source's name would label every
  // run of the same clip alike).
  FOVEA_ASSIGN_OR_RETURN(std::optional<trace::Session> session,
                         trace::start_session_if_requested({.dir = options.trace_dir}));
  const Clock::time_point start = Clock::now();
  flow.start = start;
  std::atomic<bool> sink_done{false};
  flow.sink_stage->start();
  for (auto& stage : flow.work_stages) stage->start();
  flow.mux_stage->start();
  flow.sources->start();
  // The end is when the sink has taken the last batch, not when the monitor next looks.
  Clock::time_point end;
  std::thread watcher([&] {
    flow.sink_stage->join();
    end = Clock::now();
    sink_done = true;
  });
  result.interrupted = monitor(flow, config, options, start, sink_done);
  watcher.join();
  flow.abort();  // everything has ended; this only releases a mux stage that outlived the sink
  for (Stage* stage : flow.stages()) stage->join();
  flow.sources->join();
  result.stats = snapshot(flow, start, end);
  result.stats.interrupted = result.interrupted;
  if (session) {
    if (Result<trace::Report> traced = session->stop(); !traced.is_ok())
      log_error("{}", traced.status().to_string());
  }
  if (flow.video) {
    flow.video->finish();
    result.outputs = flow.video->reports();
    result.failed_outputs = static_cast<std::size_t>(std::count_if(
        result.outputs.begin(), result.outputs.end(), [](const SinkReport& r) { return !r.error.empty(); }));
  }
  // A stage's error is a failure of the run (exit 1), never a bad command line: an op that finds
  // its input malformed mid-run says kInvalidArgument about the data, not about what the user asked.
  Status status = flow.first_stage_error();
  if (status.code() == StatusCode::kInvalidArgument) status = Status(StatusCode::kInternal, status.message());
  if (flow.metadata) {
    const Status closed = flow.metadata->finish();
    if (status.is_ok()) status = closed;
  }
  if (config.stats.report) result.report_status = write_report(config, result);
  FOVEA_TRY(status);
  return result;
}

}  // namespace fovea::pipeline
