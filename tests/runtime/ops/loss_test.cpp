// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ops/loss.cpp) against hand-computed
// losses: every reduction, with and without weights, ignore_index (negative too), [N, C] and
// [N, C, d] inputs, the log_prob output, and the inputs each must reject.
#include <cmath>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

// Log-probabilities [2, 3] and targets selecting -3 and -0.5.
const Tensor kLogProb = float_tensor({2, 3}, {-1, -2, -3, -0.5f, -1.5f, -2.5f});
const Tensor kTargets = int64_tensor({2}, {2, 0});
const Tensor kWeight = float_tensor({3}, {1, 2, 3});

Node nll(const char* reduction, int inputs = 2) {
  return NodeBuilder("NegativeLogLikelihoodLoss", 13).inputs(inputs).attr("reduction", reduction).build();
}

Node nll_ignoring(const char* reduction, std::int64_t ignore_index, int inputs = 2) {
  return NodeBuilder("NegativeLogLikelihoodLoss", 13)
      .inputs(inputs)
      .attr("reduction", reduction)
      .attr("ignore_index", ignore_index)
      .build();
}

Tensor scalar(float value) {
  return float_tensor({}, {value});
}

TEST(OpNegativeLogLikelihoodLoss, ReducesUnweightedLosses) {
  EXPECT_TRUE(tensors_near(run_node(nll("none"), {kLogProb, kTargets})[0], float_tensor({2}, {3, 0.5f})));
  EXPECT_TRUE(tensors_near(run_node(nll("sum"), {kLogProb, kTargets})[0], scalar(3.5f)));
  EXPECT_TRUE(tensors_near(run_node(nll("mean"), {kLogProb, kTargets})[0], scalar(1.75f)));
  // mean is the default; int32 targets read the same.
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("NegativeLogLikelihoodLoss", 13).inputs(2).build(),
                                    {kLogProb, tensor_of(DataType::kInt32, {2}, {2, 0})})[0],
                           scalar(1.75f)));
}

TEST(OpNegativeLogLikelihoodLoss, WeightsScaleLossesAndTheMeanDividesByTheirSum) {
  EXPECT_TRUE(
      tensors_near(run_node(nll("none", 3), {kLogProb, kTargets, kWeight})[0], float_tensor({2}, {9, 0.5f})));
  EXPECT_TRUE(tensors_near(run_node(nll("sum", 3), {kLogProb, kTargets, kWeight})[0], scalar(9.5f)));
  EXPECT_TRUE(tensors_near(run_node(nll("mean", 3), {kLogProb, kTargets, kWeight})[0], scalar(9.5f / 4)));
}

TEST(OpNegativeLogLikelihoodLoss, IgnoredTargetsCountNeitherLossNorWeight) {
  EXPECT_TRUE(
      tensors_near(run_node(nll_ignoring("none", 0), {kLogProb, kTargets})[0], float_tensor({2}, {3, 0})));
  EXPECT_TRUE(tensors_near(run_node(nll_ignoring("mean", 0), {kLogProb, kTargets})[0], scalar(3)));
  EXPECT_TRUE(
      tensors_near(run_node(nll_ignoring("mean", 0, 3), {kLogProb, kTargets, kWeight})[0], scalar(3)));
  // A negative ignore_index: the target -1 is skipped, not read from the end.
  EXPECT_TRUE(tensors_near(run_node(nll_ignoring("sum", -1), {kLogProb, int64_tensor({2}, {-1, 1})})[0],
                           scalar(1.5f)));
  // Every target ignored: the mean divides 0 by 0, as ONNX's reference does.
  const Tensor all_ignored = run_node(nll_ignoring("mean", 2), {kLogProb, int64_tensor({2}, {2, 2})})[0];
  EXPECT_TRUE(std::isnan(all_ignored.data<float>()[0]));
}

TEST(OpNegativeLogLikelihoodLoss, ReadsTheClassAtEachPosition) {
  // [N=1, C=2, d=3]: class 0 holds 0 1 2, class 1 holds 3 4 5.
  const Tensor scores = float_tensor({1, 2, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor targets = int64_tensor({1, 3}, {1, 0, 1});
  EXPECT_TRUE(tensors_near(run_node(nll("none"), {scores, targets})[0], float_tensor({1, 3}, {-3, -1, -5})));
  EXPECT_TRUE(tensors_near(run_node(nll("mean"), {scores, targets})[0], scalar(-3)));
}

TEST(OpNegativeLogLikelihoodLoss, InfersTheOutputShapeFromTheReduction) {
  const std::vector<ValueType> inputs = {
      {DataType::kFloat32, Dims{Dim::unknown(), Dim::known_size(5), Dim::known_size(7)}},
      {DataType::kInt64, Dims{Dim::unknown(), Dim::known_size(7)}}};
  const auto none = infer_types(nll("none"), inputs);
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ((*none)[0].dims, inputs[1].dims);
  const auto sum = infer_types(nll("sum"), inputs);
  ASSERT_TRUE(sum.is_ok());
  EXPECT_EQ((*sum)[0].dims, Dims{});
}

TEST(OpNegativeLogLikelihoodLoss, RejectsBadTargetsShapesAndAttributes) {
  EXPECT_TRUE(fails_with(run_node_status(nll("mean"), {kLogProb, int64_tensor({2}, {3, 0})}),
                         StatusCode::kInvalidArgument, "outside the 3 classes"));
  EXPECT_TRUE(fails_with(run_node_status(nll("mean"), {kLogProb, int64_tensor({2}, {-1, 0})}),
                         StatusCode::kInvalidArgument, "outside"));
  EXPECT_TRUE(fails_with(run_node_status(nll("mean"), {kLogProb, int64_tensor({3}, {0, 0, 0})}),
                         StatusCode::kInvalidArgument, "targets of shape"));
  EXPECT_TRUE(fails_with(run_node_status(nll("mean", 3), {kLogProb, kTargets, float_tensor({2}, {1, 1})}),
                         StatusCode::kInvalidArgument, "weight of shape"));
  EXPECT_TRUE(fails_with(run_node_status(nll("max"), {kLogProb, kTargets}), StatusCode::kInvalidArgument,
                         "reduction 'max'"));
  EXPECT_TRUE(fails_with(run_node_status(nll("mean"), {float_tensor({3}, {1, 2, 3}), int64_tensor({}, {0})}),
                         StatusCode::kInvalidArgument, "rank"));
  EXPECT_TRUE(fails_with(run_node_status(nll("mean"), {kLogProb, float_tensor({2}, {2, 0})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

// ---- SoftmaxCrossEntropyLoss ----

Node sce(const char* reduction, int inputs = 2, int outputs = 1) {
  return NodeBuilder("SoftmaxCrossEntropyLoss", 13)
      .inputs(inputs)
      .outputs(outputs)
      .attr("reduction", reduction)
      .build();
}

const float kLog4 = std::log(4.0f);
const float kLog4Over3 = std::log(4.0f / 3.0f);
const float kLog3 = std::log(3.0f);

TEST(OpSoftmaxCrossEntropyLoss, TakesTheLogSoftmaxOfTheScores) {
  // Softmax of [0, ln 3] is [1/4, 3/4].
  const Tensor scores = float_tensor({2, 2}, {0, kLog3, 0, kLog3});
  const auto out = run_node(sce("none", 2, 2), {scores, int64_tensor({2}, {0, 1})});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({2}, {kLog4, kLog4Over3})));
  EXPECT_TRUE(tensors_near(out[1], float_tensor({2, 2}, {-kLog4, -kLog4Over3, -kLog4, -kLog4Over3})));
  EXPECT_TRUE(
      tensors_near(run_node(sce("sum"), {scores, int64_tensor({2}, {0, 1})})[0], scalar(kLog4 + kLog4Over3)));
  // Large scores: the max shift keeps exp finite.
  EXPECT_TRUE(tensors_near(
      run_node(sce("mean"), {float_tensor({1, 3}, {1000, 1000, 1000}), int64_tensor({1}, {2})})[0],
      scalar(kLog3)));
}

TEST(OpSoftmaxCrossEntropyLoss, WeightsAndIgnoreIndexAtEachPosition) {
  // [N=1, C=2, d=2]: position 0 has softmax [1/4, 3/4], position 1 [3/4, 1/4].
  const Tensor scores = float_tensor({1, 2, 2}, {0, kLog3, kLog3, 0});
  const Tensor targets = int64_tensor({1, 2}, {0, 0});
  EXPECT_TRUE(tensors_near(run_node(sce("mean"), {scores, targets})[0], scalar((kLog4 + kLog4Over3) / 2)));
  const Tensor weight = float_tensor({2}, {2, 5});
  EXPECT_TRUE(tensors_near(run_node(sce("mean", 3), {scores, int64_tensor({1, 2}, {0, 1}), weight})[0],
                           scalar((2 * kLog4 + 5 * kLog4) / 7)));
  const Node ignoring = NodeBuilder("SoftmaxCrossEntropyLoss", 13)
                            .inputs(2)
                            .attr("reduction", "none")
                            .attr("ignore_index", 1)
                            .build();
  EXPECT_TRUE(tensors_near(run_node(ignoring, {scores, int64_tensor({1, 2}, {1, 0})})[0],
                           float_tensor({1, 2}, {0, kLog4Over3})));
}

TEST(OpSoftmaxCrossEntropyLoss, RejectsTargetsOutsideTheClasses) {
  EXPECT_TRUE(
      fails_with(run_node_status(sce("mean"), {float_tensor({1, 3}, {1, 2, 3}), int64_tensor({1}, {3})}),
                 StatusCode::kInvalidArgument, "outside the 3 classes"));
}

}  // namespace
}  // namespace fovea::runtime::testing
