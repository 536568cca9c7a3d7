// fovea.Int8Conv's CPU reference against the chain it replaces in a quantized plan,
// DequantizeLinear -> FusedConv (channels_last) -> QuantizeLinear, which computes in float: the
// outputs agree within float rounding (the fused op sums exactly in int32), so an int8 output may
// differ by one step where the float chain's value lands next to a rounding tie. A small case is
// checked by hand, and the shape rules.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

using Ints = std::vector<std::int64_t>;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kF32 = DataType::kFloat32;

struct Case {
  int batch, height, width, channels, out_channels, kernel, stride, pad, dilation;
  const char* activation;
};

NodeBuilder conv_attributes(NodeBuilder node, const Case& c) {
  node.attr("strides", Ints{c.stride, c.stride})
      .attr("pads", Ints{c.pad, c.pad, c.pad, c.pad})
      .attr("dilations", Ints{c.dilation, c.dilation})
      .attr("activation", c.activation);
  return node;
}

struct Operands {
  Tensor x, x_scale, w, w_scale, b, z;
};

Operands operands_of(const Case& c, int out_h, int out_w, std::uint32_t seed) {
  return {random_8bit(kI8, {c.batch, c.height, c.width, c.channels}, seed),
          Tensor::from_vector(kF32, {}, std::vector<float>{0.03f}),
          random_8bit(kI8, {c.out_channels, c.kernel, c.kernel, c.channels}, seed + 1),
          random_tensor(kF32, {c.out_channels}, seed + 2, 0.001, 0.004),
          random_tensor(kF32, {c.out_channels}, seed + 3),
          random_tensor(kF32, {c.batch, out_h, out_w, c.out_channels}, seed + 4)};
}

Tensor dequantize(const Tensor& q, const Tensor& scale, int axis) {
  Tensor zero = Tensor::allocate(kI8, scale.shape());
  std::fill_n(zero.data<std::int8_t>(), zero.numel(), std::int8_t{0});
  return run_node(NodeBuilder("DequantizeLinear", 13).inputs(3).attr("axis", axis).build(),
                  {q, scale, zero})[0];
}

// The float chain of a quantized plan before fusion: float Y, and Y quantized at y_scale.
Tensor float_chain(const Case& c, const Operands& in) {
  const Node conv =
      conv_attributes(NodeBuilder("FusedConv"), c).domain("fovea").inputs(4).attr("channels_last", 1).build();
  return run_node(conv, {dequantize(in.x, in.x_scale, 1), dequantize(in.w, in.w_scale, 0), in.b, in.z})[0];
}

Tensor quantize(const Tensor& y, const Tensor& scale) {
  Tensor zero = Tensor::allocate(kI8, {});
  zero.data<std::int8_t>()[0] = 0;
  return run_node(NodeBuilder("QuantizeLinear", 13).inputs(3).build(), {y, scale, zero})[0];
}

Node int8_node(const Case& c, bool int8_out) {
  NodeBuilder node = conv_attributes(NodeBuilder("Int8Conv"), c).domain("fovea").inputs(7);
  if (!int8_out) node.omit_input(6);
  return node.build();
}

TEST(Opfovea_Int8Conv, MatchesTheFloatChainItReplaces) {
  const Case cases[] = {{2, 7, 9, 16, 6, 3, 1, 1, 1, "Relu"},
                        {1, 11, 8, 24, 5, 3, 2, 1, 1, ""},
                        {3, 5, 5, 8, 4, 1, 1, 0, 1, "LeakyRelu"},
                        {1, 9, 10, 4, 3, 3, 1, 2, 2, "Silu"}};
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    const int out_h = (c.height + 2 * c.pad - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
    const int out_w = (c.width + 2 * c.pad - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
    const Operands in = operands_of(c, out_h, out_w, seed);
    seed += 10;
    const Tensor expected = float_chain(c, in);
    const Tensor y =
        run_node(int8_node(c, false), {in.x, in.x_scale, in.w, in.w_scale, in.b, in.z, Tensor()})[0];
    EXPECT_TRUE(tensors_near(y, expected, 1e-5, 1e-5))
        << c.channels << " channels " << c.kernel << "x" << c.kernel;

    double amax = 0;
    for (std::int64_t i = 0; i < expected.numel(); ++i)
      amax = std::max(amax, std::fabs(double(expected.data<float>()[i])));
    const Tensor y_scale = Tensor::from_vector(kF32, {}, std::vector<float>{static_cast<float>(amax / 100)});
    const Tensor q =
        run_node(int8_node(c, true), {in.x, in.x_scale, in.w, in.w_scale, in.b, in.z, y_scale})[0];
    const Tensor q_expected = quantize(expected, y_scale);
    ASSERT_EQ(q.dtype(), kI8);
    ASSERT_EQ(q.shape(), q_expected.shape());
    int off_by_one = 0;
    for (std::int64_t i = 0; i < q.numel(); ++i) {
      const int d = std::abs(q.data<std::int8_t>()[i] - q_expected.data<std::int8_t>()[i]);
      ASSERT_LE(d, 1) << "element " << i;
      off_by_one += d;
    }
    EXPECT_LE(off_by_one, q.numel() / 100 + 1) << "more than 1% of the outputs off by one";
  }
}

TEST(Opfovea_Int8Conv, ComputesByHandAndSaturates) {
  // One pixel, a 1x1 convolution of 2 channels into 3: acc = x . w, exactly.
  Tensor x = Tensor::from_vector(kI8, {1, 1, 1, 2}, std::vector<std::int8_t>{100, -50});
  Tensor w = Tensor::from_vector(kI8, {3, 1, 1, 2}, std::vector<std::int8_t>{1, 1, 127, -127, -2, 0});
  const Tensor x_scale = Tensor::from_vector(kF32, {}, std::vector<float>{0.5f});
  const Tensor w_scale = Tensor::from_vector(kF32, {3}, std::vector<float>{1.0f, 0.25f, 2.0f});
  const Tensor b = Tensor::from_vector(kF32, {3}, std::vector<float>{1.0f, 0.0f, -0.5f});
  const Tensor y_scale = Tensor::from_vector(kF32, {}, std::vector<float>{2.0f});
  // acc = 50, 19050, -200 -> v = 50 * 0.5 + 1 = 26, 19050 * 0.125 = 2381.25, -200 * 1 - 0.5 = -200.5
  const Node node = NodeBuilder("Int8Conv").domain("fovea").inputs(7).omit_input(5).build();
  const Tensor y = run_node(node, {x, x_scale, w, w_scale, b, Tensor(), y_scale})[0];
  // 26 / 2 = 13; 2381.25 / 2 saturates at 127; -100.25 rounds to -100.
  EXPECT_TRUE(
      tensors_near(y, Tensor::from_vector(kI8, {1, 1, 1, 3}, std::vector<std::int8_t>{13, 127, -100})));
  const Node relu =
      NodeBuilder("Int8Conv").domain("fovea").inputs(7).omit_input(5).attr("activation", "Relu").build();
  const Tensor r = run_node(relu, {x, x_scale, w, w_scale, b, Tensor(), y_scale})[0];
  EXPECT_TRUE(tensors_near(r, Tensor::from_vector(kI8, {1, 1, 1, 3}, std::vector<std::int8_t>{13, 127, 0})));
}

// An int8 residual read at Z_scale is the float residual its DequantizeLinear gives, exactly.
TEST(Opfovea_Int8Conv, ReadsAnInt8ResidualAtItsScale) {
  const Case c{2, 6, 7, 16, 10, 3, 1, 1, 1, "Relu"};
  const Operands in = operands_of(c, 6, 7, 71);
  const Tensor z = random_8bit(kI8, {2, 6, 7, 10}, 77);
  const Tensor z_scale = Tensor::from_vector(kF32, {}, std::vector<float>{0.037f});
  const Tensor y_scale = Tensor::from_vector(kF32, {}, std::vector<float>{0.05f});
  for (bool int8_out : {false, true}) {
    NodeBuilder node = conv_attributes(NodeBuilder("Int8Conv"), c).domain("fovea").inputs(8);
    if (!int8_out) node.omit_input(6);
    const Tensor y_int8_residual =
        run_node(node.build(), {in.x, in.x_scale, in.w, in.w_scale, in.b, z, y_scale, z_scale})[0];
    const Tensor y_float_residual =
        run_node(int8_node(c, int8_out),
                 {in.x, in.x_scale, in.w, in.w_scale, in.b, dequantize(z, z_scale, 1), y_scale})[0];
    EXPECT_TRUE(tensors_near(y_int8_residual, y_float_residual, 0.0, 0.0))
        << (int8_out ? "int8" : "float") << " out";
  }
}

TEST(Opfovea_Int8Conv, InfersItsOutputTypeAndRefusesBadOperands) {
  const ValueType x{kI8, dims_of({2, 8, 8, 16})};
  const ValueType w{kI8, dims_of({32, 3, 3, 16})};
  const ValueType scalar{kF32, dims_of({})};
  const ValueType channels{kF32, dims_of({32})};
  const Node float16_out =
      NodeBuilder("Int8Conv").domain("fovea").inputs(4).attr("pads", Ints{1, 1, 1, 1}).attr("to", 10).build();
  const auto types = infer_types(float16_out, {x, scalar, w, channels});
  ASSERT_TRUE(types.is_ok()) << types.status().message();
  EXPECT_EQ((*types)[0].dtype, DataType::kFloat16);
  EXPECT_EQ(*(*types)[0].dims, dims_of({2, 8, 8, 32}));
  const Node int8_out = NodeBuilder("Int8Conv")
                            .domain("fovea")
                            .inputs(7)
                            .omit_input(4)
                            .omit_input(5)
                            .attr("strides", Ints{2, 2})
                            .build();
  const auto q = infer_types(int8_out, {x, scalar, w, channels, {}, {}, scalar});
  ASSERT_TRUE(q.is_ok()) << q.status().message();
  EXPECT_EQ((*q)[0].dtype, kI8);
  EXPECT_EQ(*(*q)[0].dims, dims_of({2, 3, 3, 32}));

  const auto refused = [&](const Node& node, std::vector<ValueType> inputs, const char* why) {
    const auto result = infer_types(node, inputs);
    ASSERT_FALSE(result.is_ok()) << why;
    EXPECT_NE(result.status().message().find(why), std::string::npos) << result.status().message();
  };
  const Node plain = NodeBuilder("Int8Conv").domain("fovea").inputs(4).build();
  refused(NodeBuilder("Int8Conv").domain("fovea").inputs(4).attr("group", 2).build(),
          {x, scalar, w, channels}, "group=2");
  refused(plain, {x, scalar, {kI8, dims_of({32, 3, 3, 8})}, channels}, "X has 16 channels where W takes 8");
  refused(plain, {x, scalar, w, {kF32, dims_of({31})}}, "31 channels where W has 32");
  refused(NodeBuilder("Int8Conv").domain("fovea").inputs(4).attr("to", 7).build(), {x, scalar, w, channels},
          "to=7");
  refused(plain, {{kF32, dims_of({2, 8, 8, 16})}, scalar, w, channels}, "float32");
  const ValueType out{kI8, dims_of({2, 8, 8, 32})};
  const ValueType float_out{kF32, dims_of({2, 8, 8, 32})};
  const Node with_z =
      NodeBuilder("Int8Conv").domain("fovea").inputs(8).attr("pads", Ints{1, 1, 1, 1}).build();
  const auto int8_z = infer_types(with_z, {x, scalar, w, channels, channels, out, scalar, scalar});
  EXPECT_TRUE(int8_z.is_ok()) << int8_z.status().message();
  const Node no_z_scale =
      NodeBuilder("Int8Conv").domain("fovea").inputs(8).attr("pads", Ints{1, 1, 1, 1}).omit_input(7).build();
  refused(no_z_scale, {x, scalar, w, channels, channels, out, scalar, {}}, "an int8 Z needs Z_scale");
  refused(with_z, {x, scalar, w, channels, channels, float_out, scalar, scalar}, "Z_scale with a float Z");
}

}  // namespace
}  // namespace fovea::runtime::testing
