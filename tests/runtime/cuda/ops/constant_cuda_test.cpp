// Constant, Shape, Size, ConstantOfShape and Range on CUDA against the CPU reference. Plans fold
// them, but a node that still runs must give the same values.
#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

TEST(CudaConstant, EveryValueAttribute) {
  FOVEA_REQUIRE_GPU();
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Constant")
                                   .inputs(0)
                                   .attr("value", random_tensor(DataType::kFloat32, {3, 13, 5}, 1))
                                   .build(),
                               {}));
  EXPECT_TRUE(cuda_matches_cpu(
      NodeBuilder("Constant").inputs(0).attr("value", random_tensor(DataType::kFloat16, {7}, 2)).build(),
      {}));
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Constant")
                                   .inputs(0)
                                   .attr("value", random_tensor(DataType::kInt32, {2, 3}, 3, -50, 50))
                                   .build(),
                               {}));
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Constant").inputs(0).attr("value_float", 2.5f).build(), {}));
  EXPECT_TRUE(cuda_matches_cpu(
      NodeBuilder("Constant").inputs(0).attr("value_floats", std::vector<float>{1, -2, 3}).build(), {}));
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Constant").inputs(0).attr("value_int", 7).build(), {}));
  EXPECT_TRUE(cuda_matches_cpu(
      NodeBuilder("Constant").inputs(0).attr("value_ints", std::vector<std::int64_t>{-1, 3, 5}).build(), {}));
  EXPECT_TRUE(cuda_matches_cpu(
      NodeBuilder("Constant").inputs(0).attr("value", Tensor::allocate(DataType::kFloat32, {0, 4})).build(),
      {}));
}

TEST(CudaShape, StartAndEnd) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {4, 3, 13, 17}, 1);
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Shape").build(), {x}, {.precision = p}));
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Shape", 15).attr("start", 1).attr("end", -1).build(), {x},
                                 {.precision = p}));
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Shape", 15).attr("start", 3).attr("end", 1).build(), {x},
                                 {.precision = p}));
  }
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Shape").build(), {random_tensor(DataType::kInt8, {1, 5}, 2)}));
}

TEST(CudaSize, CountsElements) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Size").build(),
                                 {random_tensor(DataType::kFloat32, {3, 13, 17}, 1)}, {.precision = p}));
  }
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Size").build(), {Tensor::allocate(DataType::kBool, {4, 0})}));
}

TEST(CudaConstantOfShape, FillValues) {
  FOVEA_REQUIRE_GPU();
  const Tensor shape = int64_tensor({3}, {2, 13, 17});
  const auto fill = [&](Tensor value) {
    return cuda_matches_cpu(NodeBuilder("ConstantOfShape").attr("value", std::move(value)).build(), {shape},
                            {.constant_inputs = {0}});
  };
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("ConstantOfShape").build(), {shape}, {.constant_inputs = {0}}));
  EXPECT_TRUE(fill(float_tensor({1}, {-1.5f})));
  EXPECT_TRUE(fill(Tensor::from_vector(DataType::kFloat16, {1}, std::vector<Half>{float_to_half(0.25f)})));
  EXPECT_TRUE(fill(int64_tensor({1}, {-7})));
  EXPECT_TRUE(fill(Tensor::from_vector(DataType::kInt32, {1}, std::vector<std::int32_t>{9})));
  EXPECT_TRUE(fill(Tensor::from_vector(DataType::kUInt8, {1}, std::vector<std::uint8_t>{200})));
  EXPECT_TRUE(fill(Tensor::from_vector(DataType::kBool, {1}, std::vector<bool>{true})));
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("ConstantOfShape").attr("value", float_tensor({1}, {3})).build(),
                               {int64_tensor({0}, {})}, {.constant_inputs = {0}}));
}

// Range's output length comes from constant inputs; the kernel reads start and delta on the device.
TEST(CudaRange, FloatAndIntegerRanges) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("Range").inputs(3).build();
  const auto scalar = [](float v) { return float_tensor({}, {v}); };
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(node, {scalar(-3.0f), scalar(7.5f), scalar(0.37f)},
                                 {.precision = p, .constant_inputs = {0, 1, 2}}));
    EXPECT_TRUE(cuda_matches_cpu(node, {scalar(10.0f), scalar(1.0f), scalar(-1.25f)},
                                 {.precision = p, .constant_inputs = {0, 1, 2}}));
  }
  EXPECT_TRUE(cuda_matches_cpu(node,
                               {int64_tensor({}, {-5}), int64_tensor({}, {1000}), int64_tensor({}, {7})},
                               {.constant_inputs = {0, 1, 2}}));
  const auto i32 = [](std::int32_t v) { return Tensor::from_vector(DataType::kInt32, {}, std::vector{v}); };
  EXPECT_TRUE(cuda_matches_cpu(node, {i32(20), i32(-3), i32(-4)}, {.constant_inputs = {0, 1, 2}}));
  const auto f64 = [](double v) { return Tensor::from_vector(DataType::kFloat64, {}, std::vector{v}); };
  EXPECT_TRUE(cuda_matches_cpu(node, {f64(0.5), f64(100.0), f64(0.1)}, {.constant_inputs = {0, 1, 2}}));
  EXPECT_TRUE(cuda_matches_cpu(node, {f64(1), f64(1), f64(1)}, {.constant_inputs = {0, 1, 2}}));  // empty
}

}  // namespace
}  // namespace fovea::runtime::testing
