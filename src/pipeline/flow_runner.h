// The generic flow runner: every flow (segmentation, detection, ...) is a FlowPlan (its ops grouped
// into stages, and its sinks) that run_flow_plan wires up and runs:
//
//   sources (a thread each) -> mux -> stage 1 -> ... -> stage n -> sink stage (every sink)
//
// Each stage is a thread (with its own CUDA stream on the GPU) joined to the next by a bounded
// queue of FrameBatches (frame_batch.h); the slot pool, sized from the stage count, bounds the
// batches in flight and holds every buffer the ops declared (buffer_plan.h). On the GPU a stage
// waits for the batch's ready event, runs its ops, records the ready event once, and its latency
// is the GPU time between two timing events around its ops, read when the batch reaches the sink.
//
// The runner owns what every flow shares: Ctrl-C draining (the sources stop, what is in flight goes
// through, every output is finalized), a failing source reported while the others carry on, the live
// progress line, the stats (per source, per stage p50/p99, queue depths) and the JSON report.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/output_file.h"
#include "core/status.h"
#include "io/image_files.h"
#include "pipeline/config.h"
#include "pipeline/op.h"
#include "pipeline/sinks.h"
#include "pipeline/stats.h"

namespace fovea::pipeline {

enum class DeviceChoice { kAuto, kCpu, kGpu };

struct SourceReport;
struct Flow;

// A running flow's sources, for a service that adds and removes them while it runs (fovea serve).
// Give it to the run in FlowOptions::control: the run binds it once its stages run and unbinds it
// before it tears them down; a call outside that window gets kUnavailable-like errors
// (kResourceExhausted "the flow is not running"). Thread-safe.
class FlowControl {
 public:
  // Starts `source` (its name set and unique: the caller's) in a free slot; returns the slot.
  Result<std::size_t> add_source(SourceConfig source);
  // Stops the source in `slot`; what it already decoded is still processed. False if none runs there.
  bool remove_source(std::size_t slot);
  // The figures so far, as the progress line and the report have them (running flows only).
  std::optional<PipelineStats> stats() const;
  // Per slot: the running (or last) source's report; nullopt for a slot never used.
  std::vector<std::optional<SourceReport>> source_reports() const;
  bool running() const;
  // The running flow is on the GPU (false when it is not running).
  bool on_gpu() const;

 private:
  friend class FlowBinding;
  mutable std::mutex mutex_;
  Flow* flow_ = nullptr;
};

struct FlowOptions {
  DeviceChoice device = DeviceChoice::kAuto;
  const std::atomic<bool>* interrupt = nullptr;  // set by Ctrl-C; polled
  std::FILE* progress = stderr;                  // the live progress line (when config.stats.progress)
  // Called from the calling thread about ten times a second with the figures so far (embedders,
  // tests); sources are read before stages, so a stage's count is never older than a source's.
  std::function<void(const PipelineStats&)> on_progress;
  // With a folder: the run (not the model's planning) is traced into it; `fovea report DIR`.
  std::string trace_dir;
  // A service (fovea serve): the flow runs until interrupted, with this many source slots (at
  // least config.sources' count), sources added and removed through `control`; without it the flow
  // ends when its sources have.
  FlowControl* control = nullptr;
  std::size_t source_slots = 0;
};

struct FlowResult {
  std::string device;  // what ran the flow, e.g. "cuda (NVIDIA H200), model m.onnx at 960x544 batch 4 fp16"
  PipelineStats stats;
  std::vector<SinkReport> outputs;  // per video output, when there is a video sink
  bool interrupted = false;
  std::size_t failed_outputs = 0;  // video outputs that failed
  Status report_status;            // writing stats.report, when one was asked for
  // Sources or outputs failed; with every frame of every other source processed.
  bool partial() const {
    return stats.failed_sources() > 0 || stats.failed_items() > 0 || failed_outputs > 0;
  }
};

// One stage: a thread running `ops` in order on every batch (on one stream on the GPU).
struct StageSpec {
  std::string name;
  std::vector<Op*> ops;
  // GPU: the short stages run at high priority so they slot in between the model's long kernels
  // instead of waiting for a whole inference to drain; the model's stage at normal priority.
  bool high_priority = true;
};

// A flow, built: what runs (ops in stages, sinks) and what it needs kept alive while it runs
// (models and other state the ops reference), destroyed after the stages have stopped.
struct FlowPlan {
  FlowShape shape;
  std::string description;  // for the log and the report: device, model, sizes
  std::vector<std::shared_ptr<void>> keep_alive;
  std::vector<std::unique_ptr<Op>> ops;
  std::vector<StageSpec> stages;
  std::vector<std::unique_ptr<Sink>> sinks;
  // An image flow's files (config.images, listed and sharded): the source reads them in order.
  io::ImageList images;
};

// Runs `plan` over config.sources with config.mux's batching until the sources end (or an
// interrupt). An error means the flow itself could not run or a stage failed (a device error, a
// sink that cannot write); a failing source is not one (FlowResult::partial). config.stats applies.
Result<FlowResult> run_flow_plan(FlowPlan& plan, const PipelineConfig& config, const FlowOptions& options);

// The flow's device: the GPU unless asked for the CPU or none is available; --device cuda without
// one is kUnsupported.
Result<bool> choose_gpu(DeviceChoice choice);

// Names for the sources in outputs and stats: the file stem of each uri, made unique with a suffix.
std::vector<std::string> source_names(const std::vector<SourceConfig>& sources);

}  // namespace fovea::pipeline
