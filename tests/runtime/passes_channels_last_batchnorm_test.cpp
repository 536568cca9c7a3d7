// The channels-last pass runs a pre-activation BatchNormalization (DenseNet's: Concat -> BatchNorm ->
// Relu -> convolution) in NHWC as fovea.BatchNormalization with its Relu in the same pass, so a dense
// block transposes only at its ends. A normalization whose output something besides its Relu reads
// keeps the Relu apart; results equal the unoptimized graph's in every case.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

const Shape kInput = {2, 3, 16, 14};

std::vector<Tensor> random_input() {
  return {random_tensor(DataType::kFloat32, kInput, 31)};
}

void conv(ModelBuilder& m, const std::string& in, const std::string& weights, const std::string& out,
          std::int64_t pad) {
  auto& node = m.node("Conv", {in, weights}, {out}, out + "_conv");
  m.attr(node, "pads", std::vector<std::int64_t>{pad, pad, pad, pad});
}

// Normalization parameters for `channels`, named after `name`.
void batch_norm(ModelBuilder& m, const std::string& in, const std::string& out, std::int64_t channels,
                std::uint32_t seed) {
  for (const char* param : {"scale", "bias", "mean", "var"}) {
    const bool var = std::string(param) == "var";
    m.initializer(out + "_" + param,
                  random_tensor(DataType::kFloat32, {channels}, seed++, var ? 0.5 : -1.0, var ? 2.0 : 1.0));
  }
  m.node("BatchNormalization", {in, out + "_scale", out + "_bias", out + "_mean", out + "_var"}, {out},
         out + "_bn");
}

// A dense block in small: c0 and c1 concatenated, normalized, ReLU'd and convolved into c2; then
// c0, c1 and c2 concatenated, normalized, ReLU'd and mixed by a 1x1 convolution. `bn_output` also
// makes the first normalization's output a graph output.
ModelBuilder& dense_block(ModelBuilder& m, bool bn_output) {
  m.input("x", DataType::kFloat32, kInput).output("y", DataType::kFloat32, {2, 5, 16, 14});
  if (bn_output) m.output("n1", DataType::kFloat32, {2, 12, 16, 14});
  m.initializer("w0", random_tensor(DataType::kFloat32, {8, 3, 3, 3}, 1));
  m.initializer("w1", random_tensor(DataType::kFloat32, {4, 8, 3, 3}, 2));
  m.initializer("w2", random_tensor(DataType::kFloat32, {4, 12, 3, 3}, 3));
  m.initializer("w3", random_tensor(DataType::kFloat32, {5, 16, 1, 1}, 4));
  conv(m, "x", "w0", "c0", 1);
  conv(m, "c0", "w1", "c1", 1);
  m.attr(m.node("Concat", {"c0", "c1"}, {"cat1"}, "concat1"), "axis", std::int64_t{1});
  batch_norm(m, "cat1", "n1", 12, 10);
  m.node("Relu", {"n1"}, {"r1"}, "relu1");
  conv(m, "r1", "w2", "c2", 1);
  m.attr(m.node("Concat", {"c0", "c1", "c2"}, {"cat2"}, "concat2"), "axis", std::int64_t{1});
  batch_norm(m, "cat2", "n2", 16, 20);
  m.node("Relu", {"n2"}, {"r2"}, "relu2");
  conv(m, "r2", "w3", "y", 0);
  return m;
}

std::vector<const Node*> fovea_batch_norms(const Graph& graph) {
  std::vector<const Node*> found;
  for (const Node& node : graph.nodes) {
    if (node.domain == "fovea" && node.op_type == "BatchNormalization") found.push_back(&node);
  }
  return found;
}

TEST(PassChannelsLastBatchNorm, DenseBlockTransposesOnlyAtItsEnds) {
  ModelBuilder m;
  const Graph graph = load_graph(dense_block(m, false));
  const ExecutionPlan plan = plan_for(graph, random_input(), {.channels_last = true});
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2);  // x in, y out
  EXPECT_EQ(count_ops(plan.graph, "Relu"), 0);
  const std::vector<const Node*> norms = fovea_batch_norms(plan.graph);
  ASSERT_EQ(norms.size(), 2u);
  for (const Node* norm : norms) {
    EXPECT_EQ(*norm->attr_int("channels_last"), 1);
    EXPECT_EQ(*norm->attr_string("activation"), "Relu");
  }
  EXPECT_EQ(dims_string(*plan.graph.value(norms[1]->outputs[0]).type.dims), "[2, 16, 14, 16]");
  expect_same_results(graph, plan, random_input());
}

TEST(PassChannelsLastBatchNorm, ANormalizationReadBesidesItsReluKeepsTheReluApart) {
  ModelBuilder m;
  const Graph graph = load_graph(dense_block(m, true));
  const ExecutionPlan plan = plan_for(graph, random_input(), {.channels_last = true});
  const std::vector<const Node*> norms = fovea_batch_norms(plan.graph);
  ASSERT_EQ(norms.size(), 2u);
  EXPECT_FALSE(norms[0]->has_attribute("activation"));
  EXPECT_EQ(*norms[1]->attr_string("activation"), "Relu");
  EXPECT_EQ(count_ops(plan.graph, "Relu"), 1);
  expect_same_results(graph, plan, random_input());
}

}  // namespace
}  // namespace fovea::runtime::testing
