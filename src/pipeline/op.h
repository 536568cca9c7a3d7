// Ops: the units of work a flow chains. Each declares its buffers once (buffer_plan.h) and then
// runs on every batch, on the GPU (enqueue only, on the stage's stream) or on the CPU (the
// reference implementations of the same kernels, synchronously).
//
// A stage (flow_runner.h) runs a list of ops on one thread. On the GPU it waits for the batch's ready
// event, opens the trace range, records timing events around the ops and records the ready event
// after them, once for all its ops; an op only enqueues its own work. Ops that read FrameResults
// (OSD, tracker, metadata) say so with reads_results(): the stage resolves the batch first
// (FrameBatch::resolve), which waits for the GPU work that produces them. Host-only ops (tracker,
// gate) need no stream: a stage of host-only ops does no event work at all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/cuda_stream.h"
#include "core/status.h"
#include "pipeline/buffer_plan.h"
#include "pipeline/frame_batch.h"
#include "pipeline/stats.h"

namespace fovea::pipeline {

// What every op of a flow may rely on, fixed when the flow is built.
struct FlowShape {
  bool gpu = false;
  int device = 0;
  int batch_size = 1;   // the mux's: frames per batch, at most
  int frame_width = 0;  // the mux size: every frame of every batch
  int frame_height = 0;
  std::vector<std::string> source_names;
};

class Op {
 public:
  virtual ~Op() = default;
  // For the trace and errors: "preprocess", "inference detector", ...
  virtual std::string name() const = 0;
  // Called once, before the slots are allocated.
  virtual Status declare(BufferPlan& plan) = 0;
  // GPU path: enqueues the op's work for `batch` on `stream` and returns; the stage has made the
  // stream wait for the batch's earlier work.
  virtual Status run(FrameBatch& batch, cudaStream_t stream) = 0;
  // CPU path: computes synchronously (the reference implementations).
  virtual Status run_cpu(FrameBatch& batch) = 0;
  // The op reads FrameResults: its stage resolves the batch before running it.
  virtual bool reads_results() const { return false; }
  // The op does host work only (run and run_cpu are the same); it needs no stream.
  virtual bool host_only() const { return false; }
  // What the op counted so far, for the run's summary and report under its stage: the work that
  // explains the stage's cost (objects classified and labels reused, tracker resets). None by
  // default. Read while the stages run (the progress line, a service's stats): atomic counters.
  virtual std::vector<StageCounter> counters() const { return {}; }
};

// A host-only op: one function for both paths.
class HostOp : public Op {
 public:
  Status run(FrameBatch& batch, cudaStream_t) final { return run_host(batch); }
  Status run_cpu(FrameBatch& batch) final { return run_host(batch); }
  bool reads_results() const override { return true; }
  bool host_only() const final { return true; }
  virtual Status run_host(FrameBatch& batch) = 0;
};

}  // namespace fovea::pipeline
