#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

using Fn = std::function<double(const std::vector<double>&)>;

// Random inputs of `shapes` through `op_type`, against the naive reference `f`.
void check_against_reference(const std::string& op_type, DataType dtype, const std::vector<Shape>& shapes,
                             const Shape& out_shape, const Fn& f, double low = -1, double high = 1) {
  std::vector<Tensor> inputs;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    inputs.push_back(random_tensor(dtype, shapes[k], static_cast<std::uint32_t>(17 + k), low, high));
  }
  const auto out = run_node(NodeBuilder(op_type).inputs(static_cast<int>(shapes.size())).build(), inputs);
  EXPECT_TRUE(tensors_near(out[0], reference_map(dtype, out_shape, inputs, f))) << op_type;
}

// The broadcast patterns every binary op is checked with: equal shapes (batch 1 and N), a scalar,
// a trailing-dims operand, a middle dim of 1 on each side, and rank expansion.
void check_binary(const std::string& op_type, DataType dtype, const Fn& f, double low = -1, double high = 1) {
  check_against_reference(op_type, dtype, {{1, 3, 13, 17}, {1, 3, 13, 17}}, {1, 3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{4, 3, 13, 17}, {4, 3, 13, 17}}, {4, 3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{3, 13, 17}, {}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{}, {3, 13, 17}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{3, 13, 17}, {13, 17}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{3, 1, 17}, {13, 1}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{2, 3, 1, 1}, {1, 1, 13, 17}}, {2, 3, 13, 17}, f, low, high);
}

void check_unary(const std::string& op_type, DataType dtype, const Fn& f, double low = -1, double high = 1) {
  check_against_reference(op_type, dtype, {{3, 13, 17}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{}}, {}, f, low, high);
}

Tensor run1(const Node& node, const std::vector<Tensor>& inputs) {
  return run_node(node, inputs)[0];
}

// --- Add, Sub, Mul, Div ---

TEST(OpAdd, HandWritten) {
  EXPECT_TRUE(tensors_near(run1(NodeBuilder("Add").inputs(2).build(),
                                {float_tensor({2, 3}, {1, 2, 3, 4, 5, 6}), float_tensor({3}, {10, 20, 30})}),
                           float_tensor({2, 3}, {11, 22, 33, 14, 25, 36})));
}

TEST(OpAdd, MatchesReferenceWithBroadcasting) {
  check_binary("Add", DataType::kFloat32, [](const auto& v) { return v[0] + v[1]; });
  check_binary("Add", DataType::kFloat64, [](const auto& v) { return v[0] + v[1]; });
  check_binary(
      "Add", DataType::kInt64, [](const auto& v) { return v[0] + v[1]; }, -1000, 1000);
  check_binary(
      "Add", DataType::kInt32, [](const auto& v) { return v[0] + v[1]; }, -1000, 1000);
}

TEST(OpAdd, LargeBroadcastAcrossThreadChunks) {
  // 2*64*129*65 elements: many parallel chunks, whose boundaries fall mid-row.
  check_against_reference("Add", DataType::kFloat32, {{2, 64, 129, 65}, {64, 1, 1}}, {2, 64, 129, 65},
                          [](const auto& v) { return v[0] + v[1]; });
  check_against_reference("Add", DataType::kFloat32, {{2, 64, 129, 65}, {2, 64, 129, 65}}, {2, 64, 129, 65},
                          [](const auto& v) { return v[0] + v[1]; });
}

TEST(OpAdd, IntegersWrapOnOverflow) {
  const auto out = run1(NodeBuilder("Add").inputs(2).build(), {tensor_of(DataType::kUInt8, {2}, {200, 255}),
                                                               tensor_of(DataType::kUInt8, {2}, {100, 1})});
  EXPECT_TRUE(tensors_near(out, tensor_of(DataType::kUInt8, {2}, {44, 0})));
  const auto big =
      run1(NodeBuilder("Add").inputs(2).build(),
           {int64_tensor({1}, {std::numeric_limits<std::int64_t>::max()}), int64_tensor({1}, {1})});
  EXPECT_EQ(big.data<std::int64_t>()[0], std::numeric_limits<std::int64_t>::min());
}

TEST(OpAdd, InfersBroadcastOfPartlyUnknownShapes) {
  const Node node = NodeBuilder("Add").inputs(2).build();
  auto types = infer_types(node, {ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(1)}},
                                  ValueType{DataType::kFloat32, dims_of({7})}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ(dims_string(*(*types)[0].dims), dims_string(Dims{Dim::unknown("N"), Dim::known_size(7)}));
  types = infer_types(
      node, {ValueType{DataType::kFloat32, std::nullopt}, ValueType{DataType::kFloat32, dims_of({7})}});
  ASSERT_TRUE(types.is_ok());
  EXPECT_FALSE((*types)[0].dims.has_value());
}

TEST(OpAdd, RejectsBadInputs) {
  const Node node = NodeBuilder("Add").inputs(2).build();
  EXPECT_TRUE(
      fails_with(run_node_status(node, {float_tensor({2, 3}, {1, 2, 3, 4, 5, 6}), float_tensor({2}, {1, 2})}),
                 StatusCode::kInvalidArgument, "do not broadcast"));
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({1}, {1}), int64_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Add").build(), {float_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "needs 2 inputs, has 1"));
  Tensor flag = Tensor::allocate(DataType::kBool, {1});
  EXPECT_TRUE(fails_with(run_node_status(node, {flag, flag}), StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpSub, MatchesReferenceWithBroadcasting) {
  check_binary("Sub", DataType::kFloat32, [](const auto& v) { return v[0] - v[1]; });
  check_binary(
      "Sub", DataType::kInt8, [](const auto& v) { return v[0] - v[1]; }, -60, 60);
}

TEST(OpSub, RejectsMixedDtypes) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Sub").inputs(2).build(),
                                         {float_tensor({1}, {1}), tensor_of(DataType::kFloat64, {1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpMul, MatchesReferenceWithBroadcasting) {
  check_binary("Mul", DataType::kFloat32, [](const auto& v) { return v[0] * v[1]; });
  check_binary(
      "Mul", DataType::kInt64, [](const auto& v) { return v[0] * v[1]; }, -1000, 1000);
  check_binary(
      "Mul", DataType::kUInt8, [](const auto& v) { return v[0] * v[1]; }, 0, 15);
}

TEST(OpMul, Int32WrapsOnOverflow) {
  const auto out = run1(NodeBuilder("Mul").inputs(2).build(), {tensor_of(DataType::kInt32, {1}, {2147483647}),
                                                               tensor_of(DataType::kInt32, {1}, {2})});
  EXPECT_EQ(out.data<std::int32_t>()[0], -2);
}

TEST(OpDiv, MatchesReferenceWithBroadcasting) {
  check_binary(
      "Div", DataType::kFloat32, [](const auto& v) { return v[0] / v[1]; }, 0.5, 2);
  check_binary(
      "Div", DataType::kFloat64, [](const auto& v) { return v[0] / v[1]; }, 0.5, 2);
}

TEST(OpDiv, IntegersTruncateTowardZero) {
  const auto out = run1(NodeBuilder("Div").inputs(2).build(),
                        {int64_tensor({4}, {7, -7, 7, -7}), int64_tensor({4}, {2, 2, -2, -2})});
  EXPECT_TRUE(tensors_near(out, int64_tensor({4}, {3, -3, -3, 3})));
  const auto bytes = run1(NodeBuilder("Div").inputs(2).build(), {tensor_of(DataType::kUInt8, {2}, {255, 9}),
                                                                 tensor_of(DataType::kUInt8, {1}, {4})});
  EXPECT_TRUE(tensors_near(bytes, tensor_of(DataType::kUInt8, {2}, {63, 2})));
}

TEST(OpDiv, IntegerEdgeCasesDoNotTrap) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const auto out = run1(NodeBuilder("Div").inputs(2).build(),
                        {int64_tensor({3}, {kMin, 5, -5}), int64_tensor({3}, {-1, 0, 0})});
  EXPECT_TRUE(tensors_near(out, int64_tensor({3}, {kMin, 0, 0})));  // 0 for x/0, as numpy gives
}

TEST(OpDiv, RejectsBool) {
  Tensor flag = Tensor::allocate(DataType::kBool, {1});
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Div").inputs(2).build(), {flag, flag}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

// --- Pow ---

TEST(OpPow, FloatMatchesReference) {
  check_binary(
      "Pow", DataType::kFloat32, [](const auto& v) { return std::pow(v[0], v[1]); }, 0.1, 3);
  check_binary(
      "Pow", DataType::kFloat64, [](const auto& v) { return std::pow(v[0], v[1]); }, 0.1, 3);
}

TEST(OpPow, MixedBaseAndExponentDtypes) {
  const Node node = NodeBuilder("Pow").inputs(2).build();
  // float base, int exponent (broadcast scalar)
  EXPECT_TRUE(tensors_near(run1(node, {float_tensor({3}, {1.5f, -2, 3}), int64_tensor({}, {3})}),
                           float_tensor({3}, {3.375f, -8, 27})));
  // int base, int exponent: exact, by squaring
  EXPECT_TRUE(tensors_near(run1(node, {int64_tensor({4}, {3, -2, 10, 7}), int64_tensor({4}, {4, 3, 15, 0})}),
                           int64_tensor({4}, {81, -8, 1000000000000000, 1})));
  // int base, float exponent: computed in double, truncated to the base's dtype
  EXPECT_TRUE(tensors_near(
      run1(node, {tensor_of(DataType::kInt32, {3}, {2, 9, 5}), float_tensor({3}, {0.5f, 0.5f, 2})}),
      tensor_of(DataType::kInt32, {3}, {1, 3, 25})));
  // negative integer exponents truncate 1/x^n
  EXPECT_TRUE(tensors_near(run1(node, {int64_tensor({4}, {2, 1, -1, 0}), int64_tensor({1}, {-3})}),
                           int64_tensor({4}, {0, 1, -1, 0})));
  // uint8 exponent
  EXPECT_TRUE(tensors_near(run1(node, {float_tensor({2}, {2, 3}), tensor_of(DataType::kUInt8, {2}, {10, 2})}),
                           float_tensor({2}, {1024, 9})));
}

TEST(OpPow, RejectsUnsupportedDtypes) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Pow").inputs(2).build(),
                                         {tensor_of(DataType::kUInt8, {1}, {2}), float_tensor({1}, {2})}),
                         StatusCode::kInvalidArgument, "type mismatch: input 0"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Pow").inputs(2).build(),
                                         {float_tensor({1}, {2}), Tensor::allocate(DataType::kBool, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch: input 1"));
}

// --- Variadic: Max, Min, Sum, Mean ---

double max_of(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}
double min_of(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}
double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

void check_variadic(const std::string& op_type, DataType dtype, const Fn& f, double low, double high) {
  check_against_reference(op_type, dtype, {{3, 13, 17}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{3, 13, 17}, {17}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{13, 1}, {3, 1, 17}, {}}, {3, 13, 17}, f, low, high);
  check_against_reference(op_type, dtype, {{2, 3, 13, 17}, {3, 1, 1}, {1, 13, 17}, {2, 1, 1, 1}},
                          {2, 3, 13, 17}, f, low, high);
}

TEST(OpMax, MatchesReferenceForOneToFourInputs) {
  check_variadic("Max", DataType::kFloat32, max_of, -1, 1);
  check_variadic("Max", DataType::kInt64, max_of, -100, 100);
  check_variadic("Max", DataType::kUInt8, max_of, 0, 255);
  // float16 is computed through float32; picking one of the inputs, it stays exact.
  check_variadic("Max", DataType::kFloat16, max_of, -1, 1);
}

TEST(OpMax, PropagatesNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto out =
      run1(NodeBuilder("Max").inputs(2).build(), {float_tensor({2}, {nan, 1}), float_tensor({2}, {0, nan})});
  EXPECT_TRUE(std::isnan(out.data<float>()[0]));
  EXPECT_TRUE(std::isnan(out.data<float>()[1]));
}

TEST(OpMax, RejectsMixedDtypesAndNoInputs) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Max").inputs(2).build(), {float_tensor({1}, {1}), int64_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Max").inputs(0).build(), {}),
                         StatusCode::kInvalidArgument, "needs at least 1 input, has 0"));
}

TEST(OpMin, MatchesReferenceForOneToFourInputs) {
  check_variadic("Min", DataType::kFloat32, min_of, -1, 1);
  check_variadic("Min", DataType::kFloat64, min_of, -1, 1);
  check_variadic("Min", DataType::kInt8, min_of, -128, 127);
  check_variadic("Min", DataType::kFloat16, min_of, -1, 1);
}

TEST(OpMin, RejectsIncompatibleShapes) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Min").inputs(3).build(),
                      {float_tensor({2}, {1, 2}), float_tensor({1}, {1}), float_tensor({3}, {1, 2, 3})}),
      StatusCode::kInvalidArgument, "do not broadcast"));
}

TEST(OpSum, MatchesReferenceForOneToFourInputs) {
  check_variadic("Sum", DataType::kFloat32, sum_of, -1, 1);
  check_variadic("Sum", DataType::kFloat64, sum_of, -1, 1);
}

TEST(OpSum, RejectsIntegers) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Sum").inputs(2).build(), {int64_tensor({1}, {1}), int64_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpMean, MatchesReferenceForOneToFourInputs) {
  check_variadic(
      "Mean", DataType::kFloat32, [](const auto& v) { return sum_of(v) / static_cast<double>(v.size()); }, -1,
      1);
}

TEST(OpMean, RejectsIntegers) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Mean").build(), {int64_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

// --- Unary ---

TEST(OpSqrt, MatchesReference) {
  check_unary(
      "Sqrt", DataType::kFloat32, [](const auto& v) { return std::sqrt(v[0]); }, 0, 4);
  check_unary(
      "Sqrt", DataType::kFloat64, [](const auto& v) { return std::sqrt(v[0]); }, 0, 4);
}

TEST(OpSqrt, RejectsIntegers) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Sqrt").build(), {int64_tensor({1}, {4})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpExp, MatchesReference) {
  check_unary(
      "Exp", DataType::kFloat32, [](const auto& v) { return std::exp(v[0]); }, -5, 5);
}

TEST(OpExp, RejectsTwoInputs) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Exp").inputs(2).build(), {float_tensor({1}, {1}), float_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "has 2 inputs, at most 1 allowed"));
}

TEST(OpLog, MatchesReference) {
  check_unary(
      "Log", DataType::kFloat32, [](const auto& v) { return std::log(v[0]); }, 0.01, 10);
}

TEST(OpReciprocal, MatchesReference) {
  check_unary(
      "Reciprocal", DataType::kFloat32, [](const auto& v) { return 1 / v[0]; }, 0.5, 4);
}

TEST(OpFloor, MatchesReference) {
  check_unary(
      "Floor", DataType::kFloat32, [](const auto& v) { return std::floor(v[0]); }, -10, 10);
}

TEST(OpCeil, MatchesReference) {
  check_unary(
      "Ceil", DataType::kFloat32, [](const auto& v) { return std::ceil(v[0]); }, -10, 10);
}

TEST(OpErf, MatchesReference) {
  check_unary(
      "Erf", DataType::kFloat32, [](const auto& v) { return std::erf(v[0]); }, -3, 3);
}

TEST(OpNeg, MatchesReference) {
  check_unary("Neg", DataType::kFloat32, [](const auto& v) { return -v[0]; });
  check_unary(
      "Neg", DataType::kInt32, [](const auto& v) { return -v[0]; }, -1000, 1000);
  const auto out = run1(NodeBuilder("Neg").build(), {tensor_of(DataType::kInt8, {2}, {-128, 127})});
  EXPECT_TRUE(tensors_near(out, tensor_of(DataType::kInt8, {2}, {-128, -127})));  // wraps
}

TEST(OpNeg, RejectsUnsigned) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Neg").build(), {tensor_of(DataType::kUInt8, {1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpAbs, MatchesReference) {
  check_unary("Abs", DataType::kFloat32, [](const auto& v) { return std::abs(v[0]); });
  check_unary(
      "Abs", DataType::kInt64, [](const auto& v) { return std::abs(v[0]); }, -1000, 1000);
  check_unary(
      "Abs", DataType::kUInt8, [](const auto& v) { return v[0]; }, 0, 255);
}

TEST(OpAbs, RejectsBool) {
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Abs").build(), {Tensor::allocate(DataType::kBool, {1})}),
                 StatusCode::kInvalidArgument, "type mismatch"));
}

}  // namespace
}  // namespace fovea::runtime::testing
