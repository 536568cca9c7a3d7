#include "runtime/evaluate.h"

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

Result<std::vector<ValueType>> infer_node(const Graph* graph, const Node& node,
                                          std::vector<ValueType> input_types,
                                          std::vector<const Tensor*> input_values) {
  FOVEA_ASSIGN_OR_RETURN(const OpDef* def, op_for(graph, node));
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
