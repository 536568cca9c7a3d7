// The channels-last pass runs a decoder's upsampling Resizes and Concats in NHWC when only
// convolutions (or other such Resizes and Concats) read them: SegFormer's head (tokens -> map ->
// Resize -> Concat -> 1x1 convolution) and a YOLO neck (convolution -> nearest x2 -> Concat with a
// convolution's output -> convolution) then transpose only at the network's ends. A Resize or Concat
// that anything else reads, or a Resize that shrinks a value made in NCHW, keeps NCHW. Results equal
// the unoptimized graph's in every case.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

const Shape kInput = {2, 3, 16, 14};

std::vector<Tensor> random_input() {
  return {random_tensor(DataType::kFloat32, kInput, 21)};
}

ExecutionPlan plan_channels_last(const Graph& graph) {
  return plan_for(graph, random_input(), {.channels_last = true});
}

const Node* find_op(const Graph& graph, const std::string& op_type) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == op_type) return &node;
  }
  return nullptr;
}

onnx::NodeProto& conv(ModelBuilder& m, const std::string& in, const std::string& weights,
                      const std::string& out, std::int64_t stride, std::int64_t pad) {
  auto& node = m.node("Conv", {in, weights}, {out}, out + "_conv");
  m.attr(node, "strides", std::vector<std::int64_t>{stride, stride});
  m.attr(node, "pads", std::vector<std::int64_t>{pad, pad, pad, pad});
  return node;
}

// SegFormer's decode head in small: a stride-2 convolution's map as tokens [2, 56, 8], a linear
// layer on them, back to a map [2, 6, 8, 7], bilinear x2 to [2, 6, 16, 14], concatenated with a
// full-size convolution's output and mixed by a 1x1 convolution. `extra_reader` also makes the
// Concat's output a graph output (a reader that is not a convolution).
ModelBuilder& segformer_head(ModelBuilder& m, bool extra_reader = false) {
  m.input("x", DataType::kFloat32, kInput).output("y", DataType::kFloat32, {2, 4, 16, 14});
  if (extra_reader) m.output("cat", DataType::kFloat32, {2, 12, 16, 14});
  m.initializer("w1", random_tensor(DataType::kFloat32, {8, 3, 3, 3}, 1));
  m.initializer("w2", random_tensor(DataType::kFloat32, {6, 3, 3, 3}, 2));
  m.initializer("w3", random_tensor(DataType::kFloat32, {4, 12, 1, 1}, 3));
  m.initializer("proj", random_tensor(DataType::kFloat32, {8, 6}, 4));
  m.initializer("tokens_shape", Tensor::from_vector<std::int64_t>(DataType::kInt64, {3}, {2, 8, 56}));
  m.initializer("map_shape", Tensor::from_vector<std::int64_t>(DataType::kInt64, {4}, {2, 6, 8, 7}));
  m.initializer("scales", Tensor::from_vector<float>(DataType::kFloat32, {4}, {1, 1, 2, 2}));
  conv(m, "x", "w1", "c1", 2, 1);  // [2, 8, 8, 7]
  m.node("Reshape", {"c1", "tokens_shape"}, {"flat"});
  auto& to_tokens = m.node("Transpose", {"flat"}, {"tokens"});
  m.attr(to_tokens, "perm", std::vector<std::int64_t>{0, 2, 1});
  m.node("MatMul", {"tokens", "proj"}, {"projected"});  // [2, 56, 6]
  auto& to_channels = m.node("Transpose", {"projected"}, {"channels"});
  m.attr(to_channels, "perm", std::vector<std::int64_t>{0, 2, 1});
  m.node("Reshape", {"channels", "map_shape"}, {"map"});
  auto& resize = m.node("Resize", {"map", "", "scales"}, {"up"}, "upsample");
  m.attr(resize, "mode", std::string("linear"));
  conv(m, "x", "w2", "c2", 1, 1);  // [2, 6, 16, 14]
  auto& concat = m.node("Concat", {"up", "c2"}, {"cat"}, "concat");
  m.attr(concat, "axis", std::int64_t{1});
  conv(m, "cat", "w3", "y", 1, 0);
  return m;
}

TEST(PassChannelsLastResize, SegformerHeadTransposesOnlyAtItsEnds) {
  ModelBuilder m;
  const Graph graph = load_graph(segformer_head(m));
  const ExecutionPlan plan = plan_channels_last(graph);
  // x into NHWC once for both convolutions, y back to NCHW; the tokens' round trips are views.
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2);
  const Node* resize = find_op(plan.graph, "Resize");
  ASSERT_NE(resize, nullptr);
  EXPECT_EQ(dims_string(*plan.graph.value(resize->inputs[0]).type.dims), "[2, 8, 7, 6]");
  EXPECT_EQ(dims_string(*plan.graph.value(resize->outputs[0]).type.dims), "[2, 16, 14, 6]");
  const Node* concat = find_op(plan.graph, "Concat");
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ(*concat->attr_int("axis"), 3);
  expect_same_results(graph, plan, random_input());
}

TEST(PassChannelsLastResize, ConcatThatAnOutputReadsStaysNchw) {
  ModelBuilder m;
  const Graph graph = load_graph(segformer_head(m, true));
  const ExecutionPlan plan = plan_channels_last(graph);
  const Node* concat = find_op(plan.graph, "Concat");
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ(*concat->attr_int("axis"), 1);
  EXPECT_EQ(dims_string(*plan.graph.value(concat->outputs[0]).type.dims), "[2, 12, 16, 14]");
  // The Resize feeds that Concat, which does not take NHWC: it stays NCHW too.
  const Node* resize = find_op(plan.graph, "Resize");
  ASSERT_NE(resize, nullptr);
  EXPECT_EQ(dims_string(*plan.graph.value(resize->outputs[0]).type.dims), "[2, 6, 16, 14]");
  expect_same_results(graph, plan, random_input());
}

// A YOLO neck: c1 [2, 5, 8, 7] -> nearest to sizes [2, 5, 16, 14] -> Concat with c2 -> conv.
// `sizes` and `axes` (opset 18) are the other ways to say what a Resize resizes.
ModelBuilder& yolo_neck(ModelBuilder& m, bool with_axes) {
  m.input("x", DataType::kFloat32, kInput).output("y", DataType::kFloat32, {2, 4, 16, 14});
  m.initializer("w1", random_tensor(DataType::kFloat32, {5, 3, 3, 3}, 5));
  m.initializer("w2", random_tensor(DataType::kFloat32, {7, 3, 3, 3}, 6));
  m.initializer("w3", random_tensor(DataType::kFloat32, {4, 12, 3, 3}, 7));
  if (with_axes) {
    m.initializer("sizes", Tensor::from_vector<std::int64_t>(DataType::kInt64, {2}, {16, 14}));
  } else {
    m.initializer("sizes", Tensor::from_vector<std::int64_t>(DataType::kInt64, {4}, {2, 5, 16, 14}));
  }
  conv(m, "x", "w1", "c1", 2, 1);
  auto& resize = m.node("Resize", {"c1", "", "", "sizes"}, {"up"}, "upsample");
  m.attr(resize, "mode", std::string("nearest"));
  if (with_axes) m.attr(resize, "axes", std::vector<std::int64_t>{2, -1});
  conv(m, "x", "w2", "c2", 1, 1);
  auto& concat = m.node("Concat", {"c2", "up"}, {"cat"}, "concat");
  m.attr(concat, "axis", std::int64_t{-3});
  conv(m, "cat", "w3", "y", 1, 1);
  return m;
}

TEST(PassChannelsLastResize, YoloNeckTransposesOnlyAtItsEnds) {
  for (const bool with_axes : {false, true}) {
    ModelBuilder m(with_axes ? 18 : 17);
    const Graph graph = load_graph(yolo_neck(m, with_axes));
    const ExecutionPlan plan = plan_channels_last(graph);
    EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2) << with_axes;
    const Node* resize = find_op(plan.graph, "Resize");
    ASSERT_NE(resize, nullptr);
    EXPECT_EQ(dims_string(*plan.graph.value(resize->outputs[0]).type.dims), "[2, 16, 14, 5]") << with_axes;
    if (with_axes) {
      EXPECT_EQ(*resize->attr_ints("axes"), (std::vector<std::int64_t>{1, 2}));
    }
    expect_same_results(graph, plan, random_input());
  }
}

// x (made in NCHW) -> bilinear to half size -> conv: converting the Resize would transpose x, the
// larger of the two; the convolution's input is transposed instead.
TEST(PassChannelsLastResize, ShrinkingResizeStaysNchw) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, kInput).output("y", DataType::kFloat32, {2, 4, 8, 7});
  m.initializer("w", random_tensor(DataType::kFloat32, {4, 3, 3, 3}, 8));
  m.initializer("scales", Tensor::from_vector<float>(DataType::kFloat32, {4}, {1, 1, 0.5F, 0.5F}));
  auto& resize = m.node("Resize", {"x", "", "scales"}, {"down"}, "downsample");
  m.attr(resize, "mode", std::string("linear"));
  conv(m, "down", "w", "y", 1, 1);
  const Graph graph = load_graph(m);
  const ExecutionPlan plan = plan_channels_last(graph);
  const Node* converted = find_op(plan.graph, "Resize");
  ASSERT_NE(converted, nullptr);
  EXPECT_EQ(dims_string(*plan.graph.value(converted->outputs[0]).type.dims), "[2, 3, 8, 7]");
  expect_same_results(graph, plan, random_input());
}

}  // namespace
}  // namespace fovea::runtime::testing
