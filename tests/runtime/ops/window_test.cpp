// HannWindow, HammingWindow and BlackmanWindow (ops/window.cpp) and MeanVarianceNormalization
// (ops/mvn.cpp) against hand-computed values, plus the inputs each must reject.
#include <cmath>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor window(const char* op_type, std::int64_t size, std::int64_t periodic = 1) {
  return run_node(NodeBuilder(op_type, 17).attr("periodic", periodic).build(), {int64_tensor({}, {size})})[0];
}

TEST(OpHannWindow, PeriodicAndSymmetric) {
  EXPECT_TRUE(tensors_near(window("HannWindow", 4), float_tensor({4}, {0, 0.5f, 1, 0.5f})));
  EXPECT_TRUE(tensors_near(window("HannWindow", 5, 0), float_tensor({5}, {0, 0.5f, 1, 0.5f, 0})));
  // One sample is [1] (scipy, PyTorch); none is empty.
  EXPECT_TRUE(tensors_near(window("HannWindow", 1, 0), float_tensor({1}, {1})));
  EXPECT_EQ(window("HannWindow", 0).numel(), 0);
}

TEST(OpHannWindow, OutputDatatypeAndSizeDtype) {
  const Node as_double = NodeBuilder("HannWindow", 17).attr("output_datatype", 11).build();
  EXPECT_TRUE(tensors_near(run_node(as_double, {tensor_of(DataType::kInt32, {}, {4})})[0],
                           tensor_of(DataType::kFloat64, {4}, {0, 0.5, 1, 0.5}), 1e-12, 1e-12));
  const Node as_half = NodeBuilder("HannWindow", 17).attr("output_datatype", 10).build();
  EXPECT_TRUE(tensors_near(run_node(as_half, {int64_tensor({}, {4})})[0],
                           tensor_of(DataType::kFloat16, {4}, {0, 0.5, 1, 0.5})));
}

TEST(OpHannWindow, RejectsBadSizeAndDatatype) {
  const Node node = NodeBuilder("HannWindow", 17).build();
  EXPECT_TRUE(fails_with(run_node_status(node, {int64_tensor({}, {-2})}), StatusCode::kInvalidArgument,
                         "size -2 is negative"));
  EXPECT_TRUE(
      fails_with(run_node_status(node, {int64_tensor({2}, {3, 3})}), StatusCode::kInvalidArgument, "scalar"));
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({}, {3})}), StatusCode::kInvalidArgument,
                         "type mismatch"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("HannWindow", 17).attr("output_datatype", 3).build(),
                                         {int64_tensor({}, {3})}),
                         StatusCode::kUnsupported, "output_datatype"));
}

TEST(OpHammingWindow, PeriodicAndSymmetric) {
  const float a0 = 25.0f / 46.0f;
  const float low = a0 - (1 - a0);
  EXPECT_TRUE(tensors_near(window("HammingWindow", 4), float_tensor({4}, {low, a0, 1, a0})));
  EXPECT_TRUE(tensors_near(window("HammingWindow", 3, 0), float_tensor({3}, {low, 1, low})));
}

TEST(OpBlackmanWindow, PeriodicAndSymmetric) {
  // 0.42 - 0.5 cos(2 pi n / 4) + 0.08 cos(4 pi n / 4).
  EXPECT_TRUE(tensors_near(window("BlackmanWindow", 4), float_tensor({4}, {0, 0.34f, 1, 0.34f}), 1e-6));
  EXPECT_TRUE(tensors_near(window("BlackmanWindow", 5, 0), float_tensor({5}, {0, 0.34f, 1, 0.34f, 0}), 1e-6));
}

// ---- MeanVarianceNormalization ----

TEST(OpMeanVarianceNormalization, NormalizesOverTheDefaultAxes) {
  // Axes [0, 2, 3]: one group per channel.
  const Node node = NodeBuilder("MeanVarianceNormalization", 13).build();
  EXPECT_TRUE(tensors_near(run_node(node, {float_tensor({1, 2, 1, 2}, {1, 3, 5, 9})})[0],
                           float_tensor({1, 2, 1, 2}, {-1, 1, -1, 1})));
  // [1, 2, 3, 4]: mean 2.5, variance 1.25.
  const float s = 1 / std::sqrt(1.25f);
  EXPECT_TRUE(tensors_near(run_node(node, {float_tensor({1, 1, 1, 4}, {1, 2, 3, 4})})[0],
                           float_tensor({1, 1, 1, 4}, {-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s})));
}

TEST(OpMeanVarianceNormalization, AnyAxesAndConstantGroups) {
  // Axes [1] of [2, 2]: rows; a constant row divides 0 by the epsilon, giving 0.
  const Node rows =
      NodeBuilder("MeanVarianceNormalization", 13).attr("axes", std::vector<std::int64_t>{-1}).build();
  EXPECT_TRUE(tensors_near(run_node(rows, {float_tensor({2, 2}, {1, 3, 2, 2})})[0],
                           float_tensor({2, 2}, {-1, 1, 0, 0})));
  // Axes [0] of [2, 2]: columns, which are not contiguous.
  const Node columns =
      NodeBuilder("MeanVarianceNormalization", 13).attr("axes", std::vector<std::int64_t>{0}).build();
  EXPECT_TRUE(tensors_near(run_node(columns, {float_tensor({2, 2}, {1, 7, 3, 5})})[0],
                           float_tensor({2, 2}, {-1, 1, 1, -1})));
}

TEST(OpMeanVarianceNormalization, RejectsAxesOutsideTheRank) {
  const Node node =
      NodeBuilder("MeanVarianceNormalization", 13).attr("axes", std::vector<std::int64_t>{0, 2}).build();
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({2, 2}, {1, 2, 3, 4})}),
                         StatusCode::kInvalidArgument, "axis"));
  // The default axes need rank 4.
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("MeanVarianceNormalization", 13).build(),
                                         {float_tensor({2, 2}, {1, 2, 3, 4})}),
                         StatusCode::kInvalidArgument, "axis"));
}

}  // namespace
}  // namespace fovea::runtime::testing
