#include "runtime/cpu_executor.h"

#include <fmt/format.h>

#include "runtime/evaluate.h"

namespace fovea::runtime {

CpuExecutor::CpuExecutor(ExecutionPlan plan)
    : plan_(std::move(plan)), arena_(new std::byte[std::max<std::size_t>(plan_.memory.arena_bytes, 1)]) {}

Tensor CpuExecutor::allocate(ValueId value, DataType dtype, Shape shape) {
  if (value != kNoValue) {
    const std::int64_t offset = plan_.memory.offsets[static_cast<std::size_t>(value)];
    const std::size_t bytes = static_cast<std::size_t>(element_count(shape)) * data_type_size(dtype);
    if (offset >= 0 && bytes <= plan_.memory.bytes[static_cast<std::size_t>(value)]) {
      return Tensor::borrow(dtype, std::move(shape), arena_.get() + offset);
    }
    if (offset < 0 && !plan_.graph.is_graph_output(value)) {
      ++dynamic_allocations_;
    }
  }
  return Tensor::allocate(dtype, std::move(shape));
}

Result<std::vector<Tensor>> CpuExecutor::run(const std::vector<Tensor>& inputs) {
  FOVEA_TRY(check_plan_inputs(plan_, inputs));
  const Graph& graph = plan_.graph;
  dynamic_allocations_ = 0;
  std::vector<Tensor> values(graph.values.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    values[static_cast<std::size_t>(graph.inputs[i])] = inputs[i];
  }
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    if (graph.values[v].constant) values[v] = *graph.values[v].constant;
  }
  for (const Node& node : graph.nodes) {
    auto allocator = [&](int output, DataType dtype, Shape shape) {
      return allocate(node.outputs[static_cast<std::size_t>(output)], dtype, std::move(shape));
    };
    FOVEA_TRY(evaluate_into(&graph, node, values, allocator));
  }
  std::vector<Tensor> results;
  for (ValueId out : graph.outputs) {
    const Tensor& value = values[static_cast<std::size_t>(out)];
    // Constants and pass-through inputs are shared with the plan or the caller: hand out copies.
    const bool owned_here = graph.value(out).producer >= 0;
    results.push_back(owned_here ? value : value.clone());
  }
  return results;
}

}  // namespace fovea::runtime
