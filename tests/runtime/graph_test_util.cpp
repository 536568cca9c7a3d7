#include "runtime/graph_test_util.h"

#include "runtime/op_test_util.h"

#include <gtest/gtest.h>

#include "runtime/evaluate.h"

namespace fovea::runtime::testing {

Graph load_graph(const ModelBuilder& builder) {
  auto model = parse_onnx(builder.serialize(), "test.onnx", ".");
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? model->graph : Graph{};
}

void expect_refused_at_load(const ModelBuilder& builder, const std::string& file_name,
                            const std::vector<std::string>& fragments) {
  const auto model = parse_onnx(builder.serialize(), file_name, ".");
  ASSERT_FALSE(model.is_ok());
  for (const std::string& fragment : fragments) {
    EXPECT_NE(model.status().message().find(fragment), std::string::npos)
        << "'" << fragment << "' missing from: " << model.status().message();
  }
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

void expect_same_results(const Graph& graph, const ExecutionPlan& plan, const std::vector<Tensor>& inputs) {
  const auto reference = run_unoptimized(graph, inputs);
  CpuExecutor executor(plan);
  auto outputs = executor.run(inputs);
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  ASSERT_EQ(outputs->size(), reference.size());
  for (std::size_t i = 0; i < reference.size(); ++i) {
    EXPECT_TRUE(tensors_near((*outputs)[i], reference[i], 1e-4, 1e-4)) << "output " << i;
  }
}

ExecutionPlan plan_for(const Graph& graph, const std::vector<Tensor>& inputs, const PlanOptions& options) {
  InputShapes shapes;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    shapes[graph.value(graph.inputs[i]).name] = inputs[i].shape();
  auto plan = plan_graph(graph, shapes, options);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  return plan.is_ok() ? std::move(plan).value() : ExecutionPlan{};
}

std::vector<Tensor> run_planned(const Graph& graph, const std::vector<Tensor>& inputs) {
  CpuExecutor executor(plan_for(graph, inputs));
  auto outputs = executor.run(inputs);
  EXPECT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  return outputs.is_ok() ? std::move(outputs).value() : std::vector<Tensor>{};
}

int count_ops(const Graph& graph, const std::string& op_type) {
  int count = 0;
  for (const Node& node : graph.nodes) count += node.op_type == op_type ? 1 : 0;
  return count;
}

const Node* find_node(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

ModelBuilder& conv_chain(ModelBuilder& m) {
  m.input("x", DataType::kFloat32, {2, 4, 9, 11}).output("y", DataType::kFloat32, {2, 6, 4, 5});
  m.initializer("w1", random_tensor(DataType::kFloat32, {6, 4, 3, 3}, 1));
  m.initializer("w2", random_tensor(DataType::kFloat32, {6, 6, 3, 3}, 2));
  m.initializer("b2", random_tensor(DataType::kFloat32, {6}, 3));
  auto& c1 = m.node("Conv", {"x", "w1"}, {"c1"}, "conv1");
  m.attr(c1, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& c2 = m.node("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2");
  m.attr(c2, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Add", {"c2", "r1"}, {"s"}, "residual");
  m.node("Relu", {"s"}, {"r2"}, "relu2");
  auto& pool = m.node("MaxPool", {"r2"}, {"y"}, "pool");
  m.attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  m.attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  return m;
}

ModelBuilder& int8_residual_stack(ModelBuilder& m) {
  constexpr DataType kF32 = DataType::kFloat32;
  m.input("x", kF32, {-1, 16, 10, 10}).output("y", kF32, {-1, 5, 10, 10});
  m.initializer("w1", random_tensor(kF32, {32, 16, 3, 3}, 41, -0.2, 0.2));
  m.initializer("b1", random_tensor(kF32, {32}, 42, -0.1, 0.1));
  m.initializer("w2", random_tensor(kF32, {32, 32, 1, 1}, 43, -0.3, 0.3));
  m.initializer("w3", random_tensor(kF32, {32, 32, 3, 3}, 44, -0.1, 0.1));
  m.initializer("w4", random_tensor(kF32, {5, 32, 1, 1}, 45, -0.3, 0.3));
  m.initializer("w5", random_tensor(kF32, {32, 32, 1, 1}, 46, -0.3, 0.3));
  const std::vector<std::int64_t> same{1, 1, 1, 1};
  m.attr(m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", same);
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  m.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  m.node("Relu", {"c2"}, {"r2"}, "relu2");
  m.attr(m.node("Conv", {"r2", "w3"}, {"c3"}, "conv3"), "pads", same);
  m.node("Conv", {"r1", "w5"}, {"c5"}, "shortcut");
  m.node("Add", {"c3", "c5"}, {"s3"}, "add3");
  m.node("Relu", {"s3"}, {"r3"}, "relu3");
  m.initializer("w6", random_tensor(kF32, {32, 32, 1, 1}, 47, -0.3, 0.3));
  m.initializer("w7", random_tensor(kF32, {32, 32, 3, 3}, 48, -0.1, 0.1));
  m.node("Conv", {"r3", "w6"}, {"c6"}, "conv6");
  m.node("Relu", {"c6"}, {"r6"}, "relu6");
  m.attr(m.node("Conv", {"r6", "w7"}, {"c7"}, "conv7"), "pads", same);
  m.node("Add", {"c7", "r3"}, {"s7"}, "add7");
  m.node("Relu", {"s7"}, {"r7"}, "relu7");
  m.node("Conv", {"r7", "w4"}, {"y"}, "conv4");
  return m;
}

}  // namespace fovea::runtime::testing
