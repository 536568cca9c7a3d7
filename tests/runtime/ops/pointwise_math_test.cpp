// The pointwise math ops (ops/pointwise_math.cpp): each against hand-computed values at the points
// that define it (halves for Round, signs for Mod, thresholds for the activations), and the smooth
// functions against libm in double on random inputs.
#include <cmath>
#include <limits>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

using UnaryFn = std::function<double(double)>;

// `node` on random inputs in [low, high) of odd shapes against `f` in double.
void check_pointwise(const Node& node, DataType dtype, const UnaryFn& f, double low, double high) {
  for (const Shape& shape : {Shape{1, 3, 13, 17}, Shape{5, 3, 7}, Shape{}}) {
    const Tensor in = random_tensor(dtype, shape, 11, low, high);
    const auto out = run_node(node, {in});
    EXPECT_TRUE(
        tensors_near(out[0], reference_map(dtype, shape, {in}, [&](const auto& v) { return f(v[0]); })))
        << node.op_type << " " << shape_string(shape);
  }
}

void check_both_floats(const std::string& op_type, const UnaryFn& f, double low = -1, double high = 1) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    check_pointwise(NodeBuilder(op_type).build(), dtype, f, low, high);
  }
}

Tensor run_one(const Node& node, const std::vector<Tensor>& inputs) {
  return run_node(node, inputs)[0];
}

TEST(OpCos, MatchesLibm) {
  check_both_floats(
      "Cos", [](double x) { return std::cos(x); }, -7, 7);
}
TEST(OpSin, MatchesLibm) {
  check_both_floats(
      "Sin", [](double x) { return std::sin(x); }, -7, 7);
}
TEST(OpTan, MatchesLibm) {
  check_both_floats(
      "Tan", [](double x) { return std::tan(x); }, -1.2, 1.2);
}
TEST(OpAcos, MatchesLibm) {
  check_both_floats("Acos", [](double x) { return std::acos(x); });
}
TEST(OpAsin, MatchesLibm) {
  check_both_floats("Asin", [](double x) { return std::asin(x); });
}
TEST(OpAtan, MatchesLibm) {
  check_both_floats(
      "Atan", [](double x) { return std::atan(x); }, -10, 10);
}
TEST(OpSinh, MatchesLibm) {
  check_both_floats(
      "Sinh", [](double x) { return std::sinh(x); }, -3, 3);
}
TEST(OpCosh, MatchesLibm) {
  check_both_floats(
      "Cosh", [](double x) { return std::cosh(x); }, -3, 3);
}
TEST(OpAsinh, MatchesLibm) {
  check_both_floats(
      "Asinh", [](double x) { return std::asinh(x); }, -10, 10);
}
TEST(OpAcosh, MatchesLibm) {
  check_both_floats(
      "Acosh", [](double x) { return std::acosh(x); }, 1, 10);
}
TEST(OpAtanh, MatchesLibm) {
  check_both_floats(
      "Atanh", [](double x) { return std::atanh(x); }, -0.99, 0.99);
}

TEST(OpCos, KnownValues) {
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("Cos").build(), {float_tensor({3}, {0, 3.14159265f, 1.5707963f})}),
                   float_tensor({3}, {1, -1, 0})));
}

TEST(OpRound, HalvesGoToEven) {
  const Tensor x = float_tensor({9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f, 0.0f});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Round").build(), {x}),
                           float_tensor({9}, {0, 2, 2, -0, -2, 2, 3, -3, 0}), 0, 0));
}

TEST(OpRound, RejectsIntegers) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Round").build(), {int64_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpSign, FloatsAndIntegers) {
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Sign").build(), {float_tensor({4}, {-2.5f, 0, 3, -0.0f})}),
                           float_tensor({4}, {-1, 0, 1, 0}), 0, 0));
  EXPECT_TRUE(
      tensors_near(run_one(NodeBuilder("Sign").build(), {tensor_of(DataType::kInt8, {3}, {-128, 0, 127})}),
                   tensor_of(DataType::kInt8, {3}, {-1, 0, 1})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Sign").build(), {tensor_of(DataType::kUInt8, {2}, {0, 200})}),
                           tensor_of(DataType::kUInt8, {2}, {0, 1})));
  const Tensor nan = run_one(NodeBuilder("Sign").build(), {float_tensor({1}, {std::nanf("")})});
  EXPECT_TRUE(std::isnan(nan.data<float>()[0]));
}

TEST(OpIsNaN, FlagsOnlyNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor out =
      run_one(NodeBuilder("IsNaN").build(), {float_tensor({4}, {1, std::nanf(""), inf, -inf})});
  EXPECT_TRUE(tensors_near(out, tensor_of(DataType::kBool, {4}, {0, 1, 0, 0})));
}

TEST(OpIsInf, DetectAttributes) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = tensor_of(DataType::kFloat64, {5}, {1, std::nan(""), inf, -inf, -1e308});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("IsInf").build(), {x}),
                           tensor_of(DataType::kBool, {5}, {0, 0, 1, 1, 0})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("IsInf").attr("detect_negative", 0).build(), {x}),
                           tensor_of(DataType::kBool, {5}, {0, 0, 1, 0, 0})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("IsInf").attr("detect_positive", 0).build(), {x}),
                           tensor_of(DataType::kBool, {5}, {0, 0, 0, 1, 0})));
}

TEST(OpCelu, DefaultAndCustomAlpha) {
  check_pointwise(
      NodeBuilder("Celu").build(), DataType::kFloat32, [](double x) { return x > 0 ? x : std::expm1(x); }, -4,
      4);
  check_pointwise(
      NodeBuilder("Celu").attr("alpha", 2.0f).build(), DataType::kFloat64,
      [](double x) { return x > 0 ? x : 2 * std::expm1(x / 2); }, -4, 4);
}

TEST(OpCelu, RejectsZeroAlpha) {
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Celu").attr("alpha", 0.0f).build(), {float_tensor({1}, {1})}),
                 StatusCode::kInvalidArgument, "alpha"));
}

TEST(OpSelu, DefaultAndCustomConstants) {
  check_pointwise(
      NodeBuilder("Selu").build(), DataType::kFloat32,
      [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x)); }, -4, 4);
  check_pointwise(
      NodeBuilder("Selu").attr("alpha", 2.0f).attr("gamma", 3.0f).build(), DataType::kFloat64,
      [](double x) { return 3 * (x > 0 ? x : 2 * std::expm1(x)); }, -4, 4);
}

TEST(OpThresholdedRelu, KeepsOnlyAboveAlpha) {
  const Tensor x = float_tensor({5}, {-1, 0.5f, 1, 1.5f, 3});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("ThresholdedRelu").build(), {x}),
                           float_tensor({5}, {0, 0, 0, 1.5f, 3})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("ThresholdedRelu").attr("alpha", 0.25f).build(), {x}),
                           float_tensor({5}, {0, 0.5f, 1, 1.5f, 3})));
}

TEST(OpShrink, BiasAndLambda) {
  const Tensor x = float_tensor({5}, {-2, -0.5f, 0, 0.5f, 2});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Shrink").attr("lambd", 1.0f).attr("bias", 0.5f).build(), {x}),
                           float_tensor({5}, {-1.5f, 0, 0, 0, 1.5f})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Shrink").build(), {x}), float_tensor({5}, {-2, 0, 0, 0, 2})));
}

TEST(OpSoftplus, MatchesReferenceWithoutOverflow) {
  check_both_floats(
      "Softplus", [](double x) { return std::log1p(std::exp(x)); }, -10, 10);
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Softplus").build(), {float_tensor({2}, {1000, -1000})}),
                           float_tensor({2}, {1000, 0})));
}

TEST(OpSoftsign, MatchesReference) {
  check_both_floats(
      "Softsign", [](double x) { return x / (1 + std::abs(x)); }, -10, 10);
}

TEST(OpMod, IntegerSignFollowsDivisorOrDividend) {
  const Tensor a = int64_tensor({6}, {-4, 7, 5, 4, -7, 9});
  const Tensor b = int64_tensor({6}, {3, -3, 2, -3, 0, -1});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Mod").inputs(2).build(), {a, b}),
                           int64_tensor({6}, {2, -2, 1, -2, 0, 0})));
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Mod").inputs(2).attr("fmod", 1).build(), {a, b}),
                           int64_tensor({6}, {-1, 1, 1, 1, 0, 0})));
  // lowest() % -1 would trap; it is 0.
  const Tensor low = tensor_of(DataType::kInt8, {1}, {-128});
  EXPECT_TRUE(tensors_near(
      run_one(NodeBuilder("Mod").inputs(2).build(), {low, tensor_of(DataType::kInt8, {1}, {-1})}),
      tensor_of(DataType::kInt8, {1}, {0})));
}

TEST(OpMod, FloatFmodBroadcasts) {
  const Tensor a = float_tensor({2, 3}, {-4.5f, 7, 5.5f, 4, -7, 9});
  const Tensor b = float_tensor({3}, {2, -3, 2});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("Mod").inputs(2).attr("fmod", 1).build(), {a, b}),
                           float_tensor({2, 3}, {-0.5f, 1, 1.5f, 0, -1, 1})));
}

TEST(OpMod, FloatsNeedFmod) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Mod").inputs(2).build(), {float_tensor({1}, {1}), float_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "fmod"));
}

TEST(OpPRelu, SlopeBroadcastsPerChannel) {
  const Tensor x = float_tensor({1, 2, 2}, {-1, 2, -3, 4});
  const Tensor slope = float_tensor({2, 1}, {0.5f, 0.25f});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("PRelu").inputs(2).build(), {x, slope}),
                           float_tensor({1, 2, 2}, {-0.5f, 2, -0.75f, 4})));
}

TEST(OpPRelu, OldOpsetSlopeIsPerChannel) {
  // Opset 6 (PyTorch's early exporter): a 1-D slope of C elements applies along axis 1.
  const Tensor x = float_tensor({1, 2, 3}, {-1, -2, 3, -4, 5, -6});
  const Tensor slope = float_tensor({2}, {0.5f, 0.25f});
  EXPECT_TRUE(tensors_near(run_one(NodeBuilder("PRelu", 6).inputs(2).build(), {x, slope}),
                           float_tensor({1, 2, 3}, {-0.5f, -1, 3, -1, 5, -1.5f})));
}

TEST(OpPRelu, RejectsSlopeThatDoesNotBroadcastToX) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("PRelu").inputs(2).build(),
                                         {float_tensor({2}, {1, 2}), float_tensor({2, 2}, {1, 2, 3, 4})}),
                         StatusCode::kInvalidArgument, "broadcast"));
}

}  // namespace
}  // namespace fovea::runtime::testing
