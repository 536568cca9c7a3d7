// Models of opsets below 11 load converted to opset 11's op forms (opset_conversion.h): each test
// writes an old-opset model, checks what the loader made of it, runs it on the CPU executor and
// compares with values worked out by hand (or, for Softmax, by the old semantics written out).
#include <cmath>

#include <gtest/gtest.h>

#include "onnx.pb.h"
#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"
#include "runtime/opset_conversion.h"

namespace fovea::runtime::testing {
namespace {

std::vector<Tensor> run_model(const Graph& graph, const std::vector<Tensor>& inputs) {
  CpuExecutor executor(plan_for(graph, inputs));
  auto outputs = executor.run(inputs);
  EXPECT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  return outputs.is_ok() ? std::move(outputs).value() : std::vector<Tensor>{};
}

std::vector<Tensor> run_model(const ModelBuilder& m, const std::vector<Tensor>& inputs) {
  return run_model(load_graph(m), inputs);
}

const Node& only_node(const Graph& graph, const std::string& op_type) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == op_type) return node;
  }
  ADD_FAILURE() << "no " << op_type << " node";
  return graph.nodes.front();
}

TEST(OpsetConversion, OpVersionIsTheLatestSinceVersionAtTheOpset) {
  EXPECT_EQ(op_version("Relu", 9), 6);
  EXPECT_EQ(op_version("Relu", 5), 1);
  EXPECT_EQ(op_version("Slice", 9), 1);
  EXPECT_EQ(op_version("Slice", 10), 10);
  EXPECT_EQ(op_version("Upsample", 8), 7);
  EXPECT_EQ(op_version("BatchNormalization", 8), 7);
  EXPECT_EQ(op_version("Range", 9), 0);  // since opset 11
  EXPECT_EQ(op_version("NotAnOp", 9), 0);
}

TEST(OpsetConversion, TheGraphAndItsNodesDeclareTheKernelOpset) {
  ModelBuilder m(7, 3);
  m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"y"}, "relu");
  const Graph graph = load_graph(m);
  EXPECT_EQ(graph.opsets.at(""), kKernelOpset);
  EXPECT_EQ(only_node(graph, "Relu").opset, kKernelOpset);
}

// Before opset 13, Softmax coerces its input to 2-D at `axis` and normalizes each row of the
// product of the trailing dims, not along one axis.
TEST(OpsetConversion, SoftmaxBefore13NormalizesTheCoercedRows) {
  for (const int opset : {7, 10}) {
    ModelBuilder m(opset);
    m.input("x", DataType::kFloat32, {2, 3, 4}).output("y", DataType::kFloat32, {2, 3, 4});
    m.attr(m.node("Softmax", {"x"}, {"y"}, "softmax"), "axis", std::int64_t{1});
    const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 4}, 7, -2, 2);
    Tensor expected = Tensor::allocate(DataType::kFloat32, {2, 3, 4});
    for (int row = 0; row < 2; ++row) {
      const float* in = x.data<float>() + row * 12;
      float* out = expected.data<float>() + row * 12;
      double sum = 0;
      for (int i = 0; i < 12; ++i) sum += std::exp(static_cast<double>(in[i]));
      for (int i = 0; i < 12; ++i) out[i] = static_cast<float>(std::exp(static_cast<double>(in[i])) / sum);
    }
    const auto y = run_model(m, {x});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_TRUE(tensors_near(y[0], expected, 1e-6, 1e-5)) << "opset " << opset;
  }
}

TEST(OpsetConversion, Upsample7BecomesResizeWithFloorRounding) {
  ModelBuilder m(7);
  m.input("x", DataType::kFloat32, {1, 1, 2, 2}).output("y", DataType::kFloat32, {1, 1, 4, 6});
  auto& up = m.node("Upsample", {"x"}, {"y"}, "up");
  m.attr(up, "scales", std::vector<float>{1, 1, 2, 3});
  m.attr(up, "mode", std::string("nearest"));
  const Graph graph = load_graph(m);
  EXPECT_EQ(count_ops(graph, "Upsample"), 0);
  EXPECT_EQ(only_node(graph, "Resize").attr_string("nearest_mode").value(), "floor");
  const auto y = run_model(graph, {float_tensor({1, 1, 2, 2}, {1, 2, 3, 4})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_near(y[0], float_tensor({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,  //
                                                             3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4})));
}

// Linear Upsample-9 with asymmetric coordinates: output x reads input x / 2, clamped at the edge.
TEST(OpsetConversion, Upsample9LinearUsesAsymmetricCoordinates) {
  ModelBuilder m(9);
  m.input("x", DataType::kFloat32, {1, 1, 1, 2}).output("y", DataType::kFloat32, {1, 1, 1, 4});
  m.initializer("scales", float_tensor({4}, {1, 1, 1, 2}));
  m.attr(m.node("Upsample", {"x", "scales"}, {"y"}, "up"), "mode", std::string("linear"));
  const auto y = run_model(m, {float_tensor({1, 1, 1, 2}, {1, 3})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_near(y[0], float_tensor({1, 1, 1, 4}, {1, 2, 3, 3})));
}

// Resize-10 nearest rounds up when downsampling: out x reads in ceil(x / 0.6) = 0, 2, 4.
TEST(OpsetConversion, Resize10DownsamplingRoundsUp) {
  ModelBuilder m(10);
  m.input("x", DataType::kFloat32, {1, 5}).output("y", DataType::kFloat32, {1, 3});
  m.initializer("scales", float_tensor({2}, {1, 0.6f}));
  m.attr(m.node("Resize", {"x", "scales"}, {"y"}, "resize"), "mode", std::string("nearest"));
  const Graph graph = load_graph(m);
  EXPECT_EQ(only_node(graph, "Resize").attr_string("coordinate_transformation_mode").value(), "asymmetric");
  const auto y = run_model(graph, {float_tensor({1, 5}, {10, 11, 12, 13, 14})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_near(y[0], float_tensor({1, 3}, {10, 12, 14})));
}

TEST(OpsetConversion, Resize10NearestWithRunTimeOrMixedScalesIsRefused) {
  ModelBuilder runtime_scales(10);
  runtime_scales.input("x", DataType::kFloat32, {1, 5}).input("s", DataType::kFloat32, {2});
  runtime_scales.output("y", DataType::kFloat32, {-1, -1});
  runtime_scales.node("Resize", {"x", "s"}, {"y"}, "resize");
  expect_refused_at_load(runtime_scales, "old.onnx", {"node 'resize'", "Resize-10", "opset 10", "run time"});

  ModelBuilder mixed(10);
  mixed.input("x", DataType::kFloat32, {4, 4}).output("y", DataType::kFloat32, {8, 2});
  mixed.initializer("scales", float_tensor({2}, {2, 0.5f}));
  mixed.node("Resize", {"x", "scales"}, {"y"}, "resize");
  expect_refused_at_load(mixed, "old.onnx", {"node 'resize'", "Resize-10", "upsampled and downsampled"});
}

TEST(OpsetConversion, UnconvertibleFormsAreRefusedNamingNodeOpAndVersion) {
  ModelBuilder deprecated(10);
  deprecated.input("x", DataType::kFloat32, {1, 1, 2, 2}).output("y", DataType::kFloat32, {1, 1, 4, 4});
  deprecated.initializer("scales", float_tensor({4}, {1, 1, 2, 2}));
  deprecated.node("Upsample", {"x", "scales"}, {"y"}, "up");
  expect_refused_at_load(deprecated, "old.onnx",
                         {"old.onnx", "node 'up' (Upsample)", "Upsample-10", "opset 10", "deprecated"});

  ModelBuilder per_activation(7);
  per_activation.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    per_activation.initializer(name, float_tensor({2, 3}, {1, 1, 1, 1, 1, 1}));
  }
  auto& bn = per_activation.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  per_activation.attr(bn, "spatial", std::int64_t{0});
  expect_refused_at_load(per_activation, "old.onnx", {"node 'bn'", "BatchNormalization-7", "spatial=0"});

  ModelBuilder too_new_an_op(9);
  too_new_an_op.input("n", DataType::kInt64, {}).output("y", DataType::kInt64, {-1});
  too_new_an_op.initializer("zero", int64_tensor({}, {0}));
  too_new_an_op.initializer("one", int64_tensor({}, {1}));
  too_new_an_op.node("Range", {"zero", "n", "one"}, {"y"}, "range");
  expect_refused_at_load(too_new_an_op, "old.onnx", {"node 'range'", "not an op of opset 9"});
}

// An attribute that the op's version at the model's opset takes as an input (Clip-13's bounds,
// Squeeze-13's axes) would be ignored by the kernel: refused, naming the node, the attribute and the
// version, instead of running without it.
TEST(OpsetConversion, AnAttributeThatIsAnInputAtTheOpsetIsRefused) {
  ModelBuilder clip(13);
  clip.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  auto& node = clip.node("Clip", {"x"}, {"y"}, "clip0");
  clip.attr(node, "min", 1.0f);
  expect_refused_at_load(
      clip, "m.onnx", {"node 'clip0' (Clip)", "'min'", "Clip's at opset 13", "from opset 11 it is an input"});

  ModelBuilder squeeze(13);
  squeeze.input("x", DataType::kFloat32, {1, 4}).output("y", DataType::kFloat32, {4});
  auto& sq = squeeze.node("Squeeze", {"x"}, {"y"}, "sq");
  squeeze.attr(sq, "axes", std::vector<std::int64_t>{0});
  expect_refused_at_load(squeeze, "m.onnx", {"node 'sq' (Squeeze)", "'axes'", "at opset 13"});

  // The same attribute at an opset where it is one loads (and is converted where that is needed).
  ModelBuilder old_squeeze(11);
  old_squeeze.input("x", DataType::kFloat32, {1, 4}).output("y", DataType::kFloat32, {4});
  auto& old_sq = old_squeeze.node("Squeeze", {"x"}, {"y"}, "sq");
  old_squeeze.attr(old_sq, "axes", std::vector<std::int64_t>{0});
  EXPECT_EQ(run_model(old_squeeze, {float_tensor({1, 4}, {1, 2, 3, 4})})[0].shape(), (Shape{4}));
}

// Found by the loader's fuzzer: an old form that reads or keeps its first input is refused, not
// read out of bounds, when the node has none.
TEST(OpsetConversion, OldFormsWithoutADataInputAreRefused) {
  struct Case {
    int opset;
    const char* op;
  };
  for (const Case& c : {Case{6, "Clip"}, Case{2, "Pad"}, Case{7, "Dropout"}, Case{7, "Upsample"}}) {
    SCOPED_TRACE(c.op);
    ModelBuilder m(c.opset);
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    auto& node = m.node(c.op, {},
                        std::string(c.op) == "Dropout" ? std::vector<std::string>{"y", "mask"}
                                                       : std::vector<std::string>{"y"},
                        "empty");
    m.attr(node, "min", -1.0f);
    m.attr(node, "pads", std::vector<std::int64_t>{0, 0, 0, 0});
    m.attr(node, "paddings", std::vector<std::int64_t>{0, 0, 0, 0});
    m.attr(node, "scales", std::vector<float>{1, 1});
    expect_refused_at_load(m, "old.onnx", {"node 'empty'", "no data input"});
  }
}

TEST(OpsetConversion, AttributesBecomeConstantInputs) {
  // x [2, 5] -> Slice-1 (axis 1, [1, 4)) -> Pad-2 (one column each side, value 9) -> Clip-6 [0, 3.5]
  ModelBuilder m(9);
  m.input("x", DataType::kFloat32, {2, 5}).output("y", DataType::kFloat32, {2, 5});
  auto& slice = m.node("Slice", {"x"}, {"s"}, "slice");
  m.attr(slice, "axes", std::vector<std::int64_t>{1});
  m.attr(slice, "starts", std::vector<std::int64_t>{1});
  m.attr(slice, "ends", std::vector<std::int64_t>{4});
  auto& pad = m.node("Pad", {"s"}, {"p"}, "pad");
  m.attr(pad, "pads", std::vector<std::int64_t>{0, 1, 0, 1});
  m.attr(pad, "value", 9.0f);
  auto& clip = m.node("Clip", {"p"}, {"y"}, "clip");
  m.attr(clip, "min", 0.0f);
  m.attr(clip, "max", 3.5f);
  const Graph graph = load_graph(m);
  EXPECT_EQ(only_node(graph, "Slice").inputs.size(), 4u);
  EXPECT_FALSE(only_node(graph, "Pad").has_attribute("pads"));
  EXPECT_FALSE(only_node(graph, "Clip").has_attribute("min"));
  const auto y = run_model(graph, {float_tensor({2, 5}, {0, 1, 2, 3, 4, 5, -6, 7, 8, 9})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_near(y[0], float_tensor({2, 5}, {3.5, 1, 2, 3, 3.5, 3.5, 0, 3.5, 3.5, 3.5})));
}

TEST(OpsetConversion, ReshapeTopKConcatAndCastOfOpset1) {
  // Reshape-1 [6] -> [2, 3]; TopK-1 k=2 along the last axis; Concat-1 (axis 1 by default) of the
  // values with themselves; Cast-1 of the indices to float ('to' as a string).
  ModelBuilder m(1, 3);
  m.input("x", DataType::kFloat32, {6});
  m.output("v", DataType::kFloat32, {2, 4}).output("i", DataType::kFloat32, {2, 2});
  m.attr(m.node("Reshape", {"x"}, {"r"}, "reshape"), "shape", std::vector<std::int64_t>{2, 3});
  m.attr(m.node("TopK", {"r"}, {"top", "index"}, "topk"), "k", std::int64_t{2});
  m.node("Concat", {"top", "top"}, {"v"}, "concat");
  m.attr(m.node("Cast", {"index"}, {"i"}, "cast"), "to", std::string("FLOAT"));
  const auto y = run_model(m, {float_tensor({6}, {5, 1, 3, 0, 4, 2})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(tensors_near(y[0], float_tensor({2, 4}, {5, 3, 5, 3, 4, 2, 4, 2})));
  EXPECT_TRUE(tensors_near(y[1], float_tensor({2, 2}, {0, 2, 1, 2})));
}

// Legacy broadcasting: B [3] at axis 1 of A [2, 3, 2] adds B[j] to A[:, j, :].
TEST(OpsetConversion, LegacyBroadcastAtAnAxis) {
  ModelBuilder m(6, 3);
  m.input("a", DataType::kFloat32, {2, 3, 2}).output("y", DataType::kFloat32, {2, 3, 2});
  m.initializer("b", float_tensor({3}, {10, 20, 30}));
  auto& add = m.node("Add", {"a", "b"}, {"y"}, "add");
  m.attr(add, "broadcast", std::int64_t{1});
  m.attr(add, "axis", std::int64_t{1});
  const Graph graph = load_graph(m);
  EXPECT_EQ(count_ops(graph, "Unsqueeze"), 1);
  const auto y = run_model(graph, {float_tensor({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_near(y[0], float_tensor({2, 3, 2}, {10, 11, 22, 23, 34, 35, 16, 17, 28, 29, 40, 41})));
}

// Dropout-7's mask has the data's type; BatchNormalization-1 carries is_test and consumed_inputs.
TEST(OpsetConversion, BatchNormAndDropoutOfOldOpsets) {
  ModelBuilder m(7, 3);
  m.input("x", DataType::kFloat32, {1, 2, 1, 2});
  m.output("y", DataType::kFloat32, {1, 2, 1, 2}).output("mask", DataType::kFloat32, {1, 2, 1, 2});
  m.initializer("scale", float_tensor({2}, {2, 3}));
  m.initializer("bias", float_tensor({2}, {1, -1}));
  m.initializer("mean", float_tensor({2}, {1, 2}));
  m.initializer("var", float_tensor({2}, {4, 9}));
  auto& bn = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"n"}, "bn");
  m.attr(bn, "epsilon", 0.0f);
  m.attr(bn, "spatial", std::int64_t{1});
  m.attr(m.node("Dropout", {"n"}, {"y", "mask"}, "dropout"), "ratio", 0.5f);
  const auto y = run_model(m, {float_tensor({1, 2, 1, 2}, {1, 5, 2, 8})});
  ASSERT_EQ(y.size(), 2u);
  // (x - mean) / sqrt(var) * scale + bias per channel.
  EXPECT_TRUE(tensors_near(y[0], float_tensor({1, 2, 1, 2}, {1, 5, -1, 5})));
  EXPECT_TRUE(tensors_near(y[1], float_tensor({1, 2, 1, 2}, {1, 1, 1, 1})));

  ModelBuilder training(5, 3);
  training.input("x", DataType::kFloat32, {1, 2, 1, 2}).output("y", DataType::kFloat32, {1, 2, 1, 2});
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    training.initializer(name, float_tensor({2}, {1, 1}));
  }
  auto& bn6 = training.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  training.attr(bn6, "is_test", std::int64_t{1});
  training.attr(bn6, "consumed_inputs", std::vector<std::int64_t>{0, 0, 0, 1, 1});
  const Graph graph = load_graph(training);
  EXPECT_FALSE(only_node(graph, "BatchNormalization").has_attribute("is_test"));
  EXPECT_FALSE(only_node(graph, "BatchNormalization").has_attribute("consumed_inputs"));
}

}  // namespace
}  // namespace fovea::runtime::testing
