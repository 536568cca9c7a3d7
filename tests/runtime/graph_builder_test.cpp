// GraphBuilder: a graph it builds serializes, loads back through fovea's loader with the names,
// types and attributes it was given, and runs on the CPU executor to the result worked out by hand.
#include "runtime/graph_builder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu_executor.h"
#include "runtime/onnx_loader.h"
#include "runtime/onnx_writer.h"
#include "runtime/planner.h"

namespace fovea::runtime {
namespace {

constexpr int kOpset = 17;

// x [N, 3] -> Mul by w [3] -> ReduceMax over axis 1, not kept -> peak [N].
Graph scaled_peak_graph() {
  GraphBuilder b(kOpset);
  const ValueId x = b.input("x", ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3)}});
  const ValueId w = b.constant("w", float32_tensor({3}, {1.0f, -2.0f, 0.5f}));
  const ValueId scaled = b.node("Mul", {x, w}, "scaled");
  b.output(
      b.node("ReduceMax", {scaled}, "peak", {{"axes", ints_attribute({1})}, {"keepdims", int_attribute(0)}}),
      ValueType{DataType::kFloat32, Dims{Dim::unknown("N")}});
  return std::move(b).take_graph();
}

Result<Model> round_trip(const Graph& graph) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, serialize_onnx(graph, {}));
  return parse_onnx(bytes, "scaled_peak.onnx", {});
}

TEST(GraphBuilder, LoadsBackAsBuilt) {
  Result<Model> model = round_trip(scaled_peak_graph());
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Graph& graph = model->graph;
  EXPECT_EQ(graph.opsets.at(""), kOpset);
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.value(graph.inputs[0]).name, "x");
  EXPECT_EQ(dims_string(*graph.value(graph.inputs[0]).type.dims), "[N, 3]");
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.value(graph.outputs[0]).name, "peak");
  EXPECT_EQ(dims_string(*graph.value(graph.outputs[0]).type.dims), "[N]");
  ASSERT_EQ(graph.nodes.size(), 2u);
  // Each node is named after its output.
  EXPECT_EQ(graph.nodes[0].name, "scaled");
  EXPECT_EQ(graph.nodes[1].name, "peak");
  EXPECT_EQ(graph.nodes[1].op_type, "ReduceMax");
  const Result<std::vector<std::int64_t>> axes = graph.nodes[1].attr_ints("axes");
  ASSERT_TRUE(axes.is_ok()) << axes.status().to_string();
  EXPECT_EQ(*axes, (std::vector<std::int64_t>{1}));
  const Result<std::int64_t> keepdims = graph.nodes[1].attr_int("keepdims");
  ASSERT_TRUE(keepdims.is_ok()) << keepdims.status().to_string();
  EXPECT_EQ(*keepdims, 0);
  EXPECT_TRUE(graph.is_constant(graph.find_value("w")));
}

TEST(GraphBuilder, RunsOnTheCpuExecutor) {
  Result<Model> model = round_trip(scaled_peak_graph());
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  Result<ExecutionPlan> plan = plan_graph(model->graph, {{"x", {2, 3}}});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  CpuExecutor executor(std::move(*plan));
  // Rows scale to {1, -4, 1.5} and {-4, -2, 4}.
  Result<std::vector<Tensor>> outputs = executor.run({float32_tensor({2, 3}, {1, 2, 3, -4, 1, 8})});
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  const Tensor& peak = (*outputs)[0];
  ASSERT_EQ(peak.shape(), (Shape{2}));
  EXPECT_EQ(peak.data<float>()[0], 1.5f);
  EXPECT_EQ(peak.data<float>()[1], 4.0f);
}

}  // namespace
}  // namespace fovea::runtime
