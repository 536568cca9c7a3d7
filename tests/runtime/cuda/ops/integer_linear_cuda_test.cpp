// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on CUDA against the CPU reference, on
// random int8/uint8 inputs of odd sizes (more than one 64x64 tile, depths that are not multiples of
// the kernel's 16-deep slices). Integer outputs must agree exactly. Scales and zero points go to the
// kernel both as device inputs and as plan-time constants.
#include <vector>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kU8 = DataType::kUInt8;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kF32 = DataType::kFloat32;

Tensor random_scale(Shape shape, std::uint32_t seed) {
  return random_tensor(kF32, std::move(shape), seed, 0.001, 0.02);
}

// Both ways the executor hands parameters over: as device tensors, and as plan-time constants.
std::vector<CudaCheck> parameter_placements(std::vector<int> parameters) {
  return {CudaCheck{}, CudaCheck{.constant_inputs = std::move(parameters)}};
}

TEST(CudaMatMulInteger, MatchesCpuOnOddSizesAndBatches) {
  FOVEA_REQUIRE_GPU();
  const std::pair<Shape, Shape> cases[] = {
      {{7, 13}, {13, 5}},
      {{67, 45}, {45, 131}},         // several tiles, a depth past two 16-deep slices
      {{3, 9, 17}, {17, 11}},        // one B for every batch entry
      {{2, 1, 5, 7}, {1, 3, 7, 4}},  // uneven broadcasting
      {{13}, {13, 6}},               // 1-D operands are promoted
      {{4, 5, 13}, {13}},
  };
  std::uint32_t seed = 1;
  for (const auto& [a_shape, b_shape] : cases) {
    for (DataType a_type : {kU8, kI8}) {
      const DataType b_type = a_type == kU8 ? kI8 : kU8;
      const Tensor a = random_8bit(a_type, a_shape, seed++);
      const Tensor b = random_8bit(b_type, b_shape, seed++);
      const std::int64_t rows = a_shape.size() == 1 ? 1 : a_shape[a_shape.size() - 2];
      const std::int64_t columns = b_shape.size() == 1 ? 1 : b_shape.back();
      const Node node = NodeBuilder("MatMulInteger").inputs(4).build();
      for (const CudaCheck& check : parameter_placements({2, 3})) {
        EXPECT_TRUE(cuda_matches_cpu(
            node, {a, b, random_8bit(a_type, {rows}, seed), random_8bit(b_type, {columns}, seed)}, check))
            << shape_string(a_shape) << " x " << shape_string(b_shape);
        EXPECT_TRUE(cuda_matches_cpu(
            node, {a, b, random_8bit(a_type, {}, seed), random_8bit(b_type, {}, seed)}, check))
            << shape_string(a_shape) << " x " << shape_string(b_shape);
      }
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("MatMulInteger").inputs(2).build(), {a, b}));
    }
  }
}

TEST(CudaQLinearMatMul, MatchesCpuWithPerRowAndPerColumnScales) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 100;
  for (DataType y_type : {kU8, kI8}) {
    for (bool per_index : {false, true}) {
      const Tensor a = random_8bit(kU8, {2, 69, 37}, seed++);
      const Tensor b = random_8bit(kI8, {37, 71}, seed++);
      const Shape rows = per_index ? Shape{69} : Shape{};
      const Shape columns = per_index ? Shape{71} : Shape{};
      const std::vector<Tensor> inputs = {a,
                                          random_scale(rows, seed),
                                          random_8bit(kU8, rows, seed + 1),
                                          b,
                                          random_scale(columns, seed + 2),
                                          random_8bit(kI8, columns, seed + 3),
                                          float_tensor({}, {0.03f}),
                                          random_8bit(y_type, {}, seed + 4)};
      for (const CudaCheck& check : parameter_placements({1, 2, 4, 5, 6, 7})) {
        EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("QLinearMatMul").inputs(8).build(), inputs, check))
            << data_type_name(y_type) << (per_index ? " per index" : "");
      }
    }
  }
}

struct ConvCase {
  Shape x;
  Shape w;
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  std::vector<std::int64_t> pads;
  std::int64_t group = 1;
};

const ConvCase kConvCases[] = {
    {{1, 3, 13, 11}, {5, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {{2, 4, 17, 9}, {6, 2, 3, 2}, {2, 2}, {1, 1}, {1, 0, 2, 1}, 2},  // stride 2, asymmetric pads, groups
    {{1, 5, 9, 19}, {7, 5, 3, 3}, {1, 2}, {2, 2}, {2, 2, 2, 2}},     // dilation
    {{3, 8, 5, 5}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 8},   // depthwise
    {{2, 70, 9, 9}, {66, 70, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},   // pointwise, several row tiles
    {{2, 3, 23}, {4, 3, 5}, {2}, {1}, {2, 1}},                       // 1-D
};

NodeBuilder conv_node(const std::string& op, int inputs, const ConvCase& c) {
  NodeBuilder node(op);
  node.inputs(inputs).attr("strides", c.strides).attr("dilations", c.dilations).attr("pads", c.pads);
  return node.attr("group", c.group);
}

TEST(CudaConvInteger, MatchesCpuWithGroupsStridesDilationsAndPadding) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 200;
  for (const ConvCase& c : kConvCases) {
    for (DataType x_type : {kU8, kI8}) {
      const Tensor x = random_8bit(x_type, c.x, seed++);
      const Tensor w = random_8bit(kI8, c.w, seed++);
      for (const CudaCheck& check : parameter_placements({2, 3})) {
        EXPECT_TRUE(cuda_matches_cpu(conv_node("ConvInteger", 4, c).build(),
                                     {x, w, random_8bit(x_type, {}, seed), random_8bit(kI8, {c.w[0]}, seed)},
                                     check))
            << shape_string(c.x) << " * " << shape_string(c.w);
      }
      EXPECT_TRUE(cuda_matches_cpu(conv_node("ConvInteger", 2, c).build(), {x, w}));
    }
  }
}

TEST(CudaQLinearConv, MatchesCpuWithPerChannelScalesAndBias) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 300;
  for (const ConvCase& c : kConvCases) {
    for (DataType y_type : {kU8, kI8}) {
      const Tensor x = random_8bit(kU8, c.x, seed++);
      const Tensor w = random_8bit(kI8, c.w, seed++);
      const Shape channels{c.w[0]};
      const std::vector<Tensor> inputs = {x,
                                          float_tensor({}, {0.02f}),
                                          random_8bit(kU8, {}, seed),
                                          w,
                                          random_scale(channels, seed + 1),
                                          random_8bit(kI8, channels, seed + 2),
                                          float_tensor({}, {0.05f}),
                                          random_8bit(y_type, {}, seed + 3),
                                          random_tensor(DataType::kInt32, channels, seed + 4, -3000, 3000)};
      for (const CudaCheck& check : parameter_placements({1, 2, 4, 5, 6, 7, 8})) {
        EXPECT_TRUE(cuda_matches_cpu(conv_node("QLinearConv", 9, c).build(), inputs, check))
            << shape_string(c.x) << " * " << shape_string(c.w) << " -> " << data_type_name(y_type);
      }
      const std::vector<Tensor> without_bias(inputs.begin(), inputs.end() - 1);
      EXPECT_TRUE(cuda_matches_cpu(conv_node("QLinearConv", 8, c).build(), without_bias));
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
