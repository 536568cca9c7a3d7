// The pointwise math ops on CUDA (ops/pointwise_math.h) against the CPU reference: random inputs of
// odd sizes over each function's domain, float32 and float16 plans, float64, the integer dtypes
// Sign, Mod and PRelu take, and every attribute that changes the result.
#include <limits>

#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

const std::vector<Shape>& unary_shapes() {
  static const std::vector<Shape> shapes = {{5, 3, 13, 17}, {1, 3, 13, 17}, {2, 3, 8, 8}, {7}, {}};
  return shapes;
}

void expect_unary(const Node& node, DataType dtype, double low, double high) {
  std::uint32_t seed = 1;
  for (Precision p : precisions_for(dtype)) {
    for (const Shape& shape : unary_shapes()) {
      EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(dtype, shape, seed++, low, high)}, {.precision = p}))
          << node.op_type << ", " << case_name(dtype, p) << ", " << shape_string(shape);
    }
  }
}

// float32 (as float32 and float16 plans) and float64 inputs in [low, high).
void expect_float_unary(const Node& node, double low = -4, double high = 4) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_unary(node, dtype, low, high);
}

TEST(CudaCos, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Cos").build(), -7, 7);
}
TEST(CudaSin, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Sin").build(), -7, 7);
}
TEST(CudaTan, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Tan").build(), -1.2, 1.2);
}
TEST(CudaAcos, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Acos").build(), -1, 1);
}
TEST(CudaAsin, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Asin").build(), -1, 1);
}
TEST(CudaAtan, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Atan").build(), -10, 10);
}
TEST(CudaSinh, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Sinh").build());
}
TEST(CudaCosh, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Cosh").build());
}
TEST(CudaAsinh, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Asinh").build(), -10, 10);
}
TEST(CudaAcosh, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Acosh").build(), 1, 10);
}
TEST(CudaAtanh, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Atanh").build(), -0.99, 0.99);
}

TEST(CudaRound, MatchesCpuIncludingHalves) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Round").build(), -10, 10);
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Round").build(),
                               {float_tensor({6}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f})}));
}

TEST(CudaSign, MatchesCpuOnEveryDtype) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Sign").build());
  for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8}) {
    expect_unary(NodeBuilder("Sign").build(), dtype, -100, 100);
  }
  expect_unary(NodeBuilder("Sign").build(), DataType::kUInt8, 0, 3);
}

// Random values with NaN and both infinities mixed in.
Tensor with_specials(DataType dtype, const Shape& shape, std::uint32_t seed) {
  Tensor t = random_tensor(dtype, shape, seed, -3, 3);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  for (std::int64_t i = 0; i < t.numel(); i += 5) set_number(t, i, specials[(i / 5) % 3]);
  return t;
}

void expect_predicate(const Node& node) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    for (Precision p : precisions_for(dtype)) {
      for (const Shape& shape : unary_shapes()) {
        EXPECT_TRUE(cuda_matches_cpu(node, {with_specials(dtype, shape, 3)}, {.precision = p}))
            << node.op_type << ", " << case_name(dtype, p) << ", " << shape_string(shape);
      }
    }
  }
}

TEST(CudaIsNaN, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_predicate(NodeBuilder("IsNaN").build());
}

TEST(CudaIsInf, MatchesCpuForEachDetectAttribute) {
  FOVEA_REQUIRE_GPU();
  expect_predicate(NodeBuilder("IsInf").build());
  expect_predicate(NodeBuilder("IsInf").attr("detect_positive", 0).build());
  expect_predicate(NodeBuilder("IsInf").attr("detect_negative", 0).build());
}

TEST(CudaCelu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Celu").build());
  expect_float_unary(NodeBuilder("Celu").attr("alpha", 0.5f).build());
}

TEST(CudaSelu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Selu").build());
  expect_float_unary(NodeBuilder("Selu").attr("alpha", 2.0f).attr("gamma", 0.5f).build());
}

TEST(CudaThresholdedRelu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("ThresholdedRelu").build());
  expect_float_unary(NodeBuilder("ThresholdedRelu").attr("alpha", -0.5f).build());
}

TEST(CudaShrink, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Shrink").build());
  expect_float_unary(NodeBuilder("Shrink").attr("lambd", 1.5f).attr("bias", 0.25f).build());
}

TEST(CudaSoftplus, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Softplus").build(), -20, 20);
}

TEST(CudaSoftsign, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary(NodeBuilder("Softsign").build(), -20, 20);
}

// a in [-50, 50), b in [low, high) over every broadcast pattern.
void expect_mod(const Node& node, DataType dtype, Precision p, double low, double high) {
  std::uint32_t seed = 1;
  for (const ShapePair& shapes : broadcast_shapes()) {
    const Tensor a = random_tensor(dtype, shapes.a, seed++, -50, 50);
    const Tensor b = random_tensor(dtype, shapes.b, seed++, low, high);
    EXPECT_TRUE(cuda_matches_cpu(node, {a, b}, {.precision = p}))
        << case_name(dtype, p) << ", " << shapes_string(shapes);
  }
}

TEST(CudaMod, FloatFmodMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("Mod").inputs(2).attr("fmod", 1).build();
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    for (Precision p : precisions_for(dtype)) expect_mod(node, dtype, p, 0.5, 7);
  }
  expect_mod(node, DataType::kFloat32, Precision::kFloat32, -7, -0.5);
}

TEST(CudaMod, IntegersMatchCpuWithEitherSignRule) {
  FOVEA_REQUIRE_GPU();
  for (int fmod : {0, 1}) {
    const Node node = NodeBuilder("Mod").inputs(2).attr("fmod", fmod).build();
    for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8}) {
      expect_mod(node, dtype, Precision::kFloat32, -7, 7);  // zero divisors included
    }
  }
  const Tensor a = random_tensor(DataType::kUInt8, {5, 3, 13, 17}, 1, 0, 250);
  const Tensor b = random_tensor(DataType::kUInt8, {13, 17}, 2, 0, 9);
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Mod").inputs(2).build(), {a, b}));
}

TEST(CudaPRelu, MatchesCpuWithEverySlopeLayout) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("PRelu").inputs(2).build();
  const Shape x_shapes[] = {{5, 3, 13, 17}, {1, 3, 13, 17}, {5, 3, 13, 17}, {4, 7}};
  const Shape slope_shapes[] = {{3, 1, 1}, {3, 1, 1}, {}, {7}};
  std::uint32_t seed = 1;
  for (std::size_t c = 0; c < std::size(x_shapes); ++c) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
      for (Precision p : precisions_for(dtype)) {
        const Tensor x = random_tensor(dtype, x_shapes[c], seed++, -4, 4);
        const Tensor slope = random_tensor(dtype, slope_shapes[c], seed++, 0, 1);
        EXPECT_TRUE(cuda_matches_cpu(node, {x, slope}, {.precision = p})) << case_name(dtype, p);
      }
    }
  }
  for (DataType dtype : {DataType::kInt64, DataType::kInt32}) {
    EXPECT_TRUE(cuda_matches_cpu(
        node, {random_tensor(dtype, {3, 5, 7}, 1, -50, 50), random_tensor(dtype, {5, 1}, 2, -3, 3)}));
  }
  // Opset 6: a 1-D slope per channel (axis 1).
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("PRelu", 6).inputs(2).build(),
                               {random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 3, -4, 4),
                                random_tensor(DataType::kFloat32, {3}, 4, 0, 1)}));
}

}  // namespace
}  // namespace fovea::runtime::testing
