// The channels-last pass carries NHWC through 2-D MaxPools: a pool reading a convolution's output
// becomes fovea.MaxPool (channels_last=1), so the chain transposes only at its ends; pools of other
// values, or whose Indices are read, stay NCHW. Results equal the unoptimized graph's.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

const Shape kInput = {2, 3, 13, 11};

std::vector<Tensor> random_input() {
  return {random_tensor(DataType::kFloat32, kInput, 11)};
}

ExecutionPlan plan_channels_last(const Graph& graph) {
  return plan_for(graph, random_input(), {.channels_last = true});
}

// x [2, 3, 13, 11] -> conv -> relu -> 3x3/2 max pool (ResNet's stem) -> p [2, 8, 7, 6] -> conv -> y.
// `indices` names the pool's Indices output ("" for none); `indices_out` makes it a graph output.
ModelBuilder& conv_pool_conv(ModelBuilder& m, const std::string& indices = "", bool indices_out = false) {
  m.input("x", DataType::kFloat32, kInput).output("y", DataType::kFloat32, {2, 5, 7, 6});
  if (indices_out) m.output(indices, DataType::kInt64, {2, 8, 7, 6});
  m.initializer("w1", random_tensor(DataType::kFloat32, {8, 3, 3, 3}, 1));
  m.initializer("w2", random_tensor(DataType::kFloat32, {5, 8, 3, 3}, 2));
  auto& c1 = m.node("Conv", {"x", "w1"}, {"c1"}, "conv1");
  m.attr(c1, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& pool = m.node(
      "MaxPool", {"r1"},
      indices.empty() ? std::vector<std::string>{"p"} : std::vector<std::string>{"p", indices}, "pool");
  m.attr(pool, "kernel_shape", std::vector<std::int64_t>{3, 3});
  m.attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  m.attr(pool, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  auto& c2 = m.node("Conv", {"p", "w2"}, {"y"}, "conv2");
  m.attr(c2, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  return m;
}

const Node* find_pool(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == "MaxPool") return &node;
  }
  return nullptr;
}

TEST(PassChannelsLastPool, ConvPoolConvTransposesOnlyAtItsEnds) {
  ModelBuilder m;
  const Graph graph = load_graph(conv_pool_conv(m));
  const ExecutionPlan plan = plan_channels_last(graph);
  // Into NHWC before the first convolution, back to NCHW after the last: none around the pool.
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2);
  EXPECT_EQ(count_ops(plan.graph, "FusedConv"), 2);
  const Node* pool = find_pool(plan.graph);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->domain, "fovea");
  EXPECT_EQ(*pool->attr_int("channels_last"), 1);
  ASSERT_EQ(pool->outputs.size(), 1u);
  EXPECT_EQ(dims_string(*plan.graph.value(pool->inputs[0]).type.dims), "[2, 13, 11, 8]");
  EXPECT_EQ(dims_string(*plan.graph.value(pool->outputs[0]).type.dims), "[2, 7, 6, 8]");
  expect_same_results(graph, plan, random_input());
}

TEST(PassChannelsLastPool, UnreadIndicesAreDropped) {
  ModelBuilder m;
  const Graph graph = load_graph(conv_pool_conv(m, "unread_indices"));
  const ExecutionPlan plan = plan_channels_last(graph);
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2);
  const Node* pool = find_pool(plan.graph);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->domain, "fovea");
  EXPECT_EQ(pool->outputs.size(), 1u);
  expect_same_results(graph, plan, random_input());
}

TEST(PassChannelsLastPool, PoolWithReadIndicesStaysNchw) {
  ModelBuilder m;
  const Graph graph = load_graph(conv_pool_conv(m, "indices", true));
  const ExecutionPlan plan = plan_channels_last(graph);
  const Node* pool = find_pool(plan.graph);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->domain, "");
  EXPECT_EQ(pool->outputs.size(), 2u);
  // x and p into NHWC, c1 and y back.
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 4);
  expect_same_results(graph, plan, random_input());
}

TEST(PassChannelsLastPool, PoolOfAnNchwValueStaysNchw) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, kInput).output("y", DataType::kFloat32, {2, 5, 6, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {5, 3, 3, 3}, 3));
  auto& pool = m.node("MaxPool", {"x"}, {"p"}, "pool");
  m.attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  m.attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  auto& conv = m.node("Conv", {"p", "w"}, {"y"}, "conv");
  m.attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  const Graph graph = load_graph(m);
  const ExecutionPlan plan = plan_channels_last(graph);
  const Node* converted = find_pool(plan.graph);
  ASSERT_NE(converted, nullptr);
  EXPECT_EQ(converted->domain, "");
  // Converting it would transpose x instead of p: one Transpose either way, so p's stays.
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2);
  expect_same_results(graph, plan, random_input());
}

}  // namespace
}  // namespace fovea::runtime::testing
