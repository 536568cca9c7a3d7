// The model commands' work on an InferenceSession (runtime/session.h): running a model on host
// tensors on the CPU or CUDA, what a CUDA session holds in device memory, and timing CUDA sessions
// over batch sizes. A CUDA request that cannot be served (no GPU, or a build without CUDA) is the
// session's error, which says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace fovea::app {

struct RunResult {
  std::vector<runtime::Tensor> outputs;
  std::vector<double> run_ms;   // wall time of each run_host (CUDA: copies in and out included)
  double setup_ms = 0;          // the session: planning or the engine, uploads, algorithm search, capture
  std::size_t arena_bytes = 0;  // the plan's intermediates
};

// Creates a session for `graph` at `shapes` and runs `inputs` `repeat` times; with a `trace_dir`,
// the runs are traced into it (fovea report).
Result<RunResult> run_model_session(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                    const std::vector<runtime::Tensor>& inputs, int repeat,
                                    const runtime::SessionOptions& options,
                                    const std::string& trace_dir = {});

// What a CUDA session for `graph` at `shapes` holds on the device.
Result<runtime::SessionMemory> cuda_memory(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                           const runtime::SessionOptions& options);

struct BenchPoint {
  std::int64_t batch = 0;
  double plan_ms = 0;
  double latency_p50_ms = 0, latency_p99_ms = 0;
  double throughput = 0;  // items (batch entries) per second, runs back to back
  int warmup_runs = 0;    // untimed runs made before timing
  int timed_runs = 0;     // back-to-back runs the throughput is measured over
  std::size_t device_bytes = 0;
  int allocations_during_runs = 0;   // cudaMalloc calls by the executor while it ran
  long long free_memory_change = 0;  // cudaMemGetInfo's free bytes, after minus before the runs
  bool cuda_graph = false;
};

struct BenchOptions {
  runtime::SessionOptions session;  // a CUDA session's
  int warmup = 20;
  int iterations = 200;
  // The warm-up and the back-to-back runs each last at least this long. A GPU at its power limit
  // lowers its clock within a second or so of full load (the H200 at 700 W on FCN-ResNet101): a
  // fixed run count times a small batch's short loop before that and a large batch's long loop
  // after it, and reads the difference as the batch's (docs/perf.md, issue 25).
  double min_seconds = 1.0;
};

// Creates a CUDA session for `graph` at `shapes` with dim 0 of every input set to `batch`, fills
// the inputs with random data and times it on its own stream.
Result<BenchPoint> bench_on_cuda(const runtime::Graph& graph, runtime::InputShapes shapes, std::int64_t batch,
                                 const BenchOptions& options);

}  // namespace fovea::app
