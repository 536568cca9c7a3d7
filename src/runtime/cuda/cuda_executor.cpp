#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/cuda_raii.h"
#include "core/log.h"
#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/graph_memsets.h"

namespace fovea::runtime::cuda {

namespace {

// The search buffer prepare() starts with, which covers most nodes' searches; a search that needs
// more grows it (CudaKernelContext::reserve_workspace).
constexpr std::size_t kSearchWorkspaceBytes = std::size_t{256} << 20;

std::size_t align_up(std::size_t bytes) {
  return (bytes + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

std::size_t shape_bytes(const Shape& shape, DataType dtype) {
  return static_cast<std::size_t>(element_count(shape)) * data_type_size(dtype);
}

bool has_static_shape(const Value& value) {
  return value.type.dims && all_known(*value.type.dims);
}

// The first node reading `id`, or nullptr.
const Node* first_reader(const Graph& graph, ValueId id) {
  for (const Node& node : graph.nodes) {
    if (std::find(node.inputs.begin(), node.inputs.end(), id) != node.inputs.end()) return &node;
  }
  return nullptr;
}

}  // namespace

struct CudaExecutor::Device {
  std::unique_ptr<CudaLibraries> libraries;
  CudaStream capture_stream;
  std::vector<DeviceMemory> buffers;
  CudaGraph graph;
};

struct CudaExecutor::NodeRun {
  const Node* node = nullptr;
  const CudaOpDef* def = nullptr;
  bool is_view = false;  // the output is the input's bytes: nothing to run
  std::unique_ptr<CudaKernelContext> context;
  std::unique_ptr<CudaNodeState> state;
};

CudaExecutor::CudaExecutor(ExecutionPlan plan)
    : plan_(std::move(plan)), device_(std::make_unique<Device>()) {}

CudaExecutor::~CudaExecutor() = default;

bool CudaExecutor::uses_cuda_graph() const {
  return static_cast<bool>(device_->graph);
}

Result<std::unique_ptr<CudaExecutor>> CudaExecutor::create(ExecutionPlan plan,
                                                           const CudaExecutorOptions& options) {
  std::unique_ptr<CudaExecutor> executor(new CudaExecutor(std::move(plan)));
  FOVEA_TRY(executor->build(options));
  return executor;
}

namespace {

// The node as shape inference sees it when planned: its inputs' types and plan-time constants.
InferContext planned_view(const Graph& graph, const Node& node) {
  std::vector<ValueType> types;
  std::vector<const Tensor*> constants;
  for (ValueId in : node.inputs) {
    types.push_back(in == kNoValue ? ValueType{} : graph.value(in).type);
    constants.push_back(graph.is_constant(in) ? &*graph.value(in).constant : nullptr);
  }
  return InferContext(&graph, node, std::move(types), std::move(constants));
}

}  // namespace

std::string CudaExecutor::why_not_planned(const Graph& graph, const Node& node) {
  const CudaOpDef* def = find_cuda_op(node.domain, node.op_type);
  if (def == nullptr) return "it has no CUDA kernel";
  for (ValueId out : node.outputs) {
    if (out == kNoValue || (def->bound_output == nullptr && has_static_shape(graph.value(out)))) continue;
    if (def->bound_output == nullptr) return "the data decides its output's shape";
    if (const Node* reader = first_reader(graph, out)) {
      return "the data decides its output's rows, and " + reader->describe() + " reads them";
    }
    if (!graph.is_graph_output(out)) return "the data decides its output's rows";
  }
  return def->refuses != nullptr ? def->refuses(planned_view(graph, node)) : std::string();
}

Result<void*> CudaExecutor::allocate(std::size_t bytes) {
  FOVEA_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemory::allocate(bytes));
  ++device_allocations_;
  device_->buffers.push_back(std::move(memory));
  return device_->buffers.back().get();
}

Status CudaExecutor::build(const CudaExecutorOptions& options) {
  FOVEA_TRY(check_kernels());
  FOVEA_TRY(resolve_shapes());
  FOVEA_ASSIGN_OR_RETURN(device_->libraries, CudaLibraries::create());
  FOVEA_ASSIGN_OR_RETURN(device_->capture_stream, CudaStream::create());
  FOVEA_TRY(place_values());
  FOVEA_TRY(make_node_runs());
  FOVEA_TRY(prepare_nodes());
  if (options.use_cuda_graph) {
    FOVEA_TRY(capture());
  }
  return Status::ok();
}

// Every node has a CUDA kernel; the error lists every node that does not.
Status CudaExecutor::check_kernels() const {
  const Graph& graph = plan_.graph;
  std::set<std::string> missing;
  for (const Node& node : graph.nodes) {
    if (find_cuda_op(node.domain, node.op_type) == nullptr) {
      missing.insert(node.domain.empty() ? node.op_type : node.domain + "." + node.op_type);
    }
  }
  if (!missing.empty()) {
    return make_error(StatusCode::kUnsupported, graph.where(), "no CUDA kernel for ",
                      fmt::format("{}", fmt::join(missing, ", ")));
  }
  return Status::ok();
}

// Each value's shape: the plan's, or for a data-dependent output its op's bound. Such an output
// must be a graph output that no node reads, since the nodes after it are planned with static
// shapes and captured in the graph. Every output of an op with a bound is data-dependent, even
// where the model declares its shape (ONNX's test models declare the expected selection's): the
// data decides its rows.
Status CudaExecutor::resolve_shapes() {
  const Graph& graph = plan_.graph;
  value_shapes_.assign(graph.values.size(), Shape());
  data_dependent_.assign(graph.values.size(), false);
  for (const Node& node : graph.nodes) {
    const CudaOpDef* def = find_cuda_op(node.domain, node.op_type);
    for (ValueId out : node.outputs) {
      if (out == kNoValue) continue;
      data_dependent_[static_cast<std::size_t>(out)] =
          def->bound_output != nullptr || !has_static_shape(graph.value(out));
    }
  }
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    if (!data_dependent_[v]) value_shapes_[v] = shape_of(*graph.values[v].type.dims);
  }
  for (const Node& node : graph.nodes) {
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      const ValueId out = node.outputs[o];
      if (out == kNoValue || !data_dependent_[static_cast<std::size_t>(out)]) continue;
      FOVEA_ASSIGN_OR_RETURN(value_shapes_[static_cast<std::size_t>(out)],
                             bound_shape(node, static_cast<int>(o)));
    }
  }
  return Status::ok();
}

Result<Shape> CudaExecutor::bound_shape(const Node& node, int output) const {
  const Graph& graph = plan_.graph;
  const ValueId out = node.outputs[static_cast<std::size_t>(output)];
  auto refuse = [&](const std::string& why) {
    return make_error(StatusCode::kUnsupported, graph.where(), "output '", graph.value(out).name, "' of ",
                      node.op_type, " '", node.name, "' has a shape that depends on the data", why);
  };
  const CudaOpDef* def = find_cuda_op(node.domain, node.op_type);
  if (def->bound_output == nullptr) return refuse("; the CUDA executor runs static shapes only");
  if (const Node* reader = first_reader(graph, out)) {
    return refuse(fmt::format(" and is read by {}; on CUDA a data-dependent output must be a graph output",
                              reader->describe()));
  }
  if (!graph.is_graph_output(out)) return refuse("; on CUDA a data-dependent output must be a graph output");
  return def->bound_output(planned_view(graph, node), output);
}

// Device addresses for every value: weights in one buffer, graph inputs and outputs in another,
// intermediates in the arena, views at their source's address. A graph output that no node
// writes (a constant, an input passed through) is read where it lives.
Status CudaExecutor::place_values() {
  const Graph& graph = plan_.graph;
  std::vector<ValueId> view_of(graph.values.size(), kNoValue);
  for (const Node& node : graph.nodes) {
    const CudaOpDef* def = find_cuda_op(node.domain, node.op_type);
    if (def->aliases_input && !graph.is_graph_output(node.outputs[0])) {
      view_of[static_cast<std::size_t>(node.outputs[0])] = node.inputs[0];
    }
  }
  const MemoryPlan memory = plan_memory(graph, view_of);

  std::size_t weights = 0;
  std::size_t io = 0;
  std::vector<std::size_t> weight_offsets(graph.values.size(), 0);
  std::vector<std::size_t> io_offsets(graph.values.size(), 0);
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    const auto id = static_cast<ValueId>(v);
    if (graph.values[v].constant) {
      weight_offsets[v] = weights;
      weights += align_up(graph.values[v].constant->bytes());
    } else if (graph.is_graph_output(id) ||
               std::find(graph.inputs.begin(), graph.inputs.end(), id) != graph.inputs.end()) {
      io_offsets[v] = io;
      io += align_up(shape_bytes(value_shapes_[v], graph.values[v].type.dtype));
    }
  }
  // One device row count per data-dependent output, after the tensors.
  std::vector<std::size_t> rows_offsets(graph.values.size(), 0);
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    if (data_dependent_[v]) {
      rows_offsets[v] = io;
      io += align_up(sizeof(std::int64_t));
    }
  }
  FOVEA_ASSIGN_OR_RETURN(void* weight_base, allocate(weights));
  FOVEA_ASSIGN_OR_RETURN(void* io_base, allocate(io));
  FOVEA_ASSIGN_OR_RETURN(void* arena_base, allocate(memory.arena_bytes));
  memory_use_.weights = weights;
  memory_use_.io = io;
  memory_use_.arena = memory.arena_bytes;

  value_data_.assign(graph.values.size(), nullptr);
  value_rows_.assign(graph.values.size(), nullptr);
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    const Value& value = graph.values[v];
    const auto id = static_cast<ValueId>(v);
    if (data_dependent_[v]) {
      value_rows_[v] = reinterpret_cast<std::int64_t*>(static_cast<std::byte*>(io_base) + rows_offsets[v]);
    }
    if (value.constant) {
      value_data_[v] = static_cast<std::byte*>(weight_base) + weight_offsets[v];
      FOVEA_CUDA_TRY(
          cudaMemcpy(value_data_[v], value.constant->raw(), value.constant->bytes(), cudaMemcpyHostToDevice));
    } else if (graph.is_graph_output(id) ||
               std::find(graph.inputs.begin(), graph.inputs.end(), id) != graph.inputs.end()) {
      value_data_[v] = static_cast<std::byte*>(io_base) + io_offsets[v];
    } else if (view_of[v] == kNoValue && memory.offsets[v] >= 0) {
      value_data_[v] = static_cast<std::byte*>(arena_base) + memory.offsets[v];
    }
  }
  // cudaMemcpy from pageable memory may return before its DMA lands, and fovea's streams are
  // non-blocking (not ordered after the legacy stream): the weights must be in place before any
  // kernel on them reads them.
  FOVEA_CUDA_TRY(cudaDeviceSynchronize());
  // Views take their source's address; sources come first in topological order.
  for (const Node& node : graph.nodes) {
    const ValueId out = node.outputs[0];
    if (view_of[static_cast<std::size_t>(out)] != kNoValue) {
      value_data_[static_cast<std::size_t>(out)] = value_data_[static_cast<std::size_t>(node.inputs[0])];
    }
  }
  for (ValueId id : graph.inputs) inputs_.push_back(device_tensor(id));
  for (ValueId id : graph.outputs) {
    outputs_.push_back(device_tensor(id));
    output_rows_.push_back(value_rows_[static_cast<std::size_t>(id)]);
  }
  return Status::ok();
}

Tensor CudaExecutor::device_tensor(ValueId id) const {
  if (id == kNoValue) return Tensor();
  const auto v = static_cast<std::size_t>(id);
  return Tensor::borrow(plan_.graph.value(id).type.dtype, value_shapes_[v], value_data_[v]);
}

Status CudaExecutor::make_node_runs() {
  const Graph& graph = plan_.graph;
  for (const Node& node : graph.nodes) {
    auto run = std::make_unique<NodeRun>();
    run->node = &node;
    run->def = find_cuda_op(node.domain, node.op_type);
    run->is_view = run->def->aliases_input && !graph.is_graph_output(node.outputs[0]);
    std::vector<Tensor> inputs;
    std::vector<const Tensor*> constants;
    for (ValueId in : node.inputs) {
      inputs.push_back(device_tensor(in));
      constants.push_back(graph.is_constant(in) ? &*graph.value(in).constant : nullptr);
    }
    std::vector<Tensor> outputs;
    std::vector<std::int64_t*> rows;
    for (ValueId out : node.outputs) {
      outputs.push_back(device_tensor(out));
      rows.push_back(out == kNoValue ? nullptr : value_rows_[static_cast<std::size_t>(out)]);
    }
    run->context = std::make_unique<CudaKernelContext>(&graph, node, std::move(inputs), std::move(constants),
                                                       std::move(outputs), std::move(rows));
    nodes_.push_back(std::move(run));
  }
  return Status::ok();
}

// Each op's plan-time work (cuDNN's algorithm search...), with a temporary search workspace; then
// the one workspace every node shares.
Status CudaExecutor::prepare_nodes() {
  const bool any_prepare =
      std::any_of(nodes_.begin(), nodes_.end(), [](const auto& n) { return n->def->prepare != nullptr; });
  cudaStream_t stream = device_->capture_stream.get();
  FOVEA_TRY(device_->libraries->set_stream(stream));
  {
    SearchWorkspace search;  // freed once prepared: the run's workspace is sized afterwards
    if (any_prepare && !search.reserve(kSearchWorkspaceBytes)) {
      return make_error(StatusCode::kDeviceError, plan_.graph.where(), "no device memory for the ",
                        std::to_string(kSearchWorkspaceBytes >> 20), " MiB the algorithm search starts with");
    }
    for (auto& run : nodes_) {
      if (run->is_view || run->def->prepare == nullptr) continue;
      run->context->bind_search(stream, device_->libraries.get(), &search);
      FOVEA_ASSIGN_OR_RETURN(CudaPrepared prepared, run->def->prepare(*run->context));
      run->state = std::move(prepared.state);
      workspace_bytes_ = std::max(workspace_bytes_, align_up(prepared.workspace_bytes));
    }
    FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
    device_allocations_ += search.allocations();
  }
  if (workspace_bytes_ > 0) {
    FOVEA_ASSIGN_OR_RETURN(workspace_, allocate(workspace_bytes_));
  }
  memory_use_.workspace = workspace_bytes_;
  return Status::ok();
}

Status CudaExecutor::enqueue(cudaStream_t stream) {
  FOVEA_TRY(device_->libraries->set_stream(stream));
  for (auto& run : nodes_) {
    if (run->is_view) continue;
    run->context->bind(stream, device_->libraries.get(), workspace_, workspace_bytes_, run->state.get());
    FOVEA_TRY(run->def->run(*run->context));
  }
  return Status::ok();
}

// One eager run first: libraries load their kernels lazily, which a capture must not see.
Status CudaExecutor::capture() {
  cudaStream_t stream = device_->capture_stream.get();
  FOVEA_TRY(enqueue(stream));
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  FOVEA_ASSIGN_OR_RETURN(device_->graph, CudaGraph::capture(
                                             stream, [&] { return enqueue(stream); }, memsets_as_kernels));
  FOVEA_TRY(device_->graph.upload(stream));
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::ok();
}

Status CudaExecutor::run(cudaStream_t stream) {
  if (device_->graph) return device_->graph.launch(stream);
  return enqueue(stream);
}

Result<std::vector<Tensor>> CudaExecutor::run_host(const std::vector<Tensor>& inputs, cudaStream_t stream) {
  FOVEA_TRY(check_plan_inputs(plan_, inputs));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    FOVEA_CUDA_TRY(cudaMemcpyAsync(inputs_[i].raw(), inputs[i].raw(), inputs[i].bytes(),
                                   cudaMemcpyHostToDevice, stream));
  }
  FOVEA_TRY(run(stream));
  FOVEA_ASSIGN_OR_RETURN(const std::vector<Shape> shapes, output_shapes(stream));
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    Tensor host = Tensor::allocate(outputs_[i].dtype(), shapes[i]);
    FOVEA_CUDA_TRY(
        cudaMemcpyAsync(host.raw(), outputs_[i].raw(), host.bytes(), cudaMemcpyDeviceToHost, stream));
    results.push_back(std::move(host));
  }
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  return results;
}

// The outputs' true shapes after the run enqueued on `stream`: a data-dependent output's row count
// is read back, which waits for the run.
Result<std::vector<Shape>> CudaExecutor::output_shapes(cudaStream_t stream) const {
  std::vector<Shape> shapes;
  for (const Tensor& out : outputs_) shapes.push_back(out.shape());
  if (std::all_of(output_rows_.begin(), output_rows_.end(),
                  [](const auto* rows) { return rows == nullptr; })) {
    return shapes;
  }
  std::vector<std::int64_t> rows(outputs_.size(), 0);
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (output_rows_[i] == nullptr) continue;
    FOVEA_CUDA_TRY(
        cudaMemcpyAsync(&rows[i], output_rows_[i], sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream));
  }
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (output_rows_[i] == nullptr) continue;
    FOVEA_CHECK_MSG(rows[i] >= 0 && rows[i] <= shapes[i][0], "a kernel wrote more rows than its bound");
    shapes[i][0] = rows[i];
  }
  return shapes;
}

}  // namespace fovea::runtime::cuda
