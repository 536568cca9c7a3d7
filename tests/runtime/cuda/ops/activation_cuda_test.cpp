// The pointwise activations and Clip on CUDA against the CPU reference, float32 and float16 plans,
// float64, the integer dtypes Relu and Clip take, and every attribute that changes the result.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

const std::vector<Shape>& activation_shapes() {
  static const std::vector<Shape> shapes = {{5, 3, 13, 17}, {1, 3, 13, 17}, {2, 3, 8, 8}, {7}, {}};
  return shapes;
}

void expect_activation(const Node& node, DataType dtype, double low = -4, double high = 4) {
  std::uint32_t seed = 1;
  for (Precision p : precisions_for(dtype)) {
    for (const Shape& shape : activation_shapes()) {
      EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(dtype, shape, seed++, low, high)}, {.precision = p}))
          << node.op_type << ", " << case_name(dtype, p) << ", " << shape_string(shape);
    }
  }
}

void expect_float_activation(const Node& node) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_activation(node, dtype);
}

TEST(CudaRelu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("Relu").build());
  for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8}) {
    expect_activation(NodeBuilder("Relu").build(), dtype, -100, 100);
  }
}

TEST(CudaLeakyRelu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("LeakyRelu").build());
  expect_float_activation(NodeBuilder("LeakyRelu").attr("alpha", 0.3f).build());
}

TEST(CudaSigmoid, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("Sigmoid").build());
  // Far tails, where the formula switches to avoid overflow.
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Sigmoid").build(), {float_tensor({4}, {-100, -20, 20, 100})}));
}

TEST(CudaTanh, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("Tanh").build());
}

TEST(CudaHardSigmoid, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("HardSigmoid").build());
  expect_float_activation(NodeBuilder("HardSigmoid").attr("alpha", 0.5f).attr("beta", 0.25f).build());
}

TEST(CudaHardSwish, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("HardSwish").build());
}

TEST(CudaElu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("Elu").build());
  expect_float_activation(NodeBuilder("Elu").attr("alpha", 0.5f).build());
}

TEST(CudaGelu, BothFormsMatchCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_activation(NodeBuilder("Gelu").build());
  expect_float_activation(NodeBuilder("Gelu").attr("approximate", "tanh").build());
  // float16 plans compute Phi another way (normal_cdf_for_half): its tail towards x too. Below -4
  // GELU's results are float16 subnormals, whose spacing (6e-8) exceeds the relative tolerance.
  expect_activation(NodeBuilder("Gelu").build(), DataType::kFloat32, -4, 12);
}

// Opset 11+: bounds are scalar inputs (plan-time constants), either may be omitted.
TEST(CudaClip, BoundsFromInputsMatchCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kInt64, DataType::kInt32,
                         DataType::kInt8, DataType::kUInt8}) {
    const bool is_float = dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
    const double low = is_float ? -0.5 : 10;
    const double high = is_float ? 0.25 : 90;
    const Tensor x = random_tensor(dtype, {5, 3, 13, 17}, 1, is_float ? -1 : 0, is_float ? 1 : 100);
    const Tensor min = tensor_of(dtype, {}, {low});
    const Tensor max = tensor_of(dtype, {1}, {high});
    for (Precision p : precisions_for(dtype)) {
      const CudaCheck check{.precision = p, .constant_inputs = {1, 2}};
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 13).inputs(3).build(), {x, min, max}, check))
          << case_name(dtype, p);
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 13).inputs(2).build(), {x, min}, check))
          << case_name(dtype, p);
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 13).inputs(3).omit_input(1).build(),
                                   {x, Tensor(), max}, check))
          << case_name(dtype, p);
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 13).build(), {x}, check)) << case_name(dtype, p);
      // min > max: every element becomes max.
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 13).inputs(3).build(), {x, max, min}, check))
          << case_name(dtype, p);
    }
  }
}

// Before opset 11: bounds are float attributes, converted to the input's dtype.
TEST(CudaClip, BoundsFromAttributesMatchCpu) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    const Tensor x = random_tensor(DataType::kFloat32, {1, 3, 13, 17}, 2);
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 6).attr("min", -0.5f).attr("max", 0.5f).build(), {x},
                                 {.precision = p}));
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Clip", 6).attr("max", 0.0f).build(), {x}, {.precision = p}));
  }
}

// A bound computed at run time would need a host read inside the captured run.
TEST(CudaClip, RejectsBoundsThatAreNotConstants) {
  FOVEA_REQUIRE_GPU();
  const Status status = run_cuda_node_status(
      NodeBuilder("Clip", 13).inputs(3).build(),
      {random_tensor(DataType::kFloat32, {3, 5}, 1), float_tensor({}, {-0.5f}), float_tensor({}, {0.5f})},
      {2});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("constant 'min'"), std::string::npos) << status.to_string();
}

}  // namespace
}  // namespace fovea::runtime::testing
