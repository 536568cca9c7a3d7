// The indexing ops (ops/indexing.cpp) and CastLike against hand-computed results, most of them the
// examples of the ONNX operator documentation, plus the inputs each must reject.
#include <cstdint>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor run_one(const Node& node, const std::vector<Tensor>& inputs) {
  return run_node(node, inputs)[0];
}

Tensor iota(DataType dtype, const Shape& shape) {
  std::vector<double> values(static_cast<std::size_t>(element_count(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  return tensor_of(dtype, shape, values);
}

// ---- GatherElements ----

TEST(OpGatherElements, GathersAlongEitherAxis) {
  const Node axis1 = NodeBuilder("GatherElements").inputs(2).attr("axis", 1).build();
  EXPECT_TRUE(
      tensors_near(run_one(axis1, {float_tensor({2, 2}, {1, 2, 3, 4}), int64_tensor({2, 2}, {0, 0, 1, 0})}),
                   float_tensor({2, 2}, {1, 1, 4, 3})));
  const Tensor data = float_tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Node axis0 = NodeBuilder("GatherElements").inputs(2).build();
  EXPECT_TRUE(tensors_near(run_one(axis0, {data, int64_tensor({2, 3}, {1, 2, 0, 2, 0, 0})}),
                           float_tensor({2, 3}, {4, 8, 3, 7, 2, 3})));
  EXPECT_TRUE(tensors_near(run_one(axis0, {data, tensor_of(DataType::kInt32, {2, 3}, {-1, -2, 0, -2, 0, 0})}),
                           float_tensor({2, 3}, {7, 5, 3, 4, 2, 3})));
}

TEST(OpGatherElements, RejectsIndicesLargerThanDataOffTheAxis) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("GatherElements").inputs(2).build(),
                                         {float_tensor({2, 1}, {1, 2}), int64_tensor({1, 2}, {0, 0})}),
                         StatusCode::kInvalidArgument, "above data"));
}

TEST(OpGatherElements, RejectsIndexOutOfRangeAndRankMismatch) {
  const Node node = NodeBuilder("GatherElements").inputs(2).build();
  EXPECT_TRUE(
      fails_with(run_node_status(node, {float_tensor({2, 2}, {1, 2, 3, 4}), int64_tensor({1, 2}, {0, 2})}),
                 StatusCode::kInvalidArgument, "out of range"));
  EXPECT_TRUE(
      fails_with(run_node_status(node, {float_tensor({2, 2}, {1, 2, 3, 4}), int64_tensor({2}, {0, 1})}),
                 StatusCode::kInvalidArgument, "rank"));
}

// ---- ScatterElements ----

TEST(OpScatterElements, WritesUpdatesAtTheirIndices) {
  const Tensor data = float_tensor({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor indices = int64_tensor({2, 3}, {1, 0, 2, 0, 2, 1});
  const Tensor updates = float_tensor({2, 3}, {1, 1.1f, 1.2f, 2, 2.1f, 2.2f});
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("ScatterElements").inputs(3).build(), {data, indices, updates}),
                   float_tensor({3, 3}, {2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("ScatterElements").inputs(3).attr("axis", 1).build(),
                                   {float_tensor({1, 5}, {1, 2, 3, 4, 5}), int64_tensor({1, 2}, {1, -2}),
                                    float_tensor({1, 2}, {1.1f, 2.1f})}),
                           float_tensor({1, 5}, {1, 1.1f, 3, 2.1f, 5})));
}

TEST(OpScatterElements, ReductionsCombineRepeatedIndices) {
  const Tensor data = float_tensor({1, 5}, {1, 2, 3, 4, 5});
  const Tensor indices = int64_tensor({1, 2}, {1, 1});
  const Tensor updates = float_tensor({1, 2}, {1.5f, 3});
  const auto scatter = [&](const char* reduction) {
    return run_one(
        NodeBuilder("ScatterElements", 18).inputs(3).attr("axis", 1).attr("reduction", reduction).build(),
        {data, indices, updates});
  };
  EXPECT_TRUE(tensors_near(scatter("none"), float_tensor({1, 5}, {1, 3, 3, 4, 5})));  // the last update wins
  EXPECT_TRUE(tensors_near(scatter("add"), float_tensor({1, 5}, {1, 6.5f, 3, 4, 5})));
  EXPECT_TRUE(tensors_near(scatter("mul"), float_tensor({1, 5}, {1, 9, 3, 4, 5})));
  EXPECT_TRUE(tensors_near(scatter("max"), float_tensor({1, 5}, {1, 3, 3, 4, 5})));
  EXPECT_TRUE(tensors_near(scatter("min"), float_tensor({1, 5}, {1, 1.5f, 3, 4, 5})));
}

TEST(OpScatterElements, RejectsUnknownReductionAndMismatchedUpdates) {
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("ScatterElements").inputs(3).attr("reduction", "avg").build(),
                                 {float_tensor({2}, {1, 2}), int64_tensor({1}, {0}), float_tensor({1}, {1})}),
                 StatusCode::kInvalidArgument, "reduction"));
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("ScatterElements").inputs(3).build(),
                      {float_tensor({2}, {1, 2}), int64_tensor({1}, {0}), float_tensor({2}, {1, 2})}),
      StatusCode::kInvalidArgument, "updates"));
}

TEST(OpScatter, IsScatterElementsUnderItsOldName) {
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Scatter", 10).inputs(3).attr("axis", 1).build(),
                                   {float_tensor({1, 5}, {1, 2, 3, 4, 5}), int64_tensor({1, 2}, {1, 3}),
                                    float_tensor({1, 2}, {1.1f, 2.1f})}),
                           float_tensor({1, 5}, {1, 1.1f, 3, 2.1f, 5})));
}

// ---- GatherND ----

TEST(OpGatherND, TuplesPickElementsOrSlices) {
  const Node node = NodeBuilder("GatherND").inputs(2).build();
  const Tensor data = tensor_of(DataType::kInt32, {2, 2}, {0, 1, 2, 3});
  EXPECT_TRUE(tensors_near(run_one(node, {data, int64_tensor({2, 2}, {0, 0, 1, 1})}),
                           tensor_of(DataType::kInt32, {2}, {0, 3})));
  EXPECT_TRUE(tensors_near(run_one(node, {data, int64_tensor({2, 1}, {1, -2})}),
                           tensor_of(DataType::kInt32, {2, 2}, {2, 3, 0, 1})));
  const Tensor cube = iota(DataType::kFloat32, {2, 2, 2});
  EXPECT_TRUE(tensors_near(run_one(node, {cube, int64_tensor({2, 1, 2}, {0, 1, 1, 0})}),
                           float_tensor({2, 1, 2}, {2, 3, 4, 5})));
}

TEST(OpGatherND, BatchDims) {
  const Tensor cube = iota(DataType::kFloat32, {2, 2, 2});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("GatherND").inputs(2).attr("batch_dims", 1).build(),
                                   {cube, int64_tensor({2, 1}, {1, 0})}),
                           float_tensor({2, 2}, {2, 3, 4, 5})));
}

TEST(OpGatherND, RejectsLongTuplesAndIndicesOutOfRange) {
  const Node node = NodeBuilder("GatherND").inputs(2).build();
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({2}, {1, 2}), int64_tensor({1, 2}, {0, 0})}),
                         StatusCode::kInvalidArgument, "index tuples"));
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({2}, {1, 2}), int64_tensor({1, 1}, {2})}),
                         StatusCode::kInvalidArgument, "out of range"));
}

// ---- ScatterND ----

TEST(OpScatterND, WritesElementsAndSlices) {
  const Node node = NodeBuilder("ScatterND").inputs(3).build();
  EXPECT_TRUE(tensors_near(run_one(node, {iota(DataType::kFloat32, {8}), int64_tensor({4, 1}, {4, 3, 1, 7}),
                                          float_tensor({4}, {9, 10, 11, 12})}),
                           float_tensor({8}, {0, 11, 2, 10, 9, 5, 6, 12})));
  EXPECT_TRUE(tensors_near(run_one(node, {iota(DataType::kInt64, {3, 2}), int64_tensor({1, 1}, {-1}),
                                          int64_tensor({1, 2}, {7, 8})}),
                           int64_tensor({3, 2}, {0, 1, 2, 3, 7, 8})));
}

TEST(OpScatterND, ReductionsCombineRepeatedTuples) {
  const auto scatter = [](const char* reduction) {
    return run_one(
        NodeBuilder("ScatterND", 18).inputs(3).attr("reduction", reduction).build(),
        {float_tensor({3}, {1, 2, 3}), int64_tensor({2, 1}, {0, 0}), float_tensor({2}, {4, 0.5f})});
  };
  EXPECT_TRUE(tensors_near(scatter("add"), float_tensor({3}, {5.5f, 2, 3})));
  EXPECT_TRUE(tensors_near(scatter("mul"), float_tensor({3}, {2, 2, 3})));
  EXPECT_TRUE(tensors_near(scatter("max"), float_tensor({3}, {4, 2, 3})));
  EXPECT_TRUE(tensors_near(scatter("min"), float_tensor({3}, {0.5f, 2, 3})));
}

TEST(OpScatterND, RejectsUpdatesOfTheWrongShape) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("ScatterND").inputs(3).build(),
                                         {float_tensor({3}, {1, 2, 3}), int64_tensor({2, 1}, {0, 1}),
                                          float_tensor({3}, {1, 2, 3})}),
                         StatusCode::kInvalidArgument, "updates"));
}

// ---- CumSum ----

TEST(OpCumSum, ExclusiveAndReverse) {
  const Tensor x = float_tensor({5}, {1, 2, 3, 4, 5});
  const Tensor axis = int64_tensor({}, {0});
  const auto cumsum = [&](int exclusive, int reverse) {
    return run_one(
        NodeBuilder("CumSum").inputs(2).attr("exclusive", exclusive).attr("reverse", reverse).build(),
        {x, axis});
  };
  EXPECT_TRUE(tensors_near(cumsum(0, 0), float_tensor({5}, {1, 3, 6, 10, 15})));
  EXPECT_TRUE(tensors_near(cumsum(1, 0), float_tensor({5}, {0, 1, 3, 6, 10})));
  EXPECT_TRUE(tensors_near(cumsum(0, 1), float_tensor({5}, {15, 14, 12, 9, 5})));
  EXPECT_TRUE(tensors_near(cumsum(1, 1), float_tensor({5}, {14, 12, 9, 5, 0})));
}

TEST(OpCumSum, AlongAnyAxisOfIntegers) {
  const Tensor x = tensor_of(DataType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Node node = NodeBuilder("CumSum").inputs(2).build();
  EXPECT_TRUE(tensors_near(run_one(node, {x, tensor_of(DataType::kInt32, {}, {1})}),
                           tensor_of(DataType::kInt32, {2, 3}, {1, 3, 6, 4, 9, 15})));
  EXPECT_TRUE(tensors_near(run_one(node, {x, int64_tensor({}, {-2})}),
                           tensor_of(DataType::kInt32, {2, 3}, {1, 2, 3, 5, 7, 9})));
}

TEST(OpCumSum, RejectsAxisOutOfRange) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("CumSum").inputs(2).build(),
                                         {float_tensor({2}, {1, 2}), int64_tensor({}, {1})}),
                         StatusCode::kInvalidArgument, "axis"));
}

// ---- DepthToSpace, SpaceToDepth ----

TEST(OpDepthToSpace, DcrAndCrdOrders) {
  const Tensor x = iota(DataType::kFloat32, {1, 8, 1, 1});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("DepthToSpace").attr("blocksize", 2).build(), {x}),
                           float_tensor({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7})));
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("DepthToSpace").attr("blocksize", 2).attr("mode", "CRD").build(), {x}),
                   iota(DataType::kFloat32, {1, 2, 2, 2})));
}

TEST(OpDepthToSpace, RejectsChannelsNotAMultipleOfTheBlock) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("DepthToSpace").attr("blocksize", 2).build(),
                                         {iota(DataType::kFloat32, {1, 6, 1, 1})}),
                         StatusCode::kInvalidArgument, "multiple"));
}

TEST(OpSpaceToDepth, BlocksBecomeChannelsAndDepthToSpaceUndoesIt) {
  const Tensor x = iota(DataType::kFloat32, {1, 2, 2, 2});
  const Tensor packed = run_one(NodeBuilder("SpaceToDepth").attr("blocksize", 2).build(), {x});
  EXPECT_TRUE(tensors_near(packed, float_tensor({1, 8, 1, 1}, {0, 4, 1, 5, 2, 6, 3, 7})));
  const Tensor random = random_tensor(DataType::kFloat32, {3, 5, 6, 9}, 3);
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("DepthToSpace").attr("blocksize", 3).build(),
                           {run_one(NodeBuilder("SpaceToDepth").attr("blocksize", 3).build(), {random})}),
                   random, 0, 0));
}

// ---- Trilu ----

TEST(OpTrilu, UpperAndLowerWithDiagonalOffset) {
  const Tensor x = float_tensor({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Trilu").build(), {x}),
                           float_tensor({3, 4}, {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Trilu").inputs(2).build(), {x, int64_tensor({}, {1})}),
                           float_tensor({3, 4}, {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12})));
  EXPECT_TRUE(tensors_near(
      run_one(NodeBuilder("Trilu").inputs(2).attr("upper", 0).build(), {x, int64_tensor({}, {-1})}),
      float_tensor({3, 4}, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0})));
}

TEST(OpTrilu, BatchesOfMatrices) {
  const Tensor x = tensor_of(DataType::kInt64, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Trilu").attr("upper", 0).build(), {x}),
                           tensor_of(DataType::kInt64, {2, 2, 2}, {1, 0, 3, 4, 5, 0, 7, 8})));
}

TEST(OpTrilu, RejectsVectors) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Trilu").build(), {float_tensor({2}, {1, 2})}),
                         StatusCode::kInvalidArgument, "rank"));
}

// ---- OneHot ----

TEST(OpOneHot, ClassesAlongAnyAxis) {
  const Tensor indices = int64_tensor({4}, {0, -1, 2, 5});  // 5 is out of range: all off
  const Tensor depth = int64_tensor({}, {3});
  const Tensor values = float_tensor({2}, {-1, 2});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("OneHot").inputs(3).build(), {indices, depth, values}),
                           float_tensor({4, 3}, {2, -1, -1, -1, -1, 2, -1, -1, 2, -1, -1, -1})));
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("OneHot").inputs(3).attr("axis", 0).build(), {indices, depth, values}),
                   float_tensor({3, 4}, {2, -1, -1, -1, -1, -1, -1, -1, -1, 2, 2, -1})));
}

TEST(OpOneHot, FloatIndicesAndDepth) {
  EXPECT_TRUE(tensors_near(
      run_one(NodeBuilder("OneHot").inputs(3).build(),
              {float_tensor({2}, {1.0f, 0.0f}), float_tensor({1}, {2}), int64_tensor({2}, {0, 7})}),
      int64_tensor({2, 2}, {0, 7, 7, 0})));
}

TEST(OpOneHot, RejectsBadDepthAndValues) {
  const Node node = NodeBuilder("OneHot").inputs(3).build();
  EXPECT_TRUE(fails_with(
      run_node_status(node, {int64_tensor({1}, {0}), int64_tensor({}, {0}), float_tensor({2}, {0, 1})}),
      StatusCode::kInvalidArgument, "depth"));
  EXPECT_TRUE(fails_with(
      run_node_status(node, {int64_tensor({1}, {0}), int64_tensor({}, {2}), float_tensor({3}, {0, 1, 2})}),
      StatusCode::kInvalidArgument, "values"));
}

// ---- EyeLike ----

TEST(OpEyeLike, DiagonalOffsetAndDtype) {
  const Tensor x = float_tensor({3, 4}, std::vector<float>(12, 5.0f));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("EyeLike").attr("k", 1).build(), {x}),
                           float_tensor({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("EyeLike").attr("dtype", 7).attr("k", -1).build(), {x}),
                           int64_tensor({3, 4}, {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0})));
}

TEST(OpEyeLike, Float16AndBoolOutputs) {
  const Tensor x = float_tensor({2, 2}, {5, 5, 5, 5});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("EyeLike").attr("dtype", 10).build(), {x}),
                           tensor_of(DataType::kFloat16, {2, 2}, {1, 0, 0, 1})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("EyeLike").attr("dtype", 9).build(), {x}),
                           tensor_of(DataType::kBool, {2, 2}, {1, 0, 0, 1})));
}

TEST(OpEyeLike, RejectsOtherRanks) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("EyeLike").build(), {float_tensor({2}, {1, 2})}),
                         StatusCode::kInvalidArgument, "rank"));
}

// ---- Hardmax ----

TEST(OpHardmax, FirstMaximumAlongTheAxis) {
  const Tensor x = float_tensor({2, 3}, {1, 3, 3, 5, 2, 1});
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("Hardmax").build(), {x}), float_tensor({2, 3}, {0, 1, 0, 1, 0, 0})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Hardmax").attr("axis", 0).build(), {x}),
                           float_tensor({2, 3}, {0, 1, 1, 1, 0, 0})));
}

TEST(OpHardmax, BeforeOpset13TheTrailingDimsAreOneRow) {
  const Tensor x = float_tensor({2, 2, 2}, {1, 2, 3, 4, 8, 7, 6, 5});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Hardmax", 11).build(), {x}),
                           float_tensor({2, 2, 2}, {0, 0, 0, 1, 1, 0, 0, 0})));
}

// ---- CastLike ----

TEST(OpCastLike, TakesTheSecondInputsDtype) {
  const Node node = NodeBuilder("CastLike").inputs(2).build();
  EXPECT_TRUE(tensors_near(run_one(node, {float_tensor({3}, {1.7f, -2.5f, 0}), int64_tensor({1}, {0})}),
                           int64_tensor({3}, {1, -2, 0})));
  EXPECT_TRUE(
      tensors_near(run_one(node, {int64_tensor({2}, {3, -4}), tensor_of(DataType::kFloat64, {}, {0})}),
                   tensor_of(DataType::kFloat64, {2}, {3, -4})));
  EXPECT_TRUE(
      tensors_near(run_one(node, {float_tensor({2}, {0, 0.5f}), tensor_of(DataType::kBool, {1}, {0})}),
                   tensor_of(DataType::kBool, {2}, {0, 1})));
}

}  // namespace
}  // namespace fovea::runtime::testing
