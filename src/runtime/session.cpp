#include "runtime/session.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/log.h"
#include "runtime/cpu_executor.h"
#include "runtime/engine.h"
#include "runtime/graph_split.h"
#include "runtime/onnx_loader.h"
#include "runtime/quant/calibration_table.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cuda_executor.h"
#endif

namespace fovea::runtime {

namespace {

PlanOptions plan_options_for(const SessionOptions& options) {
  PlanOptions plan = options.device == Device::kCuda
                         ? device_plan_options(options.precision, options.keep_float32)
                         : PlanOptions{.precision = options.precision, .keep_float32 = options.keep_float32};
  plan.float16_interface = options.float16_interface;
  plan.keep_unquantized = options.keep_unquantized;
  plan.int8_residuals = options.int8_residuals;
  return plan;
}

// kInt8: the calibration cache made for the model's file (a cache for another model is refused).
Status load_calibration(const Graph& graph, const SessionOptions& options, PlanOptions& plan) {
  if (options.precision != Precision::kInt8) return Status::ok();
  if (options.calibration.empty()) {
    return make_error(StatusCode::kInvalidArgument, graph.where(),
                      "precision int8 needs a calibration cache (fovea model calibrate makes one)");
  }
  if (graph.model_path.empty()) {
    return make_error(StatusCode::kInvalidArgument, "precision int8: calibration ",
                      options.calibration.string(),
                      " is tied to a model file, and this graph came from none");
  }
  FOVEA_ASSIGN_OR_RETURN(quant::CalibrationTable table,
                         quant::read_calibration_for(options.calibration, graph.model_path));
  plan.calibration = std::make_shared<const quant::CalibrationTable>(std::move(table));
  return Status::ok();
}

// Every shape names a graph input: a misspelt name is reported as such, not only as the input it
// leaves without a shape (plan_graph names those).
Status check_shapes(const Graph& graph, const InputShapes& shapes) {
  std::vector<std::string> names;
  for (ValueId id : graph.inputs) names.push_back(graph.value(id).name);
  for (const auto& [name, shape] : shapes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return make_error(
          StatusCode::kInvalidArgument, graph.where(), "'", name,
          fmt::format("' is not an input of the model (its inputs: {})", fmt::join(names, ", ")));
    }
  }
  return Status::ok();
}

std::string device_signature_for(Device device) {
#if defined(FOVEA_HAVE_CUDA)
  if (device == Device::kCuda) return cuda::device_signature();
#endif
  static_cast<void>(device);
  return "cpu";
}

Result<ExecutionPlan> plan_for(const Graph& graph, const InputShapes& shapes, const SessionOptions& options) {
  if (options.engine_cache.empty()) return plan_session(graph, shapes, options);
  PlanOptions plan_options = plan_options_for(options);
  FOVEA_TRY(load_calibration(graph, options, plan_options));
  // The engine is keyed by the model file's bytes: a graph that did not come from a file cannot be
  // told apart from another one.
  if (graph.model_path.empty() || !std::filesystem::is_regular_file(graph.model_path)) {
    return make_error(StatusCode::kInvalidArgument, graph.where(), "engine cache ",
                      options.engine_cache.string(), ": engines are keyed by the model file, and '",
                      graph.model_path, "' is not a readable file");
  }
  FOVEA_ASSIGN_OR_RETURN(std::string digest, file_digest(graph.model_path));
  std::string calibration_digest;
  if (plan_options.calibration) {
    FOVEA_ASSIGN_OR_RETURN(calibration_digest, file_digest(options.calibration));
  }
  const EngineKey key{.model_digest = std::move(digest),
                      .input_shapes = shapes,
                      .options = plan_options,
                      .calibration_digest = std::move(calibration_digest),
                      .device = device_signature_for(options.device)};
  return plan_with_engine_cache(graph, graph.model_path, options.engine_cache, key);
}

Result<int> index_of(const std::vector<TensorSpec>& specs, std::string_view name, const std::string& model,
                     const char* what) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return static_cast<int>(i);
    names.push_back(specs[i].name);
  }
  return make_error(StatusCode::kInvalidArgument, model, ": no ", what, " '", std::string(name),
                    fmt::format("' (its {}s: {})", what, fmt::join(names, ", ")));
}

TensorSpec spec_of(const Value& value) {
  TensorSpec spec{.name = value.name, .dtype = value.type.dtype};
  if (value.type.dims && all_known(*value.type.dims)) {
    spec.shape = shape_of(*value.type.dims);
  } else {
    spec.rows_vary = true;
  }
  return spec;
}

#if defined(FOVEA_HAVE_CUDA)
Result<cudaDeviceProp> current_device_properties() {
  int device = 0;
  cudaDeviceProp properties{};
  FOVEA_CUDA_TRY(cudaGetDevice(&device));
  FOVEA_CUDA_TRY(cudaGetDeviceProperties(&properties, device));
  return properties;
}

std::string cuda_device_description() {
  const Result<cudaDeviceProp> properties = current_device_properties();
  return properties.is_ok() ? std::string("cuda (") + properties->name + ")" : "cuda";
}
#endif

}  // namespace

Result<ExecutionPlan> plan_session(const Graph& graph, const InputShapes& shapes,
                                   const SessionOptions& options) {
  PlanOptions plan_options = plan_options_for(options);
  FOVEA_TRY(load_calibration(graph, options, plan_options));
  return plan_graph(graph, shapes, plan_options);
}

std::string_view device_name(Device device) {
  return device == Device::kCuda ? "cuda" : "cpu";
}

Result<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::kCpu;
  if (text == "cuda") return Device::kCuda;
  return make_error(StatusCode::kInvalidArgument, "device '", std::string(text), "': use cpu or cuda");
}

Result<Precision> parse_precision(std::string_view text) {
  for (Precision precision : {Precision::kFloat32, Precision::kFloat16, Precision::kInt8}) {
    if (text == precision_name(precision)) return precision;
  }
  return make_error(StatusCode::kInvalidArgument, "precision '", std::string(text),
                    "': use fp32, fp16 or int8");
}

Status check_int8_tensor_cores(std::string_view gpu, int major, int minor) {
  if (major > 7 || (major == 7 && minor >= 2)) return Status::ok();
  return make_error(
      StatusCode::kUnsupported,
      fmt::format("precision int8 needs a GPU with INT8 tensor cores (compute capability 7.2 or "
                  "newer); {} is {}.{}: use fp16",
                  gpu, major, minor));
}

InferenceSession::InferenceSession(const SessionOptions& options, std::string model_path)
    : options_(options), model_path_(std::move(model_path)) {}
InferenceSession::~InferenceSession() = default;

Result<std::unique_ptr<InferenceSession>> InferenceSession::open(const std::filesystem::path& model,
                                                                 const InputShapes& shapes,
                                                                 const SessionOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(Model loaded, load_onnx(model));
  return create(loaded.graph, shapes, options);
}

Result<std::unique_ptr<InferenceSession>> InferenceSession::create(const Graph& graph,
                                                                   const InputShapes& shapes,
                                                                   const SessionOptions& options) {
  // The device first: a model is not planned (nor an engine written) for a GPU that is not there.
  if (options.device == Device::kCuda) {
#if defined(FOVEA_HAVE_CUDA)
    if (cuda_device_count() == 0) {
      return make_error(StatusCode::kNotFound, graph.where(), "device cuda: no CUDA device is available");
    }
#else
    return make_error(StatusCode::kUnsupported, graph.where(),
                      "device cuda: this fovea was built without CUDA");
#endif
  }
  FOVEA_TRY(check_shapes(graph, shapes));
  if (options.precision == Precision::kInt8 && options.device == Device::kCuda) {
#if defined(FOVEA_HAVE_CUDA)
    FOVEA_ASSIGN_OR_RETURN(const cudaDeviceProp properties, current_device_properties());
    const Status tensor_cores = check_int8_tensor_cores(properties.name, properties.major, properties.minor);
    if (!tensor_cores.is_ok()) return tensor_cores.with_context(graph.where() + "device cuda");
#endif
  }
  FOVEA_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_for(graph, shapes, options));
  std::unique_ptr<InferenceSession> session(new InferenceSession(options, graph.model_path));
  FOVEA_TRY(session->start(std::move(plan)));
  return session;
}

// Creates the executor for `plan` and records what the caller sees of it.
Status InferenceSession::start(ExecutionPlan plan) {
  for (ValueId id : plan.graph.inputs) input_specs_.push_back(spec_of(plan.graph.value(id)));
  for (ValueId id : plan.graph.outputs) output_specs_.push_back(spec_of(plan.graph.value(id)));
  if (options_.device == Device::kCpu) {
    device_description_ = "cpu";
    cpu_ = std::make_unique<CpuExecutor>(std::move(plan));
    return Status::ok();
  }
#if defined(FOVEA_HAVE_CUDA)
  device_description_ = cuda_device_description();
  return start_cuda(std::move(plan));
#else
  return Status::ok();
#endif
}

// Where a value the CPU tail reads, or a session output, comes from: the CUDA part's outputs, the
// session's inputs (tail inputs only) or the tail's outputs (session outputs only).
struct TensorSource {
  enum class From { kCudaPart, kSessionInput, kCpuTail } from = From::kCudaPart;
  int index = 0;
};

struct InferenceSession::CpuTail {
  ExecutionPlan whole;  // the plan as planned, for plan()
  std::unique_ptr<CpuExecutor> executor;
  std::vector<TensorSource> inputs;   // per tail input
  std::vector<TensorSource> outputs;  // per session output
  std::string first_node;
};

int InferenceSession::cpu_tail_nodes() const {
  return cpu_tail_ ? static_cast<int>(cpu_tail_->executor->plan().graph.nodes.size()) : 0;
}

std::string InferenceSession::first_cpu_tail_node() const {
  return cpu_tail_ ? cpu_tail_->first_node : std::string();
}

#if defined(FOVEA_HAVE_CUDA)
namespace {

// The index of the value named `name` in `ids` of `graph`, or -1.
int index_named(const Graph& graph, const std::vector<ValueId>& ids, const std::string& name) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (graph.value(ids[i]).name == name) return static_cast<int>(i);
  }
  return -1;
}

ExecutionPlan plan_of_part(Graph graph, const ExecutionPlan& whole) {
  ExecutionPlan plan;
  for (ValueId id : graph.inputs)
    plan.input_shapes[graph.value(id).name] = shape_of(*graph.value(id).type.dims);
  plan.options = whole.options;
  plan.memory = plan_memory(graph);
  plan.graph = std::move(graph);
  return plan;
}

}  // namespace

Status InferenceSession::start_cuda(ExecutionPlan plan) {
  const Graph& graph = plan.graph;
  std::string why;  // for the first node CUDA cannot plan
  GraphSplit split = split_graph(graph, [&](const Node& node) {
    std::string reason = cuda::CudaExecutor::why_not_planned(graph, node);
    if (!reason.empty() && why.empty()) why = reason;
    return reason.empty();
  });
  if (split.splits()) {
    if (!options_.cpu_tail || split.prefix.nodes.empty()) {
      return make_error(StatusCode::kUnsupported, graph.where(), split.first_tail_node,
                        " cannot be planned on CUDA (", why, "), nor the nodes after it",
                        split.prefix.nodes.empty() ? ""
                                                   : "; `fovea model run` runs them on the CPU after "
                                                     "the CUDA part, or use --device cpu");
    }
    cpu_tail_ = std::make_unique<CpuTail>();
    CpuTail& tail = *cpu_tail_;
    tail.first_node = split.first_tail_node;
    for (ValueId id : split.tail.inputs) {
      const std::string& name = split.tail.value(id).name;
      const int from_cuda = index_named(split.prefix, split.prefix.outputs, name);
      tail.inputs.push_back(from_cuda >= 0 ? TensorSource{TensorSource::From::kCudaPart, from_cuda}
                                           : TensorSource{TensorSource::From::kSessionInput,
                                                          index_named(graph, graph.inputs, name)});
    }
    for (ValueId id : graph.outputs) {
      const std::string& name = graph.value(id).name;
      const int from_cuda = index_named(split.prefix, split.prefix.outputs, name);
      tail.outputs.push_back(from_cuda >= 0
                                 ? TensorSource{TensorSource::From::kCudaPart, from_cuda}
                                 : TensorSource{TensorSource::From::kCpuTail,
                                                index_named(split.tail, split.tail.outputs, name)});
    }
    tail.executor = std::make_unique<CpuExecutor>(plan_of_part(std::move(split.tail), plan));
    ExecutionPlan prefix = plan_of_part(std::move(split.prefix), plan);
    tail.whole = std::move(plan);
    log_info("{}: {} nodes, from {} on, run on the CPU after the CUDA part", tail.whole.graph.model_path,
             tail.executor->plan().graph.nodes.size(), tail.first_node);
    FOVEA_ASSIGN_OR_RETURN(
        cuda_, cuda::CudaExecutor::create(std::move(prefix), {.use_cuda_graph = options_.use_cuda_graph}));
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(
      cuda_, cuda::CudaExecutor::create(std::move(plan), {.use_cuda_graph = options_.use_cuda_graph}));
  // A data-dependent output is placed at its bound: that is the shape its tensor has here.
  for (int i = 0; i < output_count(); ++i) {
    TensorSpec& spec = output_specs_[static_cast<std::size_t>(i)];
    spec.shape = cuda_->output(i).shape();
    spec.rows_vary = cuda_->output_rows_device(i) != nullptr;
  }
  return Status::ok();
}

// The CUDA part with copies in and out, then the CPU tail on its boundary values.
Result<std::vector<Tensor>> InferenceSession::run_with_cpu_tail(cudaStream_t stream,
                                                                const std::vector<Tensor>& inputs) {
  FOVEA_ASSIGN_OR_RETURN(const std::vector<Tensor> cuda_part, cuda_->run_host(inputs, stream));
  const auto source = [&](const TensorSource& from, const std::vector<Tensor>& tail) -> const Tensor& {
    switch (from.from) {
      case TensorSource::From::kCudaPart: return cuda_part[static_cast<std::size_t>(from.index)];
      case TensorSource::From::kSessionInput: return inputs[static_cast<std::size_t>(from.index)];
      case TensorSource::From::kCpuTail: break;
    }
    return tail[static_cast<std::size_t>(from.index)];
  };
  std::vector<Tensor> tail_inputs;
  for (const TensorSource& from : cpu_tail_->inputs) tail_inputs.push_back(source(from, {}));
  FOVEA_ASSIGN_OR_RETURN(const std::vector<Tensor> tail, cpu_tail_->executor->run(tail_inputs));
  std::vector<Tensor> outputs;
  for (const TensorSource& from : cpu_tail_->outputs) outputs.push_back(source(from, tail));
  return outputs;
}
#endif

const ExecutionPlan& InferenceSession::plan() const {
  if (cpu_tail_) return cpu_tail_->whole;
#if defined(FOVEA_HAVE_CUDA)
  if (cuda_) return cuda_->plan();
#endif
  return cpu_->plan();
}

Result<int> InferenceSession::input_index(std::string_view name) const {
  return index_of(input_specs_, name, model_path_, "input");
}

Result<int> InferenceSession::output_index(std::string_view name) const {
  return index_of(output_specs_, name, model_path_, "output");
}

Result<std::vector<Tensor>> InferenceSession::run_host(cudaStream_t stream,
                                                       const std::vector<Tensor>& inputs) {
#if defined(FOVEA_HAVE_CUDA)
  if (cpu_tail_) return run_with_cpu_tail(stream, inputs);
  if (cuda_) return cuda_->run_host(inputs, stream);
#endif
  static_cast<void>(stream);
  return cpu_->run(inputs);
}

SessionMemory InferenceSession::device_memory() const {
#if defined(FOVEA_HAVE_CUDA)
  if (cuda_) {
    const cuda::DeviceMemoryUse use = cuda_->memory_use();
    return {.weights = use.weights, .arena = use.arena, .io = use.io, .workspace = use.workspace};
  }
#endif
  return {};
}

int InferenceSession::device_allocations() const {
#if defined(FOVEA_HAVE_CUDA)
  if (cuda_) return cuda_->device_allocations();
#endif
  return 0;
}

bool InferenceSession::uses_cuda_graph() const {
#if defined(FOVEA_HAVE_CUDA)
  if (cuda_) return cuda_->uses_cuda_graph();
#endif
  return false;
}

#if defined(FOVEA_HAVE_CUDA)

const cuda::CudaExecutor& InferenceSession::cuda_executor() const {
  FOVEA_CHECK_MSG(cuda_ != nullptr, "a CPU session has no device tensors; it runs through run_host()");
  return *cuda_;
}

const Tensor& InferenceSession::input(int i) const {
  return cuda_executor().input(i);
}

const Tensor& InferenceSession::output(int i) const {
  FOVEA_CHECK_MSG(cpu_tail_ == nullptr, "a session with a CPU tail gives its outputs through run_host()");
  return cuda_executor().output(i);
}

const std::int64_t* InferenceSession::output_rows_device(int i) const {
  FOVEA_CHECK_MSG(cpu_tail_ == nullptr, "a session with a CPU tail gives its outputs through run_host()");
  return cuda_executor().output_rows_device(i);
}

Status InferenceSession::copy_input(cudaStream_t stream, int i, const void* data, std::int64_t items) {
  const Tensor& input = cuda_executor().input(i);
  const std::int64_t capacity = input.rank() == 0 ? 1 : input.dim(0);
  if (items < 1 || items > capacity) {
    return make_error(StatusCode::kInvalidArgument, model_path_, ": input '", input_spec(i).name,
                      fmt::format("' holds {} items; {} cannot be copied into it", capacity, items));
  }
  const std::size_t bytes =
      input.bytes() / static_cast<std::size_t>(capacity) * static_cast<std::size_t>(items);
  FOVEA_CUDA_TRY(cudaMemcpyAsync(const_cast<void*>(input.raw()), data, bytes, cudaMemcpyDefault, stream));
  return Status::ok();
}

Status InferenceSession::run(cudaStream_t stream) {
  FOVEA_CHECK_MSG(cuda_ != nullptr, "a CPU session runs through run_host()");
  if (cpu_tail_) {
    return make_error(StatusCode::kUnsupported, model_path_, ": from ", cpu_tail_->first_node,
                      " on this model runs on the CPU; it runs through run_host() (`fovea model run`)");
  }
  return cuda_->run(stream);
}

#endif

}  // namespace fovea::runtime
