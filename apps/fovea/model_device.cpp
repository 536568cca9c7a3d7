#include "model_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "trace/session.h"
#include "trace/tracer.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

namespace fovea::app {

using ms = std::chrono::duration<double, std::milli>;

Result<RunResult> run_model_session(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                    const std::vector<runtime::Tensor>& inputs, int repeat,
                                    const runtime::SessionOptions& options, const std::string& trace_dir) {
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  FOVEA_ASSIGN_OR_RETURN(auto session, runtime::InferenceSession::create(graph, shapes, options));
  cudaStream_t stream = nullptr;  // the CPU's
#if defined(FOVEA_HAVE_CUDA)
  CudaStream cuda_stream;
  if (session->device() == runtime::Device::kCuda) {
    FOVEA_ASSIGN_OR_RETURN(cuda_stream, CudaStream::create());
    stream = cuda_stream.get();
  }
#endif
  result.setup_ms = ms(std::chrono::steady_clock::now() - start).count();
  result.arena_bytes = session->plan().memory.arena_bytes;
  // Traced from here: the runs, not the plan-time algorithm search and graph capture.
  FOVEA_ASSIGN_OR_RETURN(std::optional<trace::Session> trace_session,
                         trace::start_session_if_requested({.dir = trace_dir}));
  trace::StartEndRange pipeline_range("pipeline");
  for (int r = 0; r < repeat; ++r) {
    FOVEA_TRACE_RANGE("inference", r);
    const auto run_start = std::chrono::steady_clock::now();
    FOVEA_ASSIGN_OR_RETURN(result.outputs, session->run_host(stream, inputs));
    result.run_ms.push_back(ms(std::chrono::steady_clock::now() - run_start).count());
  }
  pipeline_range.end();
  return result;
}

Result<runtime::SessionMemory> cuda_memory(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                                           const runtime::SessionOptions& options) {
  // Planned afresh: model info reports what a plan holds; it neither reads nor writes engines.
  runtime::SessionOptions planned = options;
  planned.engine_cache.clear();
  FOVEA_ASSIGN_OR_RETURN(auto session, runtime::InferenceSession::create(graph, shapes, planned));
  return session->device_memory();
}

#if defined(FOVEA_HAVE_CUDA)

namespace {

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

// Runs the session back to back in rounds of `runs` until `seconds` have passed since the first
// (the stream synchronized after each round); returns how many ran.
Result<int> run_for_at_least(runtime::InferenceSession& session, cudaStream_t stream, int runs,
                             double seconds) {
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  do {
    for (int i = 0; i < runs; ++i) FOVEA_TRY(session.run(stream));
    FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
    done += runs;
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds);
  return done;
}

// Back-to-back runs that take at least `seconds` at `run_ms` each, and at least `iterations`.
int timed_run_count(int iterations, double seconds, double run_ms) {
  constexpr double kMostRuns = 1e6;
  if (!(run_ms > 0)) return iterations;
  return std::max(iterations, static_cast<int>(std::min(kMostRuns, std::ceil(seconds * 1000.0 / run_ms))));
}

}  // namespace

Result<BenchPoint> bench_on_cuda(const runtime::Graph& graph, runtime::InputShapes shapes, std::int64_t batch,
                                 const BenchOptions& options) {
  FOVEA_CHECK(options.session.device == runtime::Device::kCuda);
  BenchPoint point;
  point.batch = batch;
  for (auto& [name, shape] : shapes) {
    if (!shape.empty()) shape[0] = batch;
  }
  const auto start = std::chrono::steady_clock::now();
  FOVEA_ASSIGN_OR_RETURN(auto session, runtime::InferenceSession::create(graph, shapes, options.session));
  point.plan_ms = ms(std::chrono::steady_clock::now() - start).count();
  point.device_bytes = session->device_memory().total();
  point.cuda_graph = session->uses_cuda_graph();
  for (int i = 0; i < session->input_count(); ++i) {
    FOVEA_TRY(fill_random(session->input(i), static_cast<std::uint32_t>(i + 1)));
  }
  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  FOVEA_ASSIGN_OR_RETURN(CudaEvent begin, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(true));
  if (options.warmup > 0 || options.min_seconds > 0) {  // --warmup 0 --seconds 0: none at all
    FOVEA_ASSIGN_OR_RETURN(
        point.warmup_runs,
        run_for_at_least(*session, stream.get(), std::max(1, options.warmup), options.min_seconds));
  }

  const int allocations = session->device_allocations();
  std::size_t free_before = 0, free_after = 0, total = 0;
  FOVEA_CUDA_TRY(cudaMemGetInfo(&free_before, &total));
  // Latency: one run at a time, timed on the GPU.
  std::vector<double> latencies;
  for (int i = 0; i < options.iterations; ++i) {
    FOVEA_TRY(begin.record(stream.get()));
    FOVEA_TRY(session->run(stream.get()));
    FOVEA_TRY(end.record(stream.get()));
    FOVEA_TRY(end.synchronize());
    FOVEA_ASSIGN_OR_RETURN(float elapsed, end.elapsed_ms_since(begin));
    latencies.push_back(elapsed);
  }
  point.latency_p50_ms = percentile(latencies, 0.50);
  point.latency_p99_ms = percentile(latencies, 0.99);
  // Throughput: runs back to back, as a pipeline keeps the GPU fed.
  point.timed_runs = timed_run_count(options.iterations, options.min_seconds, point.latency_p50_ms);
  FOVEA_TRY(begin.record(stream.get()));
  for (int i = 0; i < point.timed_runs; ++i) FOVEA_TRY(session->run(stream.get()));
  FOVEA_TRY(end.record(stream.get()));
  FOVEA_TRY(end.synchronize());
  FOVEA_ASSIGN_OR_RETURN(float total_ms, end.elapsed_ms_since(begin));
  FOVEA_CUDA_TRY(cudaMemGetInfo(&free_after, &total));

  point.throughput = static_cast<double>(batch) * point.timed_runs / (total_ms / 1000.0);
  point.allocations_during_runs = session->device_allocations() - allocations;
  point.free_memory_change = static_cast<long long>(free_after) - static_cast<long long>(free_before);
  return point;
}

#else

// Without CUDA the session refuses the CUDA device, and its error says why.
Result<BenchPoint> bench_on_cuda(const runtime::Graph& graph, runtime::InputShapes shapes, std::int64_t,
                                 const BenchOptions& options) {
  FOVEA_CHECK(options.session.device == runtime::Device::kCuda);
  return runtime::InferenceSession::create(graph, shapes, options.session).status();
}

#endif

}  // namespace fovea::app
