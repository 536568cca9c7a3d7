// InferenceSession: one model loaded, planned for its input shapes (or taken from the engine cache)
// and ready on the CPU or the CUDA executor, behind one API. A flow holds one session per model (a
// detector at batch 16, a classifier at batch 32); each owns its plan, executor and buffers.
//
// On CUDA, everything is decided when the session is created (weights uploaded, cuDNN's search,
// the CUDA graph captured); a run then only enqueues on the caller's stream, reading input(i) and
// writing output(i), device tensors at addresses fixed for the session's life:
//
//   const SessionOptions options{.device = Device::kCuda, .precision = Precision::kFloat16};
//   FOVEA_ASSIGN_OR_RETURN(auto session,
//                          InferenceSession::open("ssd.onnx", {{"images", {16, 3, 300, 300}}}, options));
//   FOVEA_TRY(session->copy_input(stream, 0, d_batch, frames));  // or write input(0) in a kernel
//   FOVEA_TRY(session->run(stream));                             // no host synchronization
//   ... output(i) holds the result once `stream` reaches this point
//
// The inputs and outputs are the session's single set, so the caller orders runs: on one stream
// they are; across streams, a run may not begin before the previous one's outputs are read. The CPU
// executor (the float32 reference) has no device tensors: run_host() takes host tensors (borrowed
// ones are read in place) and returns the outputs; CUDA sessions take it too, for tools and tests,
// with copies in and out and a wait. One session runs one batch at a time, from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cuda_stream.h"
#include "runtime/planner.h"

namespace fovea::runtime {

namespace cuda {
class CudaExecutor;
}
class CpuExecutor;

enum class Device { kCpu, kCuda };
std::string_view device_name(Device device);  // "cpu", "cuda"
// "cpu" or "cuda"; anything else is an error naming the text and the choices.
Result<Device> parse_device(std::string_view text);
// "fp32" or "fp16"; anything else is an error naming the text and the choices.
Result<Precision> parse_precision(std::string_view text);
// int8 on a GPU needs INT8 tensor cores: compute capability 7.2 (Xavier) and 7.5 (Turing) on;
// Volta's (7.0) take float16 only, older GPUs have none. kUnsupported naming the GPU otherwise.
Status check_int8_tensor_cores(std::string_view gpu, int major, int minor);

struct SessionOptions {
  Device device = Device::kCpu;
  // What the plan stores. CUDA plans for float16 also keep convolution chains in NHWC
  // (device_plan_options); the CPU executor runs a plan as it is, and fovea's CPU paths ask for fp32.
  Precision precision = Precision::kFloat32;
  std::vector<std::string> keep_float32;  // kFloat16: node names or op types kept in float32
  // kFloat16: the graph's float inputs and outputs are float16 themselves (PlanOptions says why).
  bool float16_interface = false;
  // kInt8: the calibration cache (quant/calibration_table.h) made for this model; required. A cache
  // made for another model is refused.
  std::filesystem::path calibration;
  std::vector<std::string> keep_unquantized;  // kInt8: node names or op types left in float
  bool int8_residuals = true;                 // kInt8 on CUDA: PlanOptions::int8_residuals
  // CUDA: off launches node by node (debugging, and measuring what the graph saves).
  bool use_cuda_graph = true;
  // CUDA: a model the CUDA executor cannot plan whole (a node whose output's size the data decides
  // and that later nodes read, a run-time If or Loop: torchvision's detectors with their
  // postprocess) runs its static part on CUDA and the rest, from the first such node on, on the
  // CPU executor (graph_split.h); such a session runs through run_host() only. Off: the model is
  // refused, naming that node.
  bool cpu_tail = false;
  // A folder: the plan is an engine kept there, keyed by the model file's bytes, the shapes, the plan
  // options and the device (engine.h); a stale one is planned again and the log says why. Empty:
  // planned every time.
  std::filesystem::path engine_cache;
};

// A graph input or output as the session runs it.
struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  // The planned shape; inputs always have one. Absent for an output whose rows the data decides
  // (NonMaxSuppression's selection) on the CPU, where each run returns its true shape; on CUDA such
  // an output has the most rows it can hold, and output_rows_device() says how many a run filled.
  std::optional<Shape> shape;
  bool rows_vary = false;  // the data decides the first dimension
};

// Device memory a session holds; all zero for a CPU session.
struct SessionMemory {
  std::size_t weights = 0;    // constants, uploaded once
  std::size_t arena = 0;      // intermediates, placed by liveness
  std::size_t io = 0;         // graph inputs and outputs
  std::size_t workspace = 0;  // scratch shared by the nodes (cuDNN, cuBLASLt, reductions)
  std::size_t total() const { return weights + arena + io + workspace; }
};

// The plan a session with `options` would run (its passes, precision and layouts), made without an
// executor or an engine cache: no device needed. `fovea model info --graph` prints it.
Result<ExecutionPlan> plan_session(const Graph& graph, const InputShapes& shapes,
                                   const SessionOptions& options);

class InferenceSession {
 public:
  // Loads `model` (onnx_loader.h) and creates the session for it.
  static Result<std::unique_ptr<InferenceSession>> open(const std::filesystem::path& model,
                                                        const InputShapes& shapes,
                                                        const SessionOptions& options = {});
  // Plans `graph` for `shapes` (one entry per graph input, whole shapes) and creates the executor on
  // the calling thread's current CUDA device. graph.model_path names the model in errors and, with
  // an engine cache, is the file whose bytes key the engine. Errors name the model and the input,
  // node or device at fault; a CUDA session without a GPU, or in a build without CUDA, says so.
  static Result<std::unique_ptr<InferenceSession>> create(const Graph& graph, const InputShapes& shapes,
                                                          const SessionOptions& options = {});
  ~InferenceSession();
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  Device device() const { return options_.device; }
  const SessionOptions& options() const { return options_; }
  const std::string& model_path() const { return model_path_; }
  // "cuda (NVIDIA H200)" or "cpu", for logs.
  const std::string& device_description() const { return device_description_; }
  const ExecutionPlan& plan() const;

  int input_count() const { return static_cast<int>(input_specs_.size()); }
  int output_count() const { return static_cast<int>(output_specs_.size()); }
  // In the order of the plan's graph, which is the model's.
  const TensorSpec& input_spec(int i) const { return input_specs_.at(static_cast<std::size_t>(i)); }
  const TensorSpec& output_spec(int i) const { return output_specs_.at(static_cast<std::size_t>(i)); }
  // By name; an unknown name is an error naming the model and listing its inputs (outputs).
  Result<int> input_index(std::string_view name) const;
  Result<int> output_index(std::string_view name) const;

#if defined(FOVEA_HAVE_CUDA)
  // CUDA sessions only (calling them on a CPU session is a bug). Device tensors at fixed addresses.
  const Tensor& input(int i) const;
  const Tensor& output(int i) const;
  // The device int64 holding how many rows of output(i) the last run filled, written on its
  // stream; nullptr unless output_spec(i).rows_vary.
  const std::int64_t* output_rows_device(int i) const;
  // Enqueues a copy of the first `items` entries (dim 0) of input i from `data` (device or host
  // memory, laid out as input(i)) into input(i); a partial batch leaves the rest as it was.
  Status copy_input(cudaStream_t stream, int i, const void* data, std::int64_t items);
  // Enqueues one run on `stream` (never the legacy default stream): reads input(), writes output().
  // A session with a CPU tail refuses: it runs through run_host().
  Status run(cudaStream_t stream);
#endif
  // CUDA sessions with SessionOptions::cpu_tail: the nodes that run on the CPU, the first named.
  int cpu_tail_nodes() const;
  std::string first_cpu_tail_node() const;

  // Host tensors in (in input order, with the planned dtypes and shapes), host tensors out (data-
  // dependent outputs with their true shape). The CPU computes here and ignores `stream` (pass
  // nullptr); CUDA copies in, runs and copies out on `stream`, then waits for it.
  Result<std::vector<Tensor>> run_host(cudaStream_t stream, const std::vector<Tensor>& inputs);

  SessionMemory device_memory() const;
  // cudaMalloc calls the session's executor has made; all happen in create(), so the count stays put
  // while it runs. 0 on the CPU.
  int device_allocations() const;
  bool uses_cuda_graph() const;

 private:
  struct CpuTail;  // the CPU executor after the CUDA part, and where its inputs and outputs go

  explicit InferenceSession(const SessionOptions& options, std::string model_path);
  Status start(ExecutionPlan plan);
#if defined(FOVEA_HAVE_CUDA)
  Status start_cuda(ExecutionPlan plan);
  Result<std::vector<Tensor>> run_with_cpu_tail(cudaStream_t stream, const std::vector<Tensor>& inputs);
#endif
#if defined(FOVEA_HAVE_CUDA)
  const cuda::CudaExecutor& cuda_executor() const;
#endif

  SessionOptions options_;
  std::string model_path_;
  std::string device_description_;
  std::vector<TensorSpec> input_specs_;
  std::vector<TensorSpec> output_specs_;
  std::unique_ptr<CpuExecutor> cpu_;
  std::unique_ptr<CpuTail> cpu_tail_;
#if defined(FOVEA_HAVE_CUDA)
  std::unique_ptr<cuda::CudaExecutor> cuda_;
#endif
};

}  // namespace fovea::runtime
