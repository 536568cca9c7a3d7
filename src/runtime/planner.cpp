#include "runtime/planner.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/log.h"
#include "runtime/passes/passes.h"
#include "runtime/quant/quantize_graph.h"
#include "runtime/shape_inference.h"

namespace fovea::runtime {

namespace {

std::size_t align_up(std::size_t bytes) {
  return (bytes + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

struct Lifetime {
  ValueId value = kNoValue;
  int first = 0;  // index of the producing node
  int last = 0;   // index of the last node reading it
  std::size_t bytes = 0;
};

// The value whose bytes `value` is (itself unless it is a view).
ValueId storage_of(ValueId value, const std::vector<ValueId>& view_of) {
  while (static_cast<std::size_t>(value) < view_of.size() &&
         view_of[static_cast<std::size_t>(value)] != kNoValue) {
    value = view_of[static_cast<std::size_t>(value)];
  }
  return value;
}

std::vector<Lifetime> arena_lifetimes(const Graph& graph, const std::vector<ValueId>& view_of) {
  std::vector<Lifetime> lifetimes;
  std::vector<int> last_use(graph.values.size(), -1);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (ValueId in : graph.nodes[n].inputs) {
      if (in != kNoValue) last_use[static_cast<std::size_t>(storage_of(in, view_of))] = static_cast<int>(n);
    }
  }
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (ValueId out : graph.nodes[n].outputs) {
      if (out == kNoValue || graph.is_graph_output(out) || storage_of(out, view_of) != out) continue;
      const ValueType& type = graph.value(out).type;
      if (!type.dims || !all_known(*type.dims)) continue;  // data-dependent: allocated at run time
      const auto bytes =
          static_cast<std::size_t>(element_count(shape_of(*type.dims))) * data_type_size(type.dtype);
      const int last = std::max(last_use[static_cast<std::size_t>(out)], static_cast<int>(n));
      lifetimes.push_back(
          Lifetime{out, static_cast<int>(n), last, align_up(std::max<std::size_t>(bytes, 1))});
    }
  }
  return lifetimes;
}

}  // namespace

MemoryPlan plan_memory(const Graph& graph, const std::vector<ValueId>& view_of) {
  MemoryPlan plan;
  plan.offsets.assign(graph.values.size(), -1);
  plan.bytes.assign(graph.values.size(), 0);
  std::vector<Lifetime> lifetimes = arena_lifetimes(graph, view_of);
  // Largest first: big tensors claim low offsets and small ones fill the gaps between them.
  std::stable_sort(lifetimes.begin(), lifetimes.end(),
                   [](const Lifetime& a, const Lifetime& b) { return a.bytes > b.bytes; });
  struct Placed {
    std::size_t offset, bytes;
    int first, last;
  };
  std::vector<Placed> placed;
  for (const Lifetime& life : lifetimes) {
    std::vector<Placed> conflicts;
    for (const Placed& p : placed) {
      if (p.first <= life.last && life.first <= p.last) conflicts.push_back(p);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    std::size_t offset = 0;
    for (const Placed& c : conflicts) {
      if (offset + life.bytes <= c.offset) break;  // fits in the gap below c
      offset = std::max(offset, c.offset + c.bytes);
    }
    placed.push_back(Placed{offset, life.bytes, life.first, life.last});
    plan.offsets[static_cast<std::size_t>(life.value)] = static_cast<std::int64_t>(offset);
    plan.bytes[static_cast<std::size_t>(life.value)] = life.bytes;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + life.bytes);
    plan.naive_bytes += life.bytes;
  }
  for (std::size_t v = 0; v < view_of.size(); ++v) {
    if (view_of[v] != kNoValue) {
      plan.offsets[v] = plan.offsets[static_cast<std::size_t>(storage_of(static_cast<ValueId>(v), view_of))];
    }
  }
  return plan;
}

Status check_plan_inputs(const ExecutionPlan& plan, const std::vector<Tensor>& inputs) {
  const Graph& graph = plan.graph;
  if (inputs.size() != graph.inputs.size()) {
    return make_error(StatusCode::kInvalidArgument, graph.where(), "expected ",
                      std::to_string(graph.inputs.size()), " inputs, got ", std::to_string(inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Value& value = graph.value(graph.inputs[i]);
    const Shape planned = shape_of(*value.type.dims);
    if (inputs[i].dtype() != value.type.dtype || inputs[i].shape() != planned) {
      return make_error(StatusCode::kInvalidArgument, graph.where(), "input '", value.name, "' is ",
                        std::string(data_type_name(inputs[i].dtype())), " ", shape_string(inputs[i].shape()),
                        " but the plan is for ", std::string(data_type_name(value.type.dtype)), " ",
                        shape_string(planned));
    }
  }
  return Status::ok();
}

PlanOptions device_plan_options(Precision precision, std::vector<std::string> keep_float32) {
  return {.precision = precision,
          .keep_float32 = std::move(keep_float32),
          .channels_last = precision != Precision::kFloat32,
          .int8_tensor_cores = precision == Precision::kInt8};
}

namespace {

// An error naming the input when `shape` is not one its declared dims (if any) allow: another rank,
// or another size where a dim is known.
Status check_declared_shape(const Graph& graph, const Value& input, const Shape& shape) {
  if (!input.type.dims) return Status::ok();
  const Dims& declared = *input.type.dims;
  bool matches = declared.size() == shape.size();
  for (std::size_t d = 0; matches && d < shape.size(); ++d) {
    matches = !declared[d].known() || declared[d].value == shape[d];
  }
  if (matches) return Status::ok();
  return make_error(StatusCode::kInvalidArgument, graph.where(), "input '", input.name, "' is declared ",
                    dims_string(declared), ", which ", shape_string(shape), " does not match");
}

}  // namespace

Result<InputShapes> resolve_input_shapes(const Graph& graph, const InputShapes& overrides,
                                         std::int64_t default_dim) {
  InputShapes shapes;
  for (const auto& [name, shape] : overrides) {
    const ValueId id = graph.find_value(name);
    if (id == kNoValue || std::find(graph.inputs.begin(), graph.inputs.end(), id) == graph.inputs.end()) {
      return make_error(StatusCode::kInvalidArgument, graph.where(), "'", name,
                        "' is not an input of the model");
    }
  }
  for (ValueId id : graph.inputs) {
    const Value& input = graph.value(id);
    if (auto it = overrides.find(input.name); it != overrides.end()) {
      FOVEA_TRY(check_declared_shape(graph, input, it->second));
      shapes[input.name] = it->second;
      continue;
    }
    if (!input.type.dims) {
      return make_error(StatusCode::kInvalidArgument, graph.where(), "input '", input.name,
                        "' has no declared shape; give one");
    }
    Shape shape;
    for (const Dim& d : *input.type.dims) shape.push_back(d.known() ? d.value : default_dim);
    shapes[input.name] = std::move(shape);
  }
  return shapes;
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFloat16: return "fp16";
    case Precision::kInt8: return "int8";
    case Precision::kFloat32: break;
  }
  return "fp32";
}

Result<ExecutionPlan> plan_graph(const Graph& model_graph, const InputShapes& input_shapes,
                                 const PlanOptions& options) {
  ExecutionPlan plan;
  plan.graph = model_graph;
  plan.input_shapes = input_shapes;
  plan.options = options;
  Graph& graph = plan.graph;
  for (ValueId id : graph.inputs) {
    Value& input = graph.value(id);
    auto it = input_shapes.find(input.name);
    if (it == input_shapes.end()) {
      return make_error(StatusCode::kInvalidArgument, graph.where(), "no shape given for input '", input.name,
                        "'");
    }
    const Shape& shape = it->second;
    FOVEA_TRY(check_declared_shape(graph, input, shape));
    input.type.dims = dims_of(shape);
  }
  FOVEA_TRY(infer_shapes(graph, FoldConstants::kYes));
  FOVEA_TRY(optimize(graph));
  // Before the int8 rewrite: the tensor-core plans quantize NHWC convolutions (the kernel's layout),
  // and the pass converts only convolutions whose weights are still constants.
  if (options.channels_last) {
    convert_to_channels_last(graph);
    graph.compact();
    FOVEA_TRY(infer_shapes(graph, FoldConstants::kNo));
  }
  const bool int8_tensor_cores = options.precision == Precision::kInt8 && options.int8_tensor_cores;
  if (options.precision == Precision::kInt8) {
    if (!options.calibration) {
      return make_error(StatusCode::kInvalidArgument, graph.where(), "int8 needs a calibration cache");
    }
    // After optimize: batch norms are folded into the weights that get quantized, and the
    // epilogues a layer fuses stay in float, as an 8-bit kernel's epilogue runs them.
    const quant::Int8Layers which =
        int8_tensor_cores ? quant::Int8Layers::kTensorCoreConvolutions : quant::Int8Layers::kAll;
    FOVEA_ASSIGN_OR_RETURN(
        const std::vector<quant::QuantizedNode> layers,
        quant::quantize_graph(graph, *options.calibration, options.keep_unquantized, which));
    for (const quant::QuantizedNode& layer : layers) {
      if (!layer.int8)
        log_info("{}int8: node '{}' ({}) stays in float: {}", graph.where(), layer.node, layer.op_type,
                 layer.reason);
    }
    FOVEA_TRY(infer_shapes(graph, FoldConstants::kNo));
    graph.compact();
  }
  if (options.precision == Precision::kFloat16 || int8_tensor_cores) {
    convert_to_float16(graph, Float16Options{.keep_float32 = options.keep_float32,
                                             .float16_interface = options.float16_interface});
    // Checks the rewritten types node by node; an op that cannot take float16 is named here.
    FOVEA_TRY(infer_shapes(graph, FoldConstants::kNo));
    graph.compact();
  }
  // After float16 conversion: whether an erf Gelu fuses depends on the product's dtype.
  fuse_gemm_gelu(graph);
  graph.compact();
  if (int8_tensor_cores) {
    fuse_int8_convolutions(graph, options.int8_residuals ? Int8Residuals::kInt8 : Int8Residuals::kFloat);
    graph.compact();
    FOVEA_TRY(infer_shapes(graph, FoldConstants::kNo));
  }
  plan.memory = plan_memory(graph);
  return plan;
}

}  // namespace fovea::runtime
