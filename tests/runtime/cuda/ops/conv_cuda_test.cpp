// Conv, fovea.FusedConv and ConvTranspose on cuDNN (and 1x1 convolutions on cuBLASLt) against the CPU
// reference, in float32 and float16.
#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

using Ints = std::vector<std::int64_t>;
constexpr DataType kF32 = DataType::kFloat32;

TEST(CudaConv, Conv2dGeometries) {
  FOVEA_REQUIRE_GPU();
  struct Case {
    Shape x, w;
    NodeBuilder node;
  };
  const Case cases[] = {
      {{1, 3, 17, 13}, {8, 3, 3, 3}, NodeBuilder("Conv").inputs(3).attr("pads", Ints{1, 1, 1, 1})},
      {{4, 6, 15, 11},
       {4, 6, 3, 3},
       NodeBuilder("Conv").inputs(3).attr("strides", Ints{2, 2}).attr("pads", Ints{1, 1, 1, 1})},
      {{2, 8, 13, 9},
       {8, 2, 3, 3},
       NodeBuilder("Conv").inputs(3).attr("group", 4).attr("dilations", Ints{2, 1})},
      {{2, 6, 9, 9},
       {6, 1, 3, 3},
       NodeBuilder("Conv").inputs(3).attr("group", 6).attr("pads", Ints{1, 1, 1, 1})},
      {{3, 16, 7, 5}, {5, 16, 1, 1}, NodeBuilder("Conv").inputs(3)},
      // Asymmetric: SAME_UPPER with an even kernel, and explicit unequal pads.
      {{2, 3, 10, 7}, {4, 3, 4, 2}, NodeBuilder("Conv").inputs(3).attr("auto_pad", "SAME_UPPER")},
      {{1, 4, 9, 8}, {3, 4, 3, 3}, NodeBuilder("Conv").inputs(3).attr("pads", Ints{0, 1, 2, 0})},
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(kF32, c.x, seed++);
    const Tensor w = random_tensor(kF32, c.w, seed++);
    const Tensor b = random_tensor(kF32, {c.w[0]}, seed++);
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(c.node.build(), {x, w, b}, accumulating(p))) << shape_string(c.x);
    }
  }
}

TEST(CudaConv, WithoutBias1dAnd3d) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Conv").inputs(2).attr("pads", Ints{2, 1}).build(),
                                 {random_tensor(kF32, {3, 5, 31}, 1), random_tensor(kF32, {7, 5, 4}, 2)},
                                 accumulating(p)));
    EXPECT_TRUE(cuda_matches_cpu(
        NodeBuilder("Conv").inputs(2).attr("strides", Ints{1, 2, 1}).build(),
        {random_tensor(kF32, {2, 3, 5, 9, 7}, 3), random_tensor(kF32, {4, 3, 3, 3, 3}, 4)}, accumulating(p)));
  }
}

NodeBuilder fused(const char* activation) {
  NodeBuilder node("FusedConv");
  node.domain("fovea").inputs(4).attr("activation", activation).attr("pads", Ints{1, 1, 1, 1});
  return node;
}

TEST(Cudafovea_FusedConv, ReluWithResidualRunsInCudnn) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(kF32, {2, 6, 11, 9}, 1);
  const Tensor w = random_tensor(kF32, {8, 6, 3, 3}, 2);
  const Tensor b = random_tensor(kF32, {8}, 3);
  const Tensor z = random_tensor(kF32, {2, 8, 11, 9}, 4);
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(fused("Relu").build(), {x, w, b, z}, accumulating(p)));
    // No bias (the fused call adds zeros) and no residual.
    EXPECT_TRUE(cuda_matches_cpu(fused("Relu").omit_input(2).omit_input(3).build(),
                                 {x, w, Tensor(), Tensor()}, accumulating(p)));
  }
}

TEST(Cudafovea_FusedConv, OtherActivationsRunInTheEpilogue) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(kF32, {3, 4, 7, 10}, 5);
  const Tensor w = random_tensor(kF32, {5, 4, 3, 3}, 6);
  const Tensor b = random_tensor(kF32, {5}, 7);
  const Tensor z = random_tensor(kF32, {3, 5, 7, 10}, 8);
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(fused("LeakyRelu").attr("activation_alpha", 0.2f).build(), {x, w, b, z},
                                 accumulating(p)));
    EXPECT_TRUE(
        cuda_matches_cpu(fused("Clip").attr("activation_min", -0.5f).attr("activation_max", 0.75f).build(),
                         {x, w, b, z}, accumulating(p)));
    EXPECT_TRUE(cuda_matches_cpu(fused("Sigmoid").build(), {x, w, b, z}, accumulating(p)));
    EXPECT_TRUE(
        cuda_matches_cpu(fused("HardSwish").omit_input(3).build(), {x, w, b, Tensor()}, accumulating(p)));
    EXPECT_TRUE(cuda_matches_cpu(fused("Silu").omit_input(3).build(), {x, w, b, Tensor()}, accumulating(p)));
    EXPECT_TRUE(cuda_matches_cpu(fused("").build(), {x, w, b, z}, accumulating(p)));
  }
}

// More output elements than the epilogue's grid has threads (132 * 32 blocks of 256), so every
// thread walks its bias channel along several strides; 13 channels divide no stride. NCHW and
// NHWC (the layout of float16 plans).
TEST(Cudafovea_FusedConv, EpilogueCoversOutputsLargerThanItsGrid) {
  FOVEA_REQUIRE_GPU();
  const Tensor w = random_tensor(kF32, {13, 4, 3, 3}, 9);
  const Tensor b = random_tensor(kF32, {13}, 10);
  EXPECT_TRUE(cuda_matches_cpu(
      fused("").build(),
      {random_tensor(kF32, {1, 4, 300, 301}, 11), w, b, random_tensor(kF32, {1, 13, 300, 301}, 12)},
      accumulating(Precision::kFloat32)));
  const Tensor w_nhwc = random_tensor(kF32, {13, 3, 3, 4}, 13);
  EXPECT_TRUE(cuda_matches_cpu(
      fused("LeakyRelu").attr("activation_alpha", 0.1f).attr("channels_last", 1).build(),
      {random_tensor(kF32, {1, 300, 301, 4}, 14), w_nhwc, b, random_tensor(kF32, {1, 300, 301, 13}, 15)},
      accumulating(Precision::kFloat16)));
}

// 1x1 convolutions in NHWC, which the search may run as cuBLASLt GEMMs (bias, residual and ReLU in
// cuBLASLt's epilogue; other activations in fovea's pass after it): stride 1, and stride 2 on the
// dense copy of the pixels it reads. Sizes where the product is the faster form on the H200.
TEST(Cudafovea_FusedConv, PointwiseInNhwcAsAProduct) {
  FOVEA_REQUIRE_GPU();
  const auto pointwise = [](const char* activation, std::int64_t stride) {
    NodeBuilder node("FusedConv");
    node.domain("fovea").inputs(4).attr("activation", activation).attr("channels_last", 1);
    node.attr("strides", Ints{stride, stride});
    return node;
  };
  const Tensor x = random_tensor(kF32, {4, 20, 24, 64}, 20);
  const Tensor w = random_tensor(kF32, {96, 1, 1, 64}, 21);
  const Tensor b = random_tensor(kF32, {96}, 22);
  const Tensor z = random_tensor(kF32, {4, 20, 24, 96}, 23);
  const Tensor z_strided = random_tensor(kF32, {4, 10, 12, 96}, 24);
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(pointwise("Relu", 1).build(), {x, w, b, z}, accumulating(p)));
    EXPECT_TRUE(
        cuda_matches_cpu(pointwise("", 1).omit_input(3).build(), {x, w, b, Tensor()}, accumulating(p)));
    EXPECT_TRUE(
        cuda_matches_cpu(pointwise("Relu", 1).omit_input(2).build(), {x, w, Tensor(), z}, accumulating(p)));
    EXPECT_TRUE(cuda_matches_cpu(pointwise("Silu", 1).build(), {x, w, b, z}, accumulating(p)));
    EXPECT_TRUE(cuda_matches_cpu(pointwise("Relu", 2).build(), {x, w, b, z_strided}, accumulating(p)));
  }
}

TEST(CudaConvTranspose, Geometries) {
  FOVEA_REQUIRE_GPU();
  struct Case {
    Shape x, w;
    NodeBuilder node;
  };
  const Case cases[] = {
      {{1, 4, 7, 5}, {4, 3, 3, 3}, NodeBuilder("ConvTranspose").inputs(3).attr("strides", Ints{2, 2})},
      {{2, 4, 6, 6},
       {4, 2, 4, 4},
       NodeBuilder("ConvTranspose").inputs(3).attr("strides", Ints{2, 2}).attr("pads", Ints{1, 1, 1, 1})},
      {{2, 6, 5, 7},
       {6, 2, 3, 3},
       NodeBuilder("ConvTranspose")
           .inputs(3)
           .attr("group", 3)
           .attr("strides", Ints{3, 2})
           .attr("output_padding", Ints{1, 1})},
      {{1, 3, 5, 4},
       {3, 2, 3, 3},
       NodeBuilder("ConvTranspose").inputs(3).attr("strides", Ints{2, 2}).attr("output_shape", Ints{12, 10})},
      {{2, 3, 9},
       {3, 4, 5},
       NodeBuilder("ConvTranspose").inputs(3).attr("pads", Ints{0, 2}).attr("dilations", Ints{2})},
  };
  std::uint32_t seed = 10;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(kF32, c.x, seed++);
    const Tensor w = random_tensor(kF32, c.w, seed++);
    const Tensor b = random_tensor(kF32, {c.w[1] * c.node.build().attr_int("group", 1).value()}, seed++);
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(c.node.build(), {x, w, b}, accumulating(p))) << shape_string(c.x);
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
