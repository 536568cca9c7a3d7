// fovea.Int8Conv's tensor-core kernels (runtime/cuda/int8_conv.h: wgmma on Hopper, mma.sync
// elsewhere; both run here on Hopper) against the CPU reference on random int8 inputs of odd sizes: pixel
// counts that end mid-tile, channel counts whose 64-byte reduction tiles straddle window taps (16, 48),
// output channels past one tile and not a multiple of 8, strides, pads, dilations, every output type and
// residual type. The int32 sums are exact and the epilogue rounds as the reference does, so int8 and float
// outputs must agree exactly wherever the activation is exact (none, Relu, LeakyRelu, Clip); Silu within
// float32's pointwise tolerance.
#include <cmath>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/cuda/int8_conv.h"

namespace fovea::runtime::testing {
namespace {

using Ints = std::vector<std::int64_t>;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kNone = DataType::kBool;  // no residual

struct Case {
  int batch, height, width, channels, out_channels, kernel, stride, pad, dilation;
  const char* activation;
  bool bias;
  DataType residual;  // kNone, or float32, float16 or int8 (read at a scale)
  DataType output;
};

constexpr Case kCases[] = {
    {2, 5, 7, 16, 8, 3, 1, 1, 1, "Relu", true, kNone, kI8},            // one partial tile each way
    {2, 13, 11, 48, 70, 3, 2, 1, 1, "Clip", true, kF16, kF16},         // taps straddle k-tiles; 70 channels
    {3, 9, 9, 64, 64, 1, 1, 0, 1, "Relu", true, kF16, kI8},            // ResNet's 1x1 with its residual
    {1, 15, 12, 256, 130, 1, 2, 0, 1, "LeakyRelu", true, kF32, kF32},  // strided 1x1, 2 channel tiles
    {2, 10, 9, 32, 66, 5, 1, 4, 2, "", false, kNone, kI8},             // dilated 5x5, no bias
    {2, 14, 14, 128, 256, 3, 1, 1, 1, "Relu", true, kNone, kI8},       // 18 k-tiles: the pipeline wraps
    {1, 7, 6, 16, 12, 3, 1, 1, 1, "Silu", true, kF16, kF16},           // an inexact activation
    {2, 17, 19, 96, 120, 3, 1, 1, 1, "Relu", true, kF16, kI8},         // 256 x 128 tiles, a half k-tile
    {1, 40, 33, 64, 40, 3, 1, 1, 1, "", true, kNone, kF32},            // six 256 x 64 tiles
    {3, 9, 9, 64, 256, 1, 1, 0, 1, "Relu", true, kI8, kI8},            // ResNet's expansion, int8 stream
    {1, 7, 5, 32, 22, 3, 1, 1, 1, "Relu", true, kI8, kF16},            // an int8 residual, partial vectors
};

int out_size(int in, const Case& c) {
  return (in + 2 * c.pad - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
}

Node node_of(const Case& c, bool int8_out) {
  NodeBuilder node("Int8Conv");
  node.domain("fovea")
      .inputs(8)
      .attr("strides", Ints{c.stride, c.stride})
      .attr("pads", Ints{c.pad, c.pad, c.pad, c.pad})
      .attr("dilations", Ints{c.dilation, c.dilation})
      .attr("activation", c.activation);
  if (std::string(c.activation) == "Clip") node.attr("activation_min", 0.0f).attr("activation_max", 6.0f);
  if (c.output == kF16) node.attr("to", 10);
  if (!c.bias) node.omit_input(4);
  if (c.residual == kNone) node.omit_input(5);
  if (!int8_out) node.omit_input(6);
  if (c.residual != kI8) node.omit_input(7);
  return node.build();
}

std::vector<Tensor> inputs_of(const Case& c, std::uint32_t seed) {
  const Shape y{c.batch, out_size(c.height, c), out_size(c.width, c), c.out_channels};
  // Scales that put the float results around +-10, where float16 outputs keep their low bits.
  const double w_scale = 2.0 / std::sqrt(double(c.kernel * c.kernel * c.channels)) / 127 / 127 / 0.02;
  Tensor residual = c.residual == kNone ? Tensor() : random_tensor(kF32, y, seed + 4, -4, 4);
  if (c.residual == kF16) residual = to_float16(residual);
  if (c.residual == kI8) residual = random_8bit(kI8, y, seed + 4);
  return {random_8bit(kI8, {c.batch, c.height, c.width, c.channels}, seed),
          Tensor::from_vector(kF32, {}, std::vector<float>{0.02f}),
          random_8bit(kI8, {c.out_channels, c.kernel, c.kernel, c.channels}, seed + 1),
          random_tensor(kF32, {c.out_channels}, seed + 2, w_scale / 2, w_scale * 2),
          c.bias ? random_tensor(kF32, {c.out_channels}, seed + 3, -3, 3) : Tensor(),
          residual,
          Tensor::from_vector(kF32, {}, std::vector<float>{0.08f}),
          Tensor::from_vector(kF32, {}, std::vector<float>{0.03f})};
}

// Runs the test with the wgmma kernel allowed or not, and allows it again after.
class Int8ConvKernels : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { runtime::cuda::allow_warpgroup_int8_conv(GetParam()); }
  void TearDown() override { runtime::cuda::allow_warpgroup_int8_conv(true); }
};

INSTANTIATE_TEST_SUITE_P(Cudafovea_Int8Conv, Int8ConvKernels, ::testing::Values(true, false),
                         [](const auto& p) { return p.param ? "Wgmma" : "MmaSync"; });

// A Hopper build (CMAKE_CUDA_ARCHITECTURES 90a) on a Hopper device takes the wgmma kernel; the
// other builds and devices the mma.sync one.
TEST(Cudafovea_Int8Conv, HopperTakesTheWarpgroupKernel) {
  FOVEA_REQUIRE_GPU();
  int device = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
#if defined(FOVEA_CUDA_SM90A)
  EXPECT_EQ(runtime::cuda::warpgroup_int8_conv_runs(), major == 9 && minor == 0);
#else
  EXPECT_FALSE(runtime::cuda::warpgroup_int8_conv_runs());
#endif
  runtime::cuda::allow_warpgroup_int8_conv(false);
  EXPECT_FALSE(runtime::cuda::warpgroup_int8_conv_runs());
  runtime::cuda::allow_warpgroup_int8_conv(true);
}

TEST_P(Int8ConvKernels, MatchesCpuOnEveryTileAndEpiloguePath) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const Case& c : kCases) {
    const std::vector<Tensor> in = inputs_of(c, seed);
    seed += 10;
    const bool exact = std::string(c.activation) != "Silu";
    const Node node = node_of(c, c.output == kI8);
    const std::vector<Tensor> cpu = run_node(node, in);
    const std::vector<Tensor> cuda = run_cuda_node(node, in);
    ASSERT_EQ(cuda.size(), 1u);
    const std::string what = std::to_string(c.channels) + "->" + std::to_string(c.out_channels) + " " +
                             std::to_string(c.kernel) + "x" + std::to_string(c.kernel);
    const Tolerance tolerance =
        exact ? Tolerance{} : cuda_tolerance(Precision::kFloat32, Accuracy::kPointwise);
    EXPECT_TRUE(outputs_within(cuda[0], cpu[0], tolerance)) << what;
  }
}

TEST(Cudafovea_Int8Conv, RefusesChannelCountsTheKernelCannotRead) {
  FOVEA_REQUIRE_GPU();
  const Case c{1, 6, 6, 24, 8, 3, 1, 1, 1, "", true, kNone, kI8};
  const Status status = run_cuda_node_status(node_of(c, true), inputs_of(c, 7));
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("24 input channels"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
