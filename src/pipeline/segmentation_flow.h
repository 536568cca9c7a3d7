// The segmentation flow, end to end: sources (demux + decode, a thread each) -> stream mux ->
// preprocess -> inference -> postprocess -> composite -> sinks, each stage a thread (with its own
// CUDA stream on the GPU), joined by bounded queues of batches (segmentation_ops.h has the work).
//
// It runs on the GPU when this build has CUDA and a GPU is present, on the CPU otherwise, and says
// which. Sources end on their own; a failing source is reported and the others carry on; an
// interrupt (Ctrl-C) stops the sources, drains what is in flight and finalizes every output.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/config.h"
#include "pipeline/sinks.h"
#include "pipeline/stats.h"

namespace fovea::pipeline {

enum class DeviceChoice { kAuto, kCpu, kGpu };

struct FlowOptions {
  DeviceChoice device = DeviceChoice::kAuto;
  const std::atomic<bool>* interrupt = nullptr;  // set by Ctrl-C; polled
  std::FILE* progress = stderr;                  // the live progress line (when config.stats.progress)
  // Called from the calling thread about ten times a second with the figures so far (embedders,
  // tests); sources are read before stages, so a stage's count is never older than a source's.
  std::function<void(const PipelineStats&)> on_progress;
  // With a folder: the run (not the model's planning) is traced into it; `fovea report DIR`.
  std::string trace_dir;
};

struct FlowResult {
  std::string device;  // what ran the flow, e.g. "cuda (NVIDIA H200), model m.onnx at 960x544 batch 4 fp16"
  PipelineStats stats;
  std::vector<SinkReport> outputs;  // per source, when there is a video sink
  bool interrupted = false;
  std::size_t failed_outputs = 0;  // sources whose video output failed
  Status report_status;            // writing stats.report, when one was asked for
  // Sources or outputs failed; with every frame of every other source processed.
  bool partial() const { return stats.failed_sources() > 0 || failed_outputs > 0; }
};

// Runs the flow to the end of its sources (or an interrupt). An error means the flow itself could
// not run or a stage failed (the model, a device error); a failing source is not one (see
// FlowResult::partial). The frames take the configuration's mux size, or the sources' own size when
// it leaves that out (with_frame_size, config.h). Before anything runs, every output is checked
// (core/output_file.h): one that is an input (a source, the model) or cannot be created is
// kInvalidArgument.
Result<FlowResult> run_segmentation_flow(const PipelineConfig& config, const FlowOptions& options = {});

// Names for the sources in outputs and stats: the file stem of each uri, made unique with a suffix.
std::vector<std::string> source_names(const std::vector<SourceConfig>& sources);

}  // namespace fovea::pipeline
