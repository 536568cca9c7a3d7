#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

using UnaryFn = std::function<double(double)>;

// `node` on random inputs of batch 1 and N with odd sizes, against `f` in double.
void check_pointwise(const Node& node, DataType dtype, const UnaryFn& f, double low = -4, double high = 4) {
  for (const Shape& shape : {Shape{1, 3, 13, 17}, Shape{5, 3, 13, 17}, Shape{}}) {
    const Tensor in = random_tensor(dtype, shape, 7, low, high);
    const auto out = run_node(node, {in});
    EXPECT_TRUE(
        tensors_near(out[0], reference_map(dtype, shape, {in}, [&](const auto& v) { return f(v[0]); })))
        << node.op_type << " " << shape_string(shape);
  }
}

TEST(OpRelu, MatchesReference) {
  const UnaryFn relu = [](double x) { return std::max(x, 0.0); };
  check_pointwise(NodeBuilder("Relu").build(), DataType::kFloat32, relu);
  check_pointwise(NodeBuilder("Relu").build(), DataType::kFloat64, relu);
  check_pointwise(NodeBuilder("Relu").build(), DataType::kInt32, relu, -100, 100);
}

TEST(OpRelu, RejectsBool) {
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Relu").build(), {Tensor::allocate(DataType::kBool, {2})}),
                 StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpLeakyRelu, DefaultAndCustomAlpha) {
  check_pointwise(NodeBuilder("LeakyRelu").build(), DataType::kFloat32,
                  [](double x) { return x < 0 ? 0.01 * x : x; });
  check_pointwise(NodeBuilder("LeakyRelu").attr("alpha", 0.25f).build(), DataType::kFloat32,
                  [](double x) { return x < 0 ? 0.25 * x : x; });
}

TEST(OpLeakyRelu, RejectsAlphaOfWrongKind) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("LeakyRelu").attr("alpha", "big").build(), {float_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "alpha"));
}

TEST(OpSigmoid, MatchesReferenceAndSaturatesWithoutNan) {
  check_pointwise(NodeBuilder("Sigmoid").build(), DataType::kFloat32,
                  [](double x) { return 1 / (1 + std::exp(-x)); });
  const auto out = run_node(NodeBuilder("Sigmoid").build(), {float_tensor({4}, {-1000, -100, 100, 1000})});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({4}, {0, 0, 1, 1})));
}

TEST(OpSigmoid, RejectsIntegers) {
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Sigmoid").build(), {int64_tensor({1}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpTanh, MatchesReference) {
  check_pointwise(NodeBuilder("Tanh").build(), DataType::kFloat32, [](double x) { return std::tanh(x); });
  check_pointwise(NodeBuilder("Tanh").build(), DataType::kFloat64, [](double x) { return std::tanh(x); });
}

double hard_sigmoid(double x, double alpha, double beta) {
  return std::clamp(alpha * x + beta, 0.0, 1.0);
}

TEST(OpHardSigmoid, DefaultAndCustomAttributes) {
  check_pointwise(NodeBuilder("HardSigmoid").build(), DataType::kFloat32,
                  [](double x) { return hard_sigmoid(x, 0.2, 0.5); });
  check_pointwise(NodeBuilder("HardSigmoid").attr("alpha", 0.5f).attr("beta", 0.6f).build(),
                  DataType::kFloat32, [](double x) { return hard_sigmoid(x, 0.5, 0.6); });
}

TEST(OpHardSwish, MatchesReference) {
  check_pointwise(NodeBuilder("HardSwish").build(), DataType::kFloat32,
                  [](double x) { return x * hard_sigmoid(x, 1.0 / 6, 0.5); });
}

TEST(OpHardSwish, RejectsIntegers) {
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("HardSwish").build(), {tensor_of(DataType::kInt32, {1}, {1})}),
                 StatusCode::kInvalidArgument, "type mismatch"));
}

TEST(OpElu, DefaultAndCustomAlpha) {
  check_pointwise(NodeBuilder("Elu").build(), DataType::kFloat32,
                  [](double x) { return x < 0 ? std::expm1(x) : x; });
  check_pointwise(NodeBuilder("Elu").attr("alpha", 2.0f).build(), DataType::kFloat32,
                  [](double x) { return x < 0 ? 2 * std::expm1(x) : x; });
}

// Gelu (opset 20): the exact form through erf, and the tanh approximation, against their formulas in
// double; an unknown `approximate` is refused by name.
TEST(OpGelu, ExactAndTanhForms) {
  check_pointwise(NodeBuilder("Gelu").build(), DataType::kFloat32,
                  [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  check_pointwise(NodeBuilder("Gelu").attr("approximate", "none").build(), DataType::kFloat32,
                  [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  check_pointwise(NodeBuilder("Gelu").attr("approximate", "tanh").build(), DataType::kFloat32,
                  [k](double x) { return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x))); });
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("Gelu").attr("approximate", "fast").build(), {float_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "approximate 'fast'"));
}

// --- Clip ---

TEST(OpClip, BoundsAsOptionalInputs) {
  const Tensor x = float_tensor({5}, {-3, -1, 0, 1, 3});
  const Tensor lo = float_tensor({}, {-1.5f});
  const Tensor hi = float_tensor({}, {2});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("Clip").inputs(3).build(), {x, lo, hi})[0],
                           float_tensor({5}, {-1.5f, -1, 0, 1, 2})));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("Clip").inputs(2).build(), {x, lo})[0],
                           float_tensor({5}, {-1.5f, -1, 0, 1, 3})));
  EXPECT_TRUE(
      tensors_near(run_node(NodeBuilder("Clip").inputs(3).omit_input(1).build(), {x, Tensor(), hi})[0],
                   float_tensor({5}, {-3, -1, 0, 1, 2})));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("Clip").build(), {x})[0], x));
}

TEST(OpClip, MinAboveMaxGivesMax) {
  const auto out = run_node(NodeBuilder("Clip").inputs(3).build(),
                            {float_tensor({3}, {-5, 0, 5}), float_tensor({}, {2}), float_tensor({}, {1})});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({3}, {1, 1, 1})));
}

TEST(OpClip, IntegerTypes) {
  const auto out = run_node(NodeBuilder("Clip").inputs(3).build(),
                            {tensor_of(DataType::kInt8, {4}, {-128, -5, 5, 127}),
                             tensor_of(DataType::kInt8, {}, {-6}), tensor_of(DataType::kInt8, {}, {6})});
  EXPECT_TRUE(tensors_near(out[0], tensor_of(DataType::kInt8, {4}, {-6, -5, 5, 6})));
  const Tensor big = random_tensor(DataType::kInt64, {3, 13, 17}, 3, -1000, 1000);
  const auto unbounded = run_node(NodeBuilder("Clip").build(), {big});
  EXPECT_TRUE(tensors_near(unbounded[0], big));
}

TEST(OpClip, AttributesBeforeOpset11) {
  const Tensor x = random_tensor(DataType::kFloat32, {3, 13, 17}, 4, -2, 2);
  const auto out = run_node(NodeBuilder("Clip", 6).attr("min", -0.5f).attr("max", 0.75f).build(), {x});
  EXPECT_TRUE(tensors_near(out[0], reference_map(DataType::kFloat32, x.shape(), {x}, [](const auto& v) {
                             return std::clamp(v[0], -0.5, 0.75);
                           })));
  const auto only_max = run_node(NodeBuilder("Clip", 6).attr("max", 0.0f).build(), {x});
  EXPECT_TRUE(tensors_near(only_max[0], reference_map(DataType::kFloat32, x.shape(), {x},
                                                      [](const auto& v) { return std::min(v[0], 0.0); })));
}

TEST(OpClip, RejectsNonScalarBoundsAndMixedDtypes) {
  const Tensor x = float_tensor({2}, {1, 2});
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("Clip").inputs(2).build(), {x, float_tensor({2}, {0, 1})}),
                 StatusCode::kInvalidArgument, "min must be a scalar"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Clip").inputs(3).build(),
                                         {x, float_tensor({}, {0}), int64_tensor({}, {1})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

// --- Softmax / LogSoftmax ---

// Normalizes `x` over rows of (outer, n, inner) in double, the obvious way.
Tensor reference_softmax(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner, bool log) {
  Tensor out = Tensor::allocate(x.dtype(), x.shape());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t k) { return (o * n + k) * inner + i; };
      double sum = 0;
      for (std::int64_t k = 0; k < n; ++k) sum += std::exp(number_at(x, at(k)));
      for (std::int64_t k = 0; k < n; ++k) {
        const double v = number_at(x, at(k));
        set_number(out, at(k), log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  }
  return out;
}

void check_softmax_variants(const std::string& op_type) {
  const bool log = op_type == "LogSoftmax";
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 13, 17}, 5, -5, 5);
  // Opset 13+: one axis, default -1.
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 13).build(), {x})[0],
                           reference_softmax(x, 2 * 3 * 13, 17, 1, log)));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 13).attr("axis", 1).build(), {x})[0],
                           reference_softmax(x, 2, 3, 13 * 17, log)));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 13).attr("axis", -2).build(), {x})[0],
                           reference_softmax(x, 2 * 3, 13, 17, log)));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 13).attr("axis", 0).build(), {x})[0],
                           reference_softmax(x, 1, 2, 3 * 13 * 17, log)));
  // Opset 11: coerced to 2-D at axis (default 1), normalized over everything from there on.
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 11).build(), {x})[0],
                           reference_softmax(x, 2, 3 * 13 * 17, 1, log)));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 11).attr("axis", -1).build(), {x})[0],
                           reference_softmax(x, 2 * 3 * 13, 17, 1, log)));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 11).attr("axis", 2).build(), {x})[0],
                           reference_softmax(x, 2 * 3, 13 * 17, 1, log)));
  // Large inputs: max-subtraction keeps exp finite.
  const Tensor large = float_tensor({2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 13).build(), {large})[0],
                           reference_softmax(float_tensor({2, 3}, {0, 1, 2, 0, -1, -2}), 2, 3, 1, log)));
  // float64, and a row long enough to be one whole parallel chunk per row.
  const Tensor wide = random_tensor(DataType::kFloat64, {3, 20001}, 6, -3, 3);
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder(op_type, 13).build(), {wide})[0],
                           reference_softmax(wide, 3, 20001, 1, log)));
}

void check_softmax_rejections(const std::string& op_type) {
  const Tensor x = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder(op_type).attr("axis", 2).build(), {x}),
                         StatusCode::kInvalidArgument, "axis 2 is out of range"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder(op_type).attr("axis", -3).build(), {x}),
                         StatusCode::kInvalidArgument, "out of range"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder(op_type).build(), {int64_tensor({2}, {1, 2})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder(op_type).build(), {float_tensor({}, {1})}),
                         StatusCode::kInvalidArgument, "rank 0"));
}

TEST(OpSoftmax, MatchesReferenceInBothOpsetVariants) {
  check_softmax_variants("Softmax");
}
TEST(OpSoftmax, RejectsBadAxisDtypeAndRank) {
  check_softmax_rejections("Softmax");
}
TEST(OpLogSoftmax, MatchesReferenceInBothOpsetVariants) {
  check_softmax_variants("LogSoftmax");
}
TEST(OpLogSoftmax, RejectsBadAxisDtypeAndRank) {
  check_softmax_rejections("LogSoftmax");
}

TEST(OpSoftmax, EmptyInputGivesEmptyOutput) {
  const auto out = run_node(NodeBuilder("Softmax").build(), {Tensor::allocate(DataType::kFloat32, {0, 5})});
  EXPECT_EQ(out[0].shape(), (Shape{0, 5}));
}

}  // namespace
}  // namespace fovea::runtime::testing
