#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

bool has_message(const Status& status, const std::string& part) {
  return status.message().find(part) != std::string::npos;
}

// Naive TopK along `axis` of a [outer, n, inner] view: a full stable sort of every line.
void naive_topk(const Tensor& x, int axis, std::int64_t k, bool largest, Tensor& values, Tensor& indices) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  const std::int64_t n = x.dim(axis);
  Shape shape = x.shape();
  shape[static_cast<std::size_t>(axis)] = k;
  values = Tensor::allocate(x.dtype(), shape);
  indices = Tensor::allocate(DataType::kInt64, shape);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<std::int64_t> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      auto value = [&](std::int64_t j) { return x.data<std::int32_t>()[(o * n + j) * inner + i]; };
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        return largest ? value(a) > value(b) : value(a) < value(b);
      });
      for (std::int64_t j = 0; j < k; ++j) {
        values.data<std::int32_t>()[(o * k + j) * inner + i] = value(order[static_cast<std::size_t>(j)]);
        indices.data<std::int64_t>()[(o * k + j) * inner + i] = order[static_cast<std::size_t>(j)];
      }
    }
  }
}

TEST(OpTopK, MatchesNaiveWithTiesOnEveryAxis) {
  // Few distinct values, so ties are everywhere and must go to the lower index.
  const Tensor x = random_tensor(DataType::kInt32, {3, 13, 17}, 1, 0, 5);
  for (int axis : {0, 1, -1}) {
    for (bool largest : {true, false}) {
      const int normalized = axis < 0 ? axis + 3 : axis;
      const std::int64_t k = std::min<std::int64_t>(x.dim(normalized), 4);
      const auto out = run_node(NodeBuilder("TopK", 11)
                                    .inputs(2)
                                    .outputs(2)
                                    .attr("axis", axis)
                                    .attr("largest", largest ? 1 : 0)
                                    .build(),
                                {x, int64_tensor({1}, {k})});
      Tensor values, indices;
      naive_topk(x, normalized, k, largest, values, indices);
      EXPECT_TRUE(tensors_near(out[0], values)) << "axis " << axis << " largest " << largest;
      EXPECT_TRUE(tensors_near(out[1], indices)) << "axis " << axis << " largest " << largest;
    }
  }
}

TEST(OpTopK, FloatValuesAndLegacyAttributeK) {
  const Tensor x = float_tensor({2, 4}, {0.5f, 3, -1, 2, 7, 7, 1, 8});
  const auto out = run_node(NodeBuilder("TopK", 1).outputs(2).attr("k", 3).build(), {x});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({2, 3}, {3, 2, 0.5f, 8, 7, 7})));
  EXPECT_TRUE(tensors_near(out[1], int64_tensor({2, 3}, {1, 3, 0, 3, 0, 1})));
}

TEST(OpTopK, NanRanksAboveEveryNumber) {
  const Tensor x = float_tensor({4}, {1, std::nanf(""), 3, -2});
  const auto largest =
      run_node(NodeBuilder("TopK", 11).inputs(2).outputs(2).build(), {x, int64_tensor({1}, {2})});
  EXPECT_TRUE(tensors_near(largest[1], int64_tensor({2}, {1, 2})));
  const auto smallest = run_node(NodeBuilder("TopK", 11).inputs(2).outputs(2).attr("largest", 0).build(),
                                 {x, int64_tensor({1}, {4})});
  EXPECT_TRUE(tensors_near(smallest[1], int64_tensor({4}, {3, 0, 2, 1})));
}

TEST(OpTopK, RejectsKLargerThanAxis) {
  const Status status =
      run_node_status(NodeBuilder("TopK", 11).inputs(2).outputs(2).build(),
                      {random_tensor(DataType::kFloat32, {2, 3}, 2), int64_tensor({1}, {4})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "K=4 is out of range")) << status.message();
}

// The boxes of the ONNX NonMaxSuppression conformance tests: three overlapping boxes near y=0,
// two near y=10 and one far away, as [y1, x1, y2, x2].
const std::vector<float> kCornerBoxes = {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                         0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101};
const std::vector<float> kScores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

std::vector<Tensor> nms(const Tensor& boxes, const Tensor& scores, std::int64_t max_per_class, float iou,
                        std::optional<float> score_threshold, int center_point_box = 0) {
  NodeBuilder builder("NonMaxSuppression", 11);
  builder.inputs(score_threshold ? 5 : 4).attr("center_point_box", center_point_box);
  std::vector<Tensor> inputs = {boxes, scores, int64_tensor({1}, {max_per_class}), float_tensor({1}, {iou})};
  if (score_threshold) inputs.push_back(float_tensor({1}, {*score_threshold}));
  return run_node(builder.build(), inputs);
}

TEST(OpNonMaxSuppression, SuppressesByIouThenScore) {
  const Tensor boxes = float_tensor({1, 6, 4}, kCornerBoxes);
  const Tensor scores = float_tensor({1, 1, 6}, kScores);
  EXPECT_TRUE(
      tensors_near(nms(boxes, scores, 3, 0.5f, 0.0f)[0], int64_tensor({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5})));
  EXPECT_TRUE(tensors_near(nms(boxes, scores, 2, 0.5f, 0.0f)[0], int64_tensor({2, 3}, {0, 0, 3, 0, 0, 0})));
  EXPECT_TRUE(tensors_near(nms(boxes, scores, 3, 0.5f, 0.4f)[0], int64_tensor({2, 3}, {0, 0, 3, 0, 0, 0})));
  EXPECT_TRUE(tensors_near(nms(boxes, scores, 0, 0.5f, std::nullopt)[0], int64_tensor({0, 3}, {})));
}

TEST(OpNonMaxSuppression, CenterPointAndFlippedBoxes) {
  const Tensor centers = float_tensor({1, 6, 4}, {0.5f, 0.5f,  1, 1, 0.5f, 0.6f,  1, 1, 0.5f, 0.4f,   1, 1,
                                                  0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1});
  const Tensor scores = float_tensor({1, 1, 6}, kScores);
  const Tensor expected = int64_tensor({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5});
  EXPECT_TRUE(tensors_near(nms(centers, scores, 3, 0.5f, 0.0f, 1)[0], expected));
  const Tensor flipped = float_tensor({1, 6, 4}, {1, 1,  0, 0,  0, 0.1f,  1, 1.1f,  0, 0.9f, 1, -0.1f,
                                                  0, 10, 1, 11, 1, 10.1f, 0, 11.1f, 1, 101,  0, 100});
  EXPECT_TRUE(tensors_near(nms(flipped, scores, 3, 0.5f, 0.0f)[0], expected));
}

TEST(OpNonMaxSuppression, BatchesClassesAndIdenticalBoxes) {
  std::vector<float> two_batches = kCornerBoxes;
  two_batches.insert(two_batches.end(), kCornerBoxes.begin(), kCornerBoxes.end());
  std::vector<float> two_scores = kScores;
  two_scores.insert(two_scores.end(), kScores.begin(), kScores.end());
  EXPECT_TRUE(tensors_near(
      nms(float_tensor({2, 6, 4}, two_batches), float_tensor({2, 1, 6}, two_scores), 2, 0.5f, 0.0f)[0],
      int64_tensor({4, 3}, {0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0})));
  EXPECT_TRUE(tensors_near(
      nms(float_tensor({1, 6, 4}, kCornerBoxes), float_tensor({1, 2, 6}, two_scores), 2, 0.5f, 0.0f)[0],
      int64_tensor({4, 3}, {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0})));
  std::vector<float> identical;
  for (int i = 0; i < 10; ++i) identical.insert(identical.end(), {0, 0, 1, 1});
  EXPECT_TRUE(tensors_near(nms(float_tensor({1, 10, 4}, identical),
                               float_tensor({1, 1, 10}, std::vector<float>(10, 0.9f)), 3, 0.5f, 0.0f)[0],
                           int64_tensor({1, 3}, {0, 0, 0})));
}

// ONNX leaves NaN scores unranked; fovea drops them, threshold or not (the CUDA kernel agrees).
TEST(OpNonMaxSuppression, DropsNaNScores) {
  std::vector<float> scores = kScores;
  scores[0] = std::numeric_limits<float>::quiet_NaN();
  const Tensor expected = int64_tensor({3, 3}, {0, 0, 3, 0, 0, 1, 0, 0, 5});
  const Tensor boxes = float_tensor({1, 6, 4}, kCornerBoxes);
  EXPECT_TRUE(tensors_near(nms(boxes, float_tensor({1, 1, 6}, scores), 10, 0.5f, std::nullopt)[0], expected));
  EXPECT_TRUE(tensors_near(nms(boxes, float_tensor({1, 1, 6}, scores), 10, 0.5f, 0.0f)[0], expected));
}

TEST(OpNonMaxSuppression, InfersUnknownCountAndRejectsBadBoxes) {
  const auto types = infer_types(
      NodeBuilder("NonMaxSuppression", 11).inputs(2).build(),
      {ValueType{DataType::kFloat32, dims_of({1, 6, 4})}, ValueType{DataType::kFloat32, dims_of({1, 1, 6})}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ(types.value()[0].dims, std::optional(Dims{Dim::unknown(), Dim::known_size(3)}));
  const Status status = run_node_status(
      NodeBuilder("NonMaxSuppression", 11).inputs(2).build(),
      {random_tensor(DataType::kFloat32, {1, 6, 5}, 3), random_tensor(DataType::kFloat32, {1, 1, 6}, 4)});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "4 coordinates")) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
