#include "model_device.h"

#include <algorithm>
#include <chrono>
#include <random>

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/engine.h"
#include "trace/session.h"
#include "trace/tracer.h"
#endif

namespace fovea::app {

using ms = std::chrono::duration<double, std::milli>;

runtime::PlanOptions plan_options(const DevicePlanOptions& options) {
  return runtime::device_plan_options(options.precision, options.keep_float32);
}

Result<runtime::Precision> parse_precision(const std::string& text) {
  if (text == "fp32") return runtime::Precision::kFloat32;
  if (text == "fp16") return runtime::Precision::kFloat16;
  return make_error(StatusCode::kInvalidArgument, "--precision ", text, ": use fp32 or fp16");
}

#if defined(FOVEA_HAVE_CUDA)

namespace {

Result<std::unique_ptr<runtime::cuda::CudaExecutor>> make_executor(runtime::ExecutionPlan plan,
                                                                   const DevicePlanOptions& options) {
  if (cuda_device_count() == 0) {
    return make_error(StatusCode::kNotFound, "--device cuda: no CUDA device is available");
  }
  return runtime::cuda::CudaExecutor::create(std::move(plan), {.use_cuda_graph = options.use_cuda_graph});
}

Result<runtime::ExecutionPlan> plan_for(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                        const DevicePlanOptions& options) {
  if (options.engine_cache.empty()) return runtime::plan_graph(graph, shapes, plan_options(options));
  FOVEA_ASSIGN_OR_RETURN(std::string digest, runtime::file_digest(options.model_path));
  const runtime::EngineKey key{.model_digest = std::move(digest),
                               .input_shapes = shapes,
                               .options = plan_options(options),
                               .device = runtime::cuda::device_signature()};
  return runtime::plan_with_engine_cache(graph, options.model_path, options.engine_cache, key);
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// Uniform [-1, 1) for float inputs, small non-negative integers for index-like ones.
Status fill_random(const runtime::Tensor& device, std::uint32_t seed) {
  runtime::Tensor host = runtime::Tensor::allocate(device.dtype(), device.shape());
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    switch (host.dtype()) {
      case DataType::kFloat32: host.data<float>()[i] = uniform(random); break;
      case DataType::kFloat16: host.data<runtime::Half>()[i] = runtime::float_to_half(uniform(random)); break;
      case DataType::kFloat64: host.data<double>()[i] = uniform(random); break;
      case DataType::kInt64: host.data<std::int64_t>()[i] = static_cast<std::int64_t>(random() % 4); break;
      case DataType::kInt32: host.data<std::int32_t>()[i] = static_cast<std::int32_t>(random() % 4); break;
      default: break;  // zeros
    }
  }
  FOVEA_CUDA_TRY(
      cudaMemcpy(const_cast<void*>(device.raw()), host.raw(), host.bytes(), cudaMemcpyHostToDevice));
  return Status::ok();
}

}  // namespace

Result<DeviceRunResult> run_on_cuda(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                    const std::vector<runtime::Tensor>& inputs, int repeat,
                                    const DevicePlanOptions& options, const std::string& trace_dir) {
  DeviceRunResult result;
  const auto start = std::chrono::steady_clock::now();
  FOVEA_ASSIGN_OR_RETURN(runtime::ExecutionPlan plan, plan_for(graph, shapes, options));
  FOVEA_ASSIGN_OR_RETURN(auto executor, make_executor(std::move(plan), options));
  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  result.setup_ms = ms(std::chrono::steady_clock::now() - start).count();
  // Traced from here: the runs, not the plan-time algorithm search and graph capture.
  FOVEA_ASSIGN_OR_RETURN(std::optional<trace::Session> session,
                         trace::start_session_if_requested({.dir = trace_dir}));
  trace::StartEndRange pipeline_range("pipeline");
  for (int r = 0; r < repeat; ++r) {
    FOVEA_TRACE_RANGE("inference", r);
    const auto run_start = std::chrono::steady_clock::now();
    FOVEA_ASSIGN_OR_RETURN(result.outputs, executor->run_host(inputs, stream.get()));
    result.run_ms.push_back(ms(std::chrono::steady_clock::now() - run_start).count());
  }
  pipeline_range.end();
  return result;
}

Result<DeviceMemoryReport> cuda_memory(const runtime::ExecutionPlan& plan, const DevicePlanOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(auto executor, make_executor(plan, options));
  const runtime::cuda::DeviceMemoryUse use = executor->memory_use();
  return DeviceMemoryReport{use.weights, use.arena, use.io, use.workspace, use.total()};
}

Result<BenchPoint> bench_on_cuda(const runtime::Graph& graph, runtime::InputShapes shapes, std::int64_t batch,
                                 const BenchOptions& options) {
  BenchPoint point;
  point.batch = batch;
  for (auto& [name, shape] : shapes) {
    if (!shape.empty()) shape[0] = batch;
  }
  const auto start = std::chrono::steady_clock::now();
  FOVEA_ASSIGN_OR_RETURN(runtime::ExecutionPlan plan, plan_for(graph, shapes, options.plan));
  FOVEA_ASSIGN_OR_RETURN(auto executor, make_executor(std::move(plan), options.plan));
  point.plan_ms = ms(std::chrono::steady_clock::now() - start).count();
  point.device_bytes = executor->memory_use().total();
  point.cuda_graph = executor->uses_cuda_graph();
  for (int i = 0; i < executor->input_count(); ++i) {
    FOVEA_TRY(fill_random(executor->input(i), static_cast<std::uint32_t>(i + 1)));
  }
  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  FOVEA_ASSIGN_OR_RETURN(CudaEvent begin, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(true));
  for (int i = 0; i < options.warmup; ++i) FOVEA_TRY(executor->run(stream.get()));
  FOVEA_TRY(stream.synchronize());

  const int allocations = executor->device_allocations();
  std::size_t free_before = 0, free_after = 0, total = 0;
  FOVEA_CUDA_TRY(cudaMemGetInfo(&free_before, &total));
  // Latency: one run at a time, timed on the GPU.
  std::vector<double> latencies;
  for (int i = 0; i < options.iterations; ++i) {
    FOVEA_TRY(begin.record(stream.get()));
    FOVEA_TRY(executor->run(stream.get()));
    FOVEA_TRY(end.record(stream.get()));
    FOVEA_TRY(end.synchronize());
    FOVEA_ASSIGN_OR_RETURN(float elapsed, end.elapsed_ms_since(begin));
    latencies.push_back(elapsed);
  }
  // Throughput: runs back to back, as a pipeline keeps the GPU fed.
  FOVEA_TRY(begin.record(stream.get()));
  for (int i = 0; i < options.iterations; ++i) FOVEA_TRY(executor->run(stream.get()));
  FOVEA_TRY(end.record(stream.get()));
  FOVEA_TRY(end.synchronize());
  FOVEA_ASSIGN_OR_RETURN(float total_ms, end.elapsed_ms_since(begin));
  FOVEA_CUDA_TRY(cudaMemGetInfo(&free_after, &total));

  point.latency_p50_ms = percentile(latencies, 0.50);
  point.latency_p99_ms = percentile(latencies, 0.99);
  point.throughput = static_cast<double>(batch) * options.iterations / (total_ms / 1000.0);
  point.allocations_during_runs = executor->device_allocations() - allocations;
  point.free_memory_change = static_cast<long long>(free_after) - static_cast<long long>(free_before);
  return point;
}

#else

namespace {
Status no_cuda() {
  return make_error(StatusCode::kUnsupported, "--device cuda: this fovea was built without CUDA");
}
}  // namespace

Result<DeviceRunResult> run_on_cuda(const runtime::Graph&, const runtime::InputShapes&,
                                    const std::vector<runtime::Tensor>&, int, const DevicePlanOptions&,
                                    const std::string&) {
  return no_cuda();
}
Result<DeviceMemoryReport> cuda_memory(const runtime::ExecutionPlan&, const DevicePlanOptions&) {
  return no_cuda();
}
Result<BenchPoint> bench_on_cuda(const runtime::Graph&, runtime::InputShapes, std::int64_t,
                                 const BenchOptions&) {
  return no_cuda();
}

#endif

}  // namespace fovea::app
