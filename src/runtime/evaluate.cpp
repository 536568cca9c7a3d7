#include "runtime/evaluate.h"

#include <fmt/format.h>

namespace fovea::runtime {

Result<const OpDef*> op_for(const Graph* graph, const Node& node) {
  const OpDef* def = find_op(node.domain, node.op_type);
  if (def == nullptr) {
    return make_error(StatusCode::kUnsupported, graph ? graph->where() : std::string(), node.describe(),
                      ": unsupported op '", node.op_type, "'",
                      node.domain.empty() ? std::string() : " in domain '" + node.domain + "'");
  }
  return def;
}

namespace {

std::string count_of(int n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// "1 input", "2 to 3 inputs", "at least 1 input".
std::string range_of(int min, int max, std::string_view noun) {
  if (max == kVariadic) return "at least " + count_of(min, noun);
  if (min == max) return count_of(min, noun);
  return fmt::format("{} to {}", min, count_of(max, noun));
}

// The node lists as many inputs and outputs as its op takes, and every required one: infer() and
// run() then read them without checking (see OpDef).
Status check_arity(const Graph* graph, const Node& node, const OpDef& def) {
  const auto fail = [&](const std::string& what) {
    return make_error(StatusCode::kInvalidArgument, graph ? graph->where() : std::string(), node.describe(),
                      ": ", what);
  };
  const int inputs = static_cast<int>(node.inputs.size());
  const int outputs = static_cast<int>(node.outputs.size());
  if (inputs < def.min_inputs) {
    return fail(fmt::format("needs {}, has {}", range_of(def.min_inputs, def.max_inputs, "input"), inputs));
  }
  if (inputs > def.max_inputs) {
    return fail(fmt::format("has {}, at most {} allowed", count_of(inputs, "input"), def.max_inputs));
  }
  // A variadic op's inputs are all required.
  const int required = def.max_inputs == kVariadic ? inputs : def.min_inputs;
  for (int i = 0; i < required; ++i) {
    if (node.inputs[static_cast<std::size_t>(i)] == kNoValue) {
      return fail(fmt::format("required input {} is omitted", i));
    }
  }
  if (outputs < def.min_outputs) {
    return fail(
        fmt::format("needs {}, has {}", range_of(def.min_outputs, def.max_outputs, "output"), outputs));
  }
  if (outputs > def.max_outputs) {
    return fail(fmt::format("has {}, at most {} allowed", count_of(outputs, "output"), def.max_outputs));
  }
  if (node.outputs.front() == kNoValue) return fail("required output 0 is omitted");
  return Status::ok();
}

}  // namespace

Result<std::vector<ValueType>> infer_node(const Graph* graph, const Node& node,
                                          std::vector<ValueType> input_types,
                                          std::vector<const Tensor*> input_values) {
  FOVEA_ASSIGN_OR_RETURN(const OpDef* def, op_for(graph, node));
  FOVEA_TRY(check_arity(graph, node, *def));
  InferContext context(graph, node, std::move(input_types), std::move(input_values));
  FOVEA_TRY(def->infer(context));
  return context.outputs();
}

KernelContext::Allocator heap_allocator() {
  return [](int, DataType dtype, Shape shape) { return Tensor::allocate(dtype, std::move(shape)); };
}

Result<std::vector<Tensor>> evaluate_node(const Graph* graph, const Node& node,
                                          const std::vector<Tensor>& inputs,
                                          const KernelContext::Allocator& allocator) {
  FOVEA_ASSIGN_OR_RETURN(const OpDef* def, op_for(graph, node));
  FOVEA_TRY(check_arity(graph, node, *def));
  InferContext inference = infer_context_for(graph, node, inputs);
  FOVEA_TRY(def->infer(inference));

  std::vector<Tensor> outputs(node.outputs.size());
  std::vector<DataType> dtypes;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const ValueType& type = inference.outputs()[i];
    dtypes.push_back(type.dtype);
    if (type.dims && all_known(*type.dims)) {
      outputs[i] = allocator(static_cast<int>(i), type.dtype, shape_of(*type.dims));
    }
  }
  KernelContext kernel(node, inputs, std::move(outputs), std::move(dtypes), allocator);
  FOVEA_TRY(def->run(kernel));
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    FOVEA_CHECK_MSG(!kernel.outputs()[i].empty_storage(),
                    "a kernel left a data-dependent output unallocated");
  }
  return std::move(kernel.outputs());
}

}  // namespace fovea::runtime
