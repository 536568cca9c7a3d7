#include <cstdint>
#include <limits>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

using Fn = std::function<double(const std::vector<double>&)>;

Tensor bools(Shape shape, const std::vector<double>& values) {
  return tensor_of(DataType::kBool, std::move(shape), values);
}

// Random inputs of `dtype` in several broadcast patterns through `op_type`, against `f`; small
// integer ranges so that equal elements occur.
void check_broadcast(const std::string& op_type, DataType in_dtype, DataType out_dtype, const Fn& f,
                     double low = -3, double high = 3) {
  const std::vector<std::vector<Shape>> patterns = {
      {{3, 13, 17}, {3, 13, 17}}, {{3, 13, 17}, {}}, {{3, 1, 17}, {13, 1}}, {{2, 3, 1, 1}, {1, 1, 13, 17}}};
  for (const auto& shapes : patterns) {
    const Tensor a = random_tensor(in_dtype, shapes[0], 11, low, high);
    const Tensor b = random_tensor(in_dtype, shapes[1], 12, low, high);
    const auto out = run_node(NodeBuilder(op_type).inputs(2).build(), {a, b});
    const Shape out_shape = broadcast_shape_of(shapes[0], shapes[1]);
    EXPECT_TRUE(tensors_near(out[0], reference_map(out_dtype, out_shape, {a, b}, f)))
        << op_type << " " << shape_string(shapes[0]) << " " << shape_string(shapes[1]);
  }
}

TEST(OpEqual, MatchesReferenceForNumbersAndBools) {
  const Fn eq = [](const auto& v) { return v[0] == v[1] ? 1.0 : 0.0; };
  check_broadcast("Equal", DataType::kFloat32, DataType::kBool, eq);
  check_broadcast("Equal", DataType::kInt64, DataType::kBool, eq);
  check_broadcast("Equal", DataType::kBool, DataType::kBool, eq);
  const auto out =
      run_node(NodeBuilder("Equal").inputs(2).build(), {int64_tensor({3}, {1, 2, 3}), int64_tensor({}, {2})});
  EXPECT_TRUE(tensors_near(out[0], bools({3}, {0, 1, 0})));
}

TEST(OpEqual, RejectsMixedDtypes) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Equal").inputs(2).build(),
                                         {float_tensor({1}, {1}), int64_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpGreater, MatchesReference) {
  const Fn gt = [](const auto& v) { return v[0] > v[1] ? 1.0 : 0.0; };
  check_broadcast("Greater", DataType::kFloat32, DataType::kBool, gt);
  check_broadcast("Greater", DataType::kInt32, DataType::kBool, gt);
}

TEST(OpGreater, RejectsBool) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Greater").inputs(2).build(), {bools({1}, {1}), bools({1}, {0})}),
      StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpLess, MatchesReference) {
  const Fn lt = [](const auto& v) { return v[0] < v[1] ? 1.0 : 0.0; };
  check_broadcast("Less", DataType::kFloat64, DataType::kBool, lt);
  check_broadcast("Less", DataType::kUInt8, DataType::kBool, lt, 0, 6);
}

TEST(OpLess, NanComparesFalse) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto out = run_node(NodeBuilder("Less").inputs(2).build(),
                            {float_tensor({2}, {nan, 1}), float_tensor({2}, {1, nan})});
  EXPECT_TRUE(tensors_near(out[0], bools({2}, {0, 0})));
}

TEST(OpGreaterOrEqual, MatchesReference) {
  check_broadcast("GreaterOrEqual", DataType::kInt64, DataType::kBool,
                  [](const auto& v) { return v[0] >= v[1] ? 1.0 : 0.0; });
}

TEST(OpLessOrEqual, MatchesReference) {
  check_broadcast("LessOrEqual", DataType::kInt8, DataType::kBool,
                  [](const auto& v) { return v[0] <= v[1] ? 1.0 : 0.0; });
}

TEST(OpAnd, TruthTableAndBroadcast) {
  const auto out =
      run_node(NodeBuilder("And").inputs(2).build(), {bools({4}, {0, 0, 1, 1}), bools({4}, {0, 1, 0, 1})});
  EXPECT_TRUE(tensors_near(out[0], bools({4}, {0, 0, 0, 1})));
  check_broadcast("And", DataType::kBool, DataType::kBool,
                  [](const auto& v) { return v[0] != 0 && v[1] != 0; });
}

TEST(OpAnd, RejectsNonBool) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("And").inputs(2).build(), {float_tensor({1}, {1}), float_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpOr, TruthTableAndBroadcast) {
  const auto out =
      run_node(NodeBuilder("Or").inputs(2).build(), {bools({4}, {0, 0, 1, 1}), bools({4}, {0, 1, 0, 1})});
  EXPECT_TRUE(tensors_near(out[0], bools({4}, {0, 1, 1, 1})));
  check_broadcast("Or", DataType::kBool, DataType::kBool,
                  [](const auto& v) { return v[0] != 0 || v[1] != 0; });
}

TEST(OpXor, TruthTableAndBroadcast) {
  const auto out =
      run_node(NodeBuilder("Xor").inputs(2).build(), {bools({4}, {0, 0, 1, 1}), bools({4}, {0, 1, 0, 1})});
  EXPECT_TRUE(tensors_near(out[0], bools({4}, {0, 1, 1, 0})));
  check_broadcast("Xor", DataType::kBool, DataType::kBool,
                  [](const auto& v) { return (v[0] != 0) != (v[1] != 0); });
}

TEST(OpNot, Inverts) {
  const Tensor x = random_tensor(DataType::kBool, {3, 13, 17}, 9);
  const auto out = run_node(NodeBuilder("Not").build(), {x});
  EXPECT_TRUE(tensors_near(
      out[0], reference_map(DataType::kBool, x.shape(), {x}, [](const auto& v) { return v[0] == 0; })));
}

TEST(OpNot, RejectsNonBool) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Not").build(), {int64_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpWhere, ThreeWayBroadcastForSeveralDtypes) {
  const Tensor condition = random_tensor(DataType::kBool, {13, 1}, 1);
  for (DataType dtype :
       {DataType::kFloat32, DataType::kInt64, DataType::kFloat16, DataType::kUInt8, DataType::kInt32}) {
    const Tensor x = random_tensor(dtype, {3, 1, 17}, 2, 0, 100);
    const Tensor y = random_tensor(dtype, {}, 3, 0, 100);
    const auto out = run_node(NodeBuilder("Where").inputs(3).build(), {condition, x, y});
    EXPECT_TRUE(tensors_near(out[0], reference_map(dtype, {3, 13, 17}, {condition, x, y},
                                                   [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; })))
        << data_type_name(dtype);
  }
}

TEST(OpWhere, HandWritten) {
  const auto out = run_node(
      NodeBuilder("Where").inputs(3).build(),
      {bools({2, 2}, {1, 0, 1, 1}), float_tensor({2, 2}, {1, 2, 3, 4}), float_tensor({2, 2}, {9, 8, 7, 6})});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({2, 2}, {1, 8, 3, 4})));
}

TEST(OpWhere, RejectsBadConditionAndMixedBranches) {
  const Tensor x = float_tensor({2}, {1, 2});
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Where").inputs(3).build(), {x, x, x}),
                         StatusCode::kInvalidArgument, "type mismatch: input 0"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Where").inputs(3).build(),
                                         {bools({2}, {1, 0}), x, int64_tensor({2}, {1, 2})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Where").inputs(3).build(), {bools({3}, {1, 0, 1}), x, x}),
                 StatusCode::kInvalidArgument, "do not broadcast"));
}

}  // namespace
}  // namespace fovea::runtime::testing
