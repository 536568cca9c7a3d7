#include <cstdint>
#include <limits>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor run1(const Node& node, const std::vector<Tensor>& inputs) {
  return run_node(node, inputs)[0];
}

// --- Shape ---

TEST(OpShape, GivesTheDims) {
  const Tensor x = Tensor::allocate(DataType::kFloat16, {2, 3, 13, 17});
  EXPECT_TRUE(tensors_near(run1(NodeBuilder("Shape").build(), {x}), int64_tensor({4}, {2, 3, 13, 17})));
  EXPECT_TRUE(
      tensors_near(run1(NodeBuilder("Shape").build(), {float_tensor({}, {1})}), int64_tensor({0}, {})));
}

TEST(OpShape, StartAndEndOfOpset15) {
  const Tensor x = Tensor::allocate(DataType::kFloat32, {2, 3, 4});
  const auto shape = [&](std::optional<std::int64_t> start, std::optional<std::int64_t> end) {
    NodeBuilder builder("Shape", 15);
    if (start) builder.attr("start", *start);
    if (end) builder.attr("end", *end);
    return run1(builder.build(), {x});
  };
  EXPECT_TRUE(tensors_near(shape(1, std::nullopt), int64_tensor({2}, {3, 4})));
  EXPECT_TRUE(tensors_near(shape(std::nullopt, 1), int64_tensor({1}, {2})));
  EXPECT_TRUE(tensors_near(shape(std::nullopt, -1), int64_tensor({2}, {2, 3})));
  EXPECT_TRUE(tensors_near(shape(-1, std::nullopt), int64_tensor({1}, {4})));
  EXPECT_TRUE(tensors_near(shape(1, 2), int64_tensor({1}, {3})));
  EXPECT_TRUE(tensors_near(shape(-10, 10), int64_tensor({3}, {2, 3, 4})));  // clamped
  EXPECT_TRUE(tensors_near(shape(2, 1), int64_tensor({0}, {})));            // empty, not negative
}

TEST(OpShape, InfersLengthFromRankAlone) {
  const Node node = NodeBuilder("Shape").build();
  auto types = infer_types(
      node, {ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::unknown(), Dim::known_size(5)}}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ((*types)[0].dtype, DataType::kInt64);
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[3]");
  types = infer_types(NodeBuilder("Shape", 15).attr("start", 1).build(),
                      {ValueType{DataType::kFloat32, Dims{Dim::unknown(), Dim::unknown(), Dim::unknown()}}});
  ASSERT_TRUE(types.is_ok());
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[2]");
  types = infer_types(node, {ValueType{DataType::kFloat32, std::nullopt}});
  ASSERT_TRUE(types.is_ok());
  ASSERT_TRUE((*types)[0].dims.has_value());
  EXPECT_EQ((*types)[0].dims->size(), 1u);
  EXPECT_FALSE((*(*types)[0].dims)[0].known());
}

TEST(OpShape, RejectsBadAttributeKind) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Shape", 15).attr("start", 1.0f).build(), {float_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "attribute 'start'"));
}

// --- Size ---

TEST(OpSize, CountsElements) {
  EXPECT_TRUE(
      tensors_near(run1(NodeBuilder("Size").build(), {Tensor::allocate(DataType::kInt8, {3, 13, 17})}),
                   int64_tensor({}, {3 * 13 * 17})));
  EXPECT_TRUE(
      tensors_near(run1(NodeBuilder("Size").build(), {float_tensor({}, {1})}), int64_tensor({}, {1})));
  EXPECT_TRUE(tensors_near(run1(NodeBuilder("Size").build(), {Tensor::allocate(DataType::kFloat32, {4, 0})}),
                           int64_tensor({}, {0})));
}

TEST(OpSize, RejectsTwoInputs) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Size").inputs(2).build(),
                                         {float_tensor({1}, {1}), float_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "has 2 inputs, at most 1 allowed"));
}

// --- Constant ---

TEST(OpConstant, EveryValueAttribute) {
  const Tensor value = random_tensor(DataType::kFloat16, {3, 5}, 1);
  EXPECT_TRUE(tensors_near(run1(NodeBuilder("Constant").inputs(0).attr("value", value).build(), {}), value));
  EXPECT_TRUE(tensors_near(run1(NodeBuilder("Constant").inputs(0).attr("value_float", 2.5f).build(), {}),
                           float_tensor({}, {2.5f})));
  EXPECT_TRUE(tensors_near(
      run1(NodeBuilder("Constant").inputs(0).attr("value_floats", std::vector<float>{1, 2}).build(), {}),
      float_tensor({2}, {1, 2})));
  EXPECT_TRUE(tensors_near(run1(NodeBuilder("Constant").inputs(0).attr("value_int", 7).build(), {}),
                           int64_tensor({}, {7})));
  EXPECT_TRUE(tensors_near(
      run1(NodeBuilder("Constant").inputs(0).attr("value_ints", std::vector<std::int64_t>{-1, 3, 5}).build(),
           {}),
      int64_tensor({3}, {-1, 3, 5})));
}

TEST(OpConstant, RejectsNoneTwoAndUnsupportedValues) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Constant").inputs(0).build(), {}),
                         StatusCode::kInvalidArgument, "exactly one of the attributes"));
  EXPECT_TRUE(fails_with(
      run_node_status(
          NodeBuilder("Constant").inputs(0).attr("value_int", 1).attr("value_float", 1.0f).build(), {}),
      StatusCode::kInvalidArgument, "got 2"));
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Constant").inputs(0).attr("value_string", "text").build(), {}),
                 StatusCode::kUnsupported, "value_string"));
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Constant").inputs(0).attr("value_int", 1.0f).build(), {}),
                 StatusCode::kInvalidArgument, "attribute 'value_int'"));
}

// --- ConstantOfShape ---

TEST(OpConstantOfShape, DefaultsToFloatZeros) {
  const Tensor out = run1(NodeBuilder("ConstantOfShape").build(), {int64_tensor({3}, {3, 13, 17})});
  EXPECT_TRUE(tensors_near(out, Tensor::allocate(DataType::kFloat32, {3, 13, 17})));
}

TEST(OpConstantOfShape, FillsWithTheValueAttribute) {
  const Node ints = NodeBuilder("ConstantOfShape").attr("value", int64_tensor({1}, {-7})).build();
  EXPECT_TRUE(
      tensors_near(run1(ints, {int64_tensor({2}, {2, 3})}), int64_tensor({2, 3}, {-7, -7, -7, -7, -7, -7})));
  const Node halves =
      NodeBuilder("ConstantOfShape").attr("value", tensor_of(DataType::kFloat16, {1}, {1.5})).build();
  EXPECT_TRUE(tensors_near(run1(halves, {int64_tensor({1}, {3})}),
                           tensor_of(DataType::kFloat16, {3}, {1.5, 1.5, 1.5})));
  const Node flags =
      NodeBuilder("ConstantOfShape").attr("value", tensor_of(DataType::kBool, {1}, {1})).build();
  EXPECT_TRUE(tensors_near(run1(flags, {int64_tensor({1}, {2})}), tensor_of(DataType::kBool, {2}, {1, 1})));
}

TEST(OpConstantOfShape, EmptyShapeGivesAScalarAndZeroDimsAnEmptyTensor) {
  const Tensor scalar = run1(NodeBuilder("ConstantOfShape").attr("value", float_tensor({1}, {4})).build(),
                             {int64_tensor({0}, {})});
  EXPECT_TRUE(tensors_near(scalar, float_tensor({}, {4})));
  const Tensor empty = run1(NodeBuilder("ConstantOfShape").build(), {int64_tensor({2}, {0, 5})});
  EXPECT_EQ(empty.shape(), (Shape{0, 5}));
}

TEST(OpConstantOfShape, InfersRankFromAnUnknownShapeValue) {
  const auto types =
      infer_types(NodeBuilder("ConstantOfShape").build(), {ValueType{DataType::kInt64, dims_of({4})}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  ASSERT_TRUE((*types)[0].dims.has_value());
  EXPECT_EQ((*types)[0].dims->size(), 4u);
  EXPECT_FALSE((*(*types)[0].dims)[0].known());
  const auto unknown = infer_types(NodeBuilder("ConstantOfShape").build(),
                                   {ValueType{DataType::kInt64, Dims{Dim::unknown()}}});
  ASSERT_TRUE(unknown.is_ok());
  EXPECT_FALSE((*unknown)[0].dims.has_value());
}

TEST(OpConstantOfShape, RejectsAShapeLengthOverTheMaximumRank) {
  const auto types =
      infer_types(NodeBuilder("ConstantOfShape").build(), {ValueType{DataType::kInt64, dims_of({1 << 30})}});
  EXPECT_TRUE(fails_with(types.status(), StatusCode::kUnsupported, "over the maximum"));
}

TEST(OpConstantOfShape, RejectsBadShapesAndValues) {
  const Node node = NodeBuilder("ConstantOfShape").build();
  EXPECT_TRUE(fails_with(run_node_status(node, {int64_tensor({2}, {3, -1})}), StatusCode::kInvalidArgument,
                         "negative dim"));
  EXPECT_TRUE(fails_with(run_node_status(node, {int64_tensor({2}, {1 << 20, 1 << 20})}),
                         StatusCode::kInvalidArgument, "more than 2^31 elements"));
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({1}, {3})}), StatusCode::kInvalidArgument,
                         "type mismatch"));
  EXPECT_TRUE(
      fails_with(run_node_status(node, {int64_tensor({1, 1}, {3})}), StatusCode::kInvalidArgument, "rank 2"));
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("ConstantOfShape").attr("value", float_tensor({2}, {1, 2})).build(),
                      {int64_tensor({1}, {3})}),
      StatusCode::kInvalidArgument, "one element"));
}

// --- Range ---

Tensor range(DataType dtype, double start, double limit, double delta) {
  return run1(NodeBuilder("Range").inputs(3).build(),
              {tensor_of(dtype, {}, {start}), tensor_of(dtype, {}, {limit}), tensor_of(dtype, {}, {delta})});
}

TEST(OpRange, IntegerAndFloatRanges) {
  EXPECT_TRUE(tensors_near(range(DataType::kInt64, 0, 5, 1), int64_tensor({5}, {0, 1, 2, 3, 4})));
  EXPECT_TRUE(tensors_near(range(DataType::kInt32, 10, 6, -3), tensor_of(DataType::kInt32, {2}, {10, 7})));
  EXPECT_TRUE(tensors_near(range(DataType::kFloat32, 1, 10, 2), float_tensor({5}, {1, 3, 5, 7, 9})));
  EXPECT_TRUE(tensors_near(range(DataType::kFloat64, 0, 1, 0.25),
                           tensor_of(DataType::kFloat64, {4}, {0, 0.25, 0.5, 0.75})));
  EXPECT_TRUE(
      tensors_near(range(DataType::kFloat32, 0.5f, 2.0f, 0.4f), float_tensor({4}, {0.5f, 0.9f, 1.3f, 1.7f})));
  EXPECT_TRUE(tensors_near(range(DataType::kInt64, 5, 0, 1), int64_tensor({0}, {})));  // empty, not negative
}

TEST(OpRange, InfersLengthOnlyFromKnownValues) {
  const Node node = NodeBuilder("Range").inputs(3).build();
  const ValueType scalar{DataType::kInt64, Dims{}};
  const auto types = infer_types(node, {scalar, scalar, scalar});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  ASSERT_TRUE((*types)[0].dims.has_value());
  ASSERT_EQ((*types)[0].dims->size(), 1u);
  EXPECT_FALSE((*(*types)[0].dims)[0].known());
}

TEST(OpRange, RejectsZeroDeltaMixedDtypesAndNonScalars) {
  const Node node = NodeBuilder("Range").inputs(3).build();
  EXPECT_TRUE(
      fails_with(run_node_status(node, {int64_tensor({}, {0}), int64_tensor({}, {5}), int64_tensor({}, {0})}),
                 StatusCode::kInvalidArgument, "delta is 0"));
  EXPECT_TRUE(
      fails_with(run_node_status(node, {int64_tensor({}, {0}), float_tensor({}, {5}), int64_tensor({}, {1})}),
                 StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(
      run_node_status(node, {int64_tensor({2}, {0, 1}), int64_tensor({}, {5}), int64_tensor({}, {1})}),
      StatusCode::kInvalidArgument, "start must be a scalar"));
  EXPECT_TRUE(fails_with(
      run_node_status(node, {float_tensor({}, {0}), float_tensor({}, {1e30f}), float_tensor({}, {1})}),
      StatusCode::kInvalidArgument, "more than 2^31 elements"));
  EXPECT_TRUE(fails_with(
      run_node_status(node, {tensor_of(DataType::kUInt8, {}, {0}), tensor_of(DataType::kUInt8, {}, {5}),
                             tensor_of(DataType::kUInt8, {}, {1})}),
      StatusCode::kInvalidArgument, "type mismatch"));
}

}  // namespace
}  // namespace fovea::runtime::testing
