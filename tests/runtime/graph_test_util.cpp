#include "runtime/graph_test_util.h"

#include <gtest/gtest.h>

#include "runtime/evaluate.h"

namespace fovea::runtime::testing {

Graph load_graph(const ModelBuilder& builder) {
  auto model = parse_onnx(builder.serialize(), "test.onnx", ".");
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? model->graph : Graph{};
}

std::vector<Tensor> run_unoptimized(const Graph& graph, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> values(graph.values.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    values[static_cast<std::size_t>(graph.inputs[i])] = inputs[i];
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    if (graph.values[v].constant) values[v] = *graph.values[v].constant;
  }
  for (const Node& node : graph.nodes) {
    std::vector<Tensor> node_inputs;
    for (ValueId in : node.inputs)
      node_inputs.push_back(in == kNoValue ? Tensor() : values[static_cast<std::size_t>(in)]);
    auto outputs = evaluate_node(&graph, node, node_inputs, heap_allocator());
    EXPECT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    if (!outputs.is_ok()) return {};
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] != kNoValue) values[static_cast<std::size_t>(node.outputs[i])] = (*outputs)[i];
    }
  }
  std::vector<Tensor> results;
  for (ValueId out : graph.outputs) results.push_back(values[static_cast<std::size_t>(out)]);
  return results;
}

ExecutionPlan plan_for(const Graph& graph, const std::vector<Tensor>& inputs) {
  InputShapes shapes;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    shapes[graph.value(graph.inputs[i]).name] = inputs[i].shape();
  auto plan = plan_graph(graph, shapes);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  return plan.is_ok() ? std::move(plan).value() : ExecutionPlan{};
}

int count_ops(const Graph& graph, const std::string& op_type) {
  int count = 0;
  for (const Node& node : graph.nodes) count += node.op_type == op_type ? 1 : 0;
  return count;
}

}  // namespace fovea::runtime::testing
