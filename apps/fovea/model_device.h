// The model commands' CUDA side (model_device.cpp): planning for a precision, creating the CUDA
// executor and timing it. Without CUDA these return a clear "built without CUDA" error.
#pragma once

#include <string>
#include <vector>

#include "runtime/planner.h"

namespace fovea::app {

struct DevicePlanOptions {
  runtime::Precision precision = runtime::Precision::kFloat32;
  std::vector<std::string> keep_float32;
  bool use_cuda_graph = true;
  // With a folder: plans are cached there as engines (runtime/engine.h), keyed by this model file.
  std::string engine_cache;
  std::string model_path;
};

Result<runtime::Precision> parse_precision(const std::string& text);

// How the CUDA executor's plans are made: the precision, and NHWC convolutions for float16.
runtime::PlanOptions plan_options(const DevicePlanOptions& options);

struct DeviceRunResult {
  std::vector<runtime::Tensor> outputs;
  std::vector<double> run_ms;  // wall time of each run_host (copies in and out included)
  double setup_ms = 0;         // executor creation: uploads, algorithm search, graph capture
};

// Plans `graph` for `shapes`, creates the CUDA executor and runs `inputs` `repeat` times; with a
// `trace_dir`, the runs are traced into it (fovea report).
Result<DeviceRunResult> run_on_cuda(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                    const std::vector<runtime::Tensor>& inputs, int repeat,
                                    const DevicePlanOptions& options, const std::string& trace_dir = {});

struct DeviceMemoryReport {
  std::size_t weights = 0, arena = 0, io = 0, workspace = 0, total = 0;
};
Result<DeviceMemoryReport> cuda_memory(const runtime::ExecutionPlan& plan, const DevicePlanOptions& options);

struct BenchPoint {
  std::int64_t batch = 0;
  double plan_ms = 0;
  double latency_p50_ms = 0, latency_p99_ms = 0;
  double throughput = 0;  // items (batch entries) per second, runs back to back
  std::size_t device_bytes = 0;
  int allocations_during_runs = 0;   // cudaMalloc calls by the executor while it ran
  long long free_memory_change = 0;  // cudaMemGetInfo's free bytes, after minus before the runs
  bool cuda_graph = false;
};

struct BenchOptions {
  DevicePlanOptions plan;
  int warmup = 20;
  int iterations = 200;
};

// Plans `graph` for `shapes` with dim 0 of every input set to `batch`, fills the inputs with
// random data and times the executor on its own stream.
Result<BenchPoint> bench_on_cuda(const runtime::Graph& graph, runtime::InputShapes shapes, std::int64_t batch,
                                 const BenchOptions& options);

}  // namespace fovea::app
