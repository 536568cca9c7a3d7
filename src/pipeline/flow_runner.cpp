#include "pipeline/flow_runner.h"

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
#include "io/url.h"
#include "pipeline/image_source.h"
#include "pipeline/stage.h"
#include "pipeline/stream_mux.h"
#include "pipeline/video_source.h"
#include "trace/session.h"
#include "trace/tracer.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
using BatchQueue = BoundedQueue<FrameBatch>;

// Between two stages one batch waits at most: the slots already bound what is in flight, and a
// short queue keeps a batch's latency close to its processing time.
constexpr std::size_t kStageQueueCapacity = 2;
// How often the monitor redraws the progress line and looks for Ctrl-C and failed stages.
constexpr auto kMonitorInterval = std::chrono::milliseconds(100);
constexpr auto kProgressInterval = std::chrono::milliseconds(500);
// Without a terminal the progress line is a log line, printed rarely.
constexpr auto kProgressLogInterval = std::chrono::seconds(10);
// How often the monitor asks whether the flow still moves (StallWatch).
constexpr auto kStallCheckInterval = std::chrono::seconds(1);

// Batches in flight: one in each stage and the sink, plus one ready in the mux, so every stage has
// its next batch at hand when it finishes one. Each costs a slot's buffers, so more would buy
// memory, not overlap.
int slot_count(const FlowPlan& plan) {
  return static_cast<int>(plan.stages.size()) + 2;
}

bool needs_stream(const StageSpec& stage) {
  return std::any_of(stage.ops.begin(), stage.ops.end(), [](const Op* op) { return !op->host_only(); });
}

bool reads_results(const StageSpec& stage) {
  return std::any_of(stage.ops.begin(), stage.ops.end(), [](const Op* op) { return op->reads_results(); });
}

// One stage as it runs: its ops, and on the GPU its stream and its index among the timed stages.
struct RunningStage {
  const StageSpec* spec = nullptr;
  bool gpu = false;
  int timed_index = -1;    // into SlotEvents' pairs; -1: host work, timed on the host
  Stage* stage = nullptr;  // where the GPU path's host work records its latency
#if defined(FOVEA_HAVE_CUDA)
  CudaStream stream;
#endif

  Status process(FrameBatch& batch) const {
    if (reads_results(*spec)) FOVEA_TRY(batch.resolve());
    if (!gpu) {
      FOVEA_TRACE_RANGE(spec->name.c_str(), static_cast<std::int64_t>(batch.number));
      for (Op* op : spec->ops) FOVEA_TRY(op->run_cpu(batch));
      return Status::ok();
    }
    if (timed_index < 0) {
      // Host work on the GPU path (the tracker): timed from here, after resolve() has waited for
      // the GPU work before it, which is that work's stage's time, not this one's.
      FOVEA_TRACE_RANGE(spec->name.c_str(), static_cast<std::int64_t>(batch.number));
      const auto start = Clock::now();
      for (Op* op : spec->ops) FOVEA_TRY(op->run(batch, nullptr));
      stage->record_latency(Clock::now() - start);
      return Status::ok();
    }
#if defined(FOVEA_HAVE_CUDA)
    cudaStream_t s = stream.get();
    SlotEvents& events = batch.slot->events;
    const auto index = static_cast<std::size_t>(timed_index);
    FOVEA_CUDA_TRY(cudaStreamWaitEvent(s, static_cast<cudaEvent_t>(events.ready.get()), 0));
    FOVEA_TRACE_RANGE(spec->name.c_str(), static_cast<std::int64_t>(batch.number), s);
    FOVEA_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(events.stage_start[index].get()), s));
    for (Op* op : spec->ops) FOVEA_TRY(op->run(batch, s));
    FOVEA_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(events.stage_end[index].get()), s));
    events.stage_used[index] = true;
    FOVEA_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(events.ready.get()), s));
#endif
    return Status::ok();
  }
};

}  // namespace

// The parts of a running flow, declared in the order they must be destroyed in reverse: stages
// first (they hold batches), then the queues, sources, mux and the slots (their memory).
struct Flow {
  FlowPlan* plan = nullptr;
  bool gpu = false;
  std::vector<BufferPool> pools;
  std::unique_ptr<SlotPool<SlotBuffers>> slots;
  std::unique_ptr<StreamMux<SourceFrame>> mux;
  std::unique_ptr<FrameSources> sources;
  std::vector<std::unique_ptr<RunningStage>> running;
  std::vector<std::unique_ptr<BatchQueue>> queues;
  std::vector<std::string> queue_names;
  std::unique_ptr<SourceStage<FrameBatch>> mux_stage;
  std::vector<std::unique_ptr<TransformStage<FrameBatch, FrameBatch>>> work_stages;
  std::unique_ptr<SinkStage<FrameBatch>> sink_stage;
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
  void drain() {
    mux->request_stop();
    sources->request_stop();
  }
  // A stage failed (or the mux stage ended): the sources stop and a mux waiting for a slot wakes up
  // empty-handed, since the slots held downstream may never come back.
  void abort() {
    drain();
    slots->close();
  }
};

// Binds a FlowControl to the flow for as long as it lives (declared after the flow's parts, so
// it unbinds before they are torn down).
class FlowBinding {
 public:
  FlowBinding(FlowControl* control, Flow& flow) : control_(control) {
    if (control_ == nullptr) return;
    const std::lock_guard lock(control_->mutex_);
    control_->flow_ = &flow;
  }
  ~FlowBinding() {
    if (control_ == nullptr) return;
    const std::lock_guard lock(control_->mutex_);
    control_->flow_ = nullptr;
  }
  FlowBinding(const FlowBinding&) = delete;
  FlowBinding& operator=(const FlowBinding&) = delete;

 private:
  FlowControl* control_;
};

namespace {

// The slot first, then the frames: while every slot is in use the frames wait in the mux's
// bounded per-source queues, where the sources' back-pressure starts, not in the mux stage's hands.
Result<std::optional<FrameBatch>> next_batch(Flow& flow) {
  std::optional<SlotPool<SlotBuffers>::Handle> slot = flow.slots->acquire();
  if (!slot) {
    return std::optional<FrameBatch>();  // a stage failed
  }
  std::optional<Batch<SourceFrame>> batch;
  {
    FOVEA_TRACE_RANGE("mux");
    batch = flow.mux->next_batch();
  }
  if (!batch) {
    return std::optional<FrameBatch>();  // every source has ended
  }
  FrameBatch frames{.number = batch->number, .frames = std::move(batch->frames), .slot = std::move(*slot)};
  // Every frame is the model's until a gate says otherwise.
  frames.results.resize(frames.frames.size(), FrameResults{.inferred = true});
  std::fill(frames.slot->events.stage_used.begin(), frames.slot->events.stage_used.end(), false);
  frames.life.emplace("pipeline", static_cast<std::int64_t>(frames.number));
  return std::optional<FrameBatch>(std::move(frames));
}

// The GPU time of each timed stage's work on this batch; the batch's GPU work is done.
Status record_gpu_latencies(Flow& flow, const FrameBatch& batch) {
#if defined(FOVEA_HAVE_CUDA)
  const SlotEvents& events = batch.slot->events;
  for (std::size_t s = 0; s < flow.running.size(); ++s) {
    const int index = flow.running[s]->timed_index;
    if (index < 0 || !events.stage_used[static_cast<std::size_t>(index)]) continue;
    float ms = 0.0f;
    FOVEA_CUDA_TRY(cudaEventElapsedTime(
        &ms, static_cast<cudaEvent_t>(events.stage_start[static_cast<std::size_t>(index)].get()),
        static_cast<cudaEvent_t>(events.stage_end[static_cast<std::size_t>(index)].get())));
    flow.work_stages[s]->record_latency(std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6)));
  }
#else
  static_cast<void>(flow);
  static_cast<void>(batch);
#endif
  return Status::ok();
}

Status consume(Flow& flow, FrameBatch&& batch) {
  FOVEA_TRY(batch.resolve());
  // The GPU path's sink is timed from here: waiting for the batch's GPU work is the GPU stages' time.
  const auto start = Clock::now();
  if (flow.gpu) FOVEA_TRY(record_gpu_latencies(flow, batch));
  if (flow.first_output_ns.load(std::memory_order_relaxed) < 0) {
    flow.first_output_frames.store(batch.size(), std::memory_order_relaxed);
    const auto since_start = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - flow.start);
    flow.first_output_ns.store(since_start.count(), std::memory_order_release);
  }
  const auto shared = std::make_shared<const FrameBatch>(std::move(batch));
  for (const auto& sink : flow.plan->sinks) FOVEA_TRY(sink->write(shared));
  if (flow.gpu) flow.sink_stage->record_latency(Clock::now() - start);
  return Status::ok();
}

Status build_stages(Flow& flow) {
  int timed = 0;
  for (const StageSpec& spec : flow.plan->stages) {
    auto stage = std::make_unique<RunningStage>();
    stage->spec = &spec;
    stage->gpu = flow.gpu;
    if (flow.gpu && needs_stream(spec)) {
      stage->timed_index = timed++;
#if defined(FOVEA_HAVE_CUDA)
      FOVEA_ASSIGN_OR_RETURN(stage->stream, spec.high_priority
                                                ? CudaStream::create(CudaStream::Priority::kHigh)
                                                : CudaStream::create());
#endif
    }
    flow.running.push_back(std::move(stage));
  }
  flow.queues.push_back(std::make_unique<BatchQueue>(kStageQueueCapacity));
  flow.queue_names.push_back("mux");
  for (const StageSpec& spec : flow.plan->stages) {
    flow.queues.push_back(std::make_unique<BatchQueue>(kStageQueueCapacity));
    flow.queue_names.push_back(spec.name);
  }
  flow.mux_stage = std::make_unique<SourceStage<FrameBatch>>(
      "mux", *flow.queues[0], [&flow] { return next_batch(flow); }, [&flow] { flow.abort(); });
  for (std::size_t i = 0; i < flow.running.size(); ++i) {
    const RunningStage* stage = flow.running[i].get();
    flow.work_stages.push_back(std::make_unique<TransformStage<FrameBatch, FrameBatch>>(
        stage->spec->name, *flow.queues[i], *flow.queues[i + 1],
        [stage](FrameBatch&& batch) -> Result<FrameBatch> {
          FOVEA_TRY(stage->process(batch));
          return std::move(batch);
        },
        // The CPU path times every stage around its work; the GPU path times its GPU stages with
        // events and its host stages itself (RunningStage::process).
        /*host_timed=*/!flow.gpu));
    flow.running[i]->stage = flow.work_stages.back().get();
  }
  flow.sink_stage = std::make_unique<SinkStage<FrameBatch>>(
      "sink", *flow.queues.back(), [&flow](FrameBatch&& batch) { return consume(flow, std::move(batch)); },
      /*host_timed=*/!flow.gpu);
  return Status::ok();
}

Status allocate(Flow& flow) {
  BufferPlan buffers;
  for (const auto& op : flow.plan->ops) FOVEA_TRY(op->declare(buffers));
  int timed = 0;
  for (const StageSpec& spec : flow.plan->stages) timed += flow.gpu && needs_stream(spec) ? 1 : 0;
  FOVEA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<SlotBuffers>> slots,
                         allocate_slots(buffers, flow.plan->shape.batch_size, slot_count(*flow.plan),
                                        flow.gpu, timed, flow.pools));
  flow.slots = std::make_unique<SlotPool<SlotBuffers>>(std::move(slots));
  return Status::ok();
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
  const std::vector<SourceStats> slots = flow.mux->source_stats();
  const std::vector<std::optional<SourceReport>> reports = flow.sources->reports();
  for (std::size_t s = 0; s < slots.size() && s < reports.size(); ++s) {
    if (!reports[s]) continue;  // a service's slot never used
    SourceStats source = slots[s];
    const SourceReport& report = *reports[s];
    source.decoder =
        report.decoder.empty() ? std::string(io::decoder_backend_name(report.backend)) : report.decoder;
    source.fallback = !report.fallback_reason.empty();
    source.decoded = static_cast<std::uint64_t>(report.frames_decoded);
    source.expected = static_cast<std::uint64_t>(report.expected_frames);
    source.reconnects = static_cast<std::uint64_t>(report.reconnects);
    source.state = std::string(source_state_name(report.state));
    source.items_failed = static_cast<std::uint64_t>(report.items_failed);
    source.failed_items = report.failed_items;
    source.work = report.work;
    source.threads = report.threads;
    source.threads_span_s = report.threads_span_s;
    stats.sources.push_back(std::move(source));
  }
  if (std::optional<SourceStats> retired = flow.mux->retired_stats()) {
    retired->decoded = static_cast<std::uint64_t>(flow.sources->retired_decoded());
    stats.sources.push_back(std::move(*retired));
  }
  for (Stage* stage : flow.stages()) {
    StageStats stage_stats = stage->stats();
    for (const auto& running : flow.running) {
      if (running->stage != stage) continue;
      for (const Op* op : running->spec->ops) {
        for (StageCounter& counter : op->counters()) stage_stats.counters.push_back(std::move(counter));
      }
    }
    stats.stages.push_back(std::move(stage_stats));
  }
  for (std::size_t q = 0; q < flow.queues.size(); ++q) {
    stats.queues.push_back({flow.queue_names[q], flow.queues[q]->counters()});
  }
  for (const auto& sink : flow.plan->sinks) {
    if (std::optional<BrokerStats> broker = sink->broker_stats()) stats.brokers.push_back(std::move(*broker));
    for (LiveOutputStats& output : sink->live_outputs()) stats.live_outputs.push_back(std::move(output));
  }
  return stats;
}

// Watches the running flow from the calling thread until the sink stage ends: redraws the progress
// line, turns Ctrl-C into a drain, stops the sources when a stage failed, and names a flow that has
// stopped moving.
bool monitor(Flow& flow, const PipelineConfig& config, const FlowOptions& options, Clock::time_point start,
             std::atomic<bool>& sink_done) {
  const bool terminal = options.progress != nullptr && isatty(fileno(options.progress)) != 0;
  const bool show = config.stats.progress && options.progress != nullptr;
  bool interrupted = false, draining = false, aborted = false;
  auto last_progress = Clock::now();
  auto last_stall_check = Clock::now();
  ProgressMeter meter;
  StallWatch stall_watch;
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
    // One snapshot per round, taken only when something reads it.
    std::optional<PipelineStats> stats;
    const auto current = [&]() -> const PipelineStats& {
      if (!stats) stats = snapshot(flow, start);
      return *stats;
    };
    if (options.on_progress) options.on_progress(current());
    const auto now = Clock::now();
    if (now - last_stall_check >= kStallCheckInterval) {
      last_stall_check = now;
      if (const std::string notice = stall_watch.check(current()); !notice.empty()) log_warn("{}", notice);
    }
    if (show && now - last_progress >= (terminal ? kProgressInterval : kProgressLogInterval)) {
      last_progress = now;
      const std::string line = meter.line(current());
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
                       {"dropped", output.dropped},
                       {"reconnects", output.reconnects},
                       {"error", output.error}});
  }
  report["outputs"] = std::move(outputs);
  return write_file_atomically(*config.stats.report, report.dump(2) + '\n', "stats.report");
}

bool any_network_source(const std::vector<SourceConfig>& sources) {
  return std::any_of(sources.begin(), sources.end(),
                     [](const SourceConfig& source) { return io::is_network_url(source.uri); });
}

// A service is live (its sources are cameras) unless the configuration says otherwise; a run is
// live when one of its sources is a network stream.
Result<MuxOptions> mux_options_of(const PipelineConfig& pipeline, const FlowOptions& flow_options) {
  const MuxConfig& config = pipeline.mux;
  const bool service = flow_options.control != nullptr;
  const bool live = config.live.value_or(service || any_network_source(pipeline.sources));
  MuxOptions options{.batch_size = static_cast<std::size_t>(config.batch_size),
                     .push_timeout_us = config.push_timeout_us.value_or(-1),
                     .live = live,
                     .source_queue_capacity = static_cast<std::size_t>(config.source_queue),
                     .auto_push_timeout = live && !config.push_timeout_us,
                     .keep_open = service,
                     .slots = std::max(flow_options.source_slots, pipeline.sources.size())};
  if (config.max_frames_per_source) {
    options.max_frames_per_source_per_batch = static_cast<std::size_t>(*config.max_frames_per_source);
  }
  FOVEA_TRY(validate(options));
  return options;
}

// Every sink finalized, whatever happened before; the first error wins.
Status finish_sinks(FlowPlan& plan, FlowResult& result) {
  Status status;
  for (const auto& sink : plan.sinks) {
    const Status finished = sink->finish();
    if (status.is_ok()) status = finished;
    for (SinkReport& report : sink->reports()) result.outputs.push_back(std::move(report));
  }
  result.failed_outputs = static_cast<std::size_t>(std::count_if(
      result.outputs.begin(), result.outputs.end(), [](const SinkReport& r) { return !r.error.empty(); }));
  return status;
}

}  // namespace

Result<std::size_t> FlowControl::add_source(SourceConfig source) {
  const std::lock_guard lock(mutex_);
  if (flow_ == nullptr) return make_error(StatusCode::kResourceExhausted, "the flow is not running");
  std::string name = source.name;
  return flow_->sources->add(std::move(source), std::move(name));
}

bool FlowControl::remove_source(std::size_t slot) {
  const std::lock_guard lock(mutex_);
  return flow_ != nullptr && flow_->sources->remove(slot);
}

std::optional<PipelineStats> FlowControl::stats() const {
  const std::lock_guard lock(mutex_);
  if (flow_ == nullptr) return std::nullopt;
  return snapshot(*flow_, flow_->start);
}

std::vector<std::optional<SourceReport>> FlowControl::source_reports() const {
  const std::lock_guard lock(mutex_);
  if (flow_ == nullptr) return {};
  return flow_->sources->reports();
}

bool FlowControl::on_gpu() const {
  const std::lock_guard lock(mutex_);
  return flow_ != nullptr && flow_->gpu;
}

bool FlowControl::running() const {
  const std::lock_guard lock(mutex_);
  return flow_ != nullptr;
}

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

std::vector<std::string> source_names(const std::vector<SourceConfig>& sources) {
  std::vector<std::string> names;
  std::set<std::string> used;
  for (const SourceConfig& source : sources) {
    std::string stem = source.name.empty() ? std::filesystem::path(source.uri).stem().string() : source.name;
    if (stem.empty()) stem = "source";
    std::string name = stem;
    for (int k = 1; used.count(name) > 0; ++k) name = fmt::format("{}_{}", stem, k);
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

Result<FlowResult> run_flow_plan(FlowPlan& plan, const PipelineConfig& config, const FlowOptions& options) {
  Flow flow;
  flow.plan = &plan;
  flow.gpu = plan.shape.gpu;
  FlowResult result;
  result.device = plan.description;
  FOVEA_TRY(allocate(flow));
  FOVEA_ASSIGN_OR_RETURN(const MuxOptions mux_options, mux_options_of(config, options));
  // The configuration's sources take the first slots; a service's other slots stay free for the
  // sources it adds (the plan's names cover every slot).
  const std::vector<std::string> names =
      config.images ? std::vector<std::string>{kImagesSourceName} : source_names(config.sources);
  flow.mux = std::make_unique<StreamMux<SourceFrame>>(mux_options, names);
  // A source's frames in flight: its mux queue, and its share of every batch the slots hold.
  const int per_batch =
      std::min(config.mux.batch_size, config.mux.max_frames_per_source.value_or(config.mux.batch_size));
  VideoSourceOptions source_options{
      .width = plan.shape.frame_width,
      .height = plan.shape.frame_height,
      .gpu = flow.gpu,
      .max_frames_in_flight =
          static_cast<int>(mux_options.source_queue_capacity) + (slot_count(plan) + 1) * per_batch + 2};
  if (config.images && config.images->decoder == JpegCodec::kNvjpeg && !flow.gpu) {
    // As sinks.images.encoder: a backend asked for by name is never swapped for another in silence.
    return make_error(StatusCode::kInvalidArgument,
                      "images.decoder: nvjpeg decodes JPEG files on the GPU; this flow runs on the CPU");
  }
  if (config.images) {
    ImageSourceOptions image_options{.gpu = flow.gpu,
                                     .device = plan.shape.device,
                                     .threads = config.images->threads,
                                     .split = config.images->split,
                                     .decoder = config.images->decoder,
                                     .jpeg_threads = config.images->jpeg_threads,
                                     .jpeg_batch = config.images->jpeg_batch,
                                     .max_frames_in_flight = source_options.max_frames_in_flight};
    flow.sources = std::make_unique<ImageSources>(
        plan.images, kImagesSourceName, image_inputs_label(config.images->inputs), image_options, *flow.mux);
  } else {
    flow.sources = std::make_unique<VideoSources>(config.sources, names, source_options, *flow.mux);
  }
  std::vector<Rational> frame_rates;
  for (const std::optional<SourceReport>& report : flow.sources->reports())
    frame_rates.push_back(report ? report->frame_rate : Rational{});
  for (const auto& sink : plan.sinks) FOVEA_TRY(sink->start(frame_rates));
  FOVEA_TRY(build_stages(flow));

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
  const FlowBinding binding(options.control, flow);
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

  if (session) {
    if (Result<trace::Report> traced = session->stop(); !traced.is_ok())
      log_error("{}", traced.status().to_string());
  }
  // A stage's error is a failure of the run (exit 1), never a bad command line: an op that finds
  // its input malformed mid-run says kInvalidArgument about the data, not about what the user asked.
  Status status = flow.first_stage_error();
  if (status.code() == StatusCode::kInvalidArgument) status = Status(StatusCode::kInternal, status.message());
  const Status finished = finish_sinks(plan, result);
  if (status.is_ok()) status = finished;
  // After the sinks finished: their own figures (a broker's deliveries) are final by then.
  result.stats = snapshot(flow, start, end);
  result.stats.interrupted = result.interrupted;
  if (config.stats.report) result.report_status = write_report(config, result);
  FOVEA_TRY(status);
  return result;
}

}  // namespace fovea::pipeline
