// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on the CPU reference: hand-checked cases
// (ONNX's examples among them), odd sizes against plain int64 loops written here, per-row, per-column
// and per-channel parameters, int8/uint8 mixes, rounding ties and saturation, and refused input.
// Integer outputs are compared exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kU8 = DataType::kUInt8;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kI32 = DataType::kInt32;

Tensor u8(Shape shape, std::vector<std::uint8_t> values) {
  return Tensor::from_vector(kU8, std::move(shape), values);
}
Tensor i8(Shape shape, std::vector<std::int8_t> values) {
  return Tensor::from_vector(kI8, std::move(shape), values);
}
Tensor i32(Shape shape, std::vector<std::int32_t> values) {
  return Tensor::from_vector(kI32, std::move(shape), values);
}
Tensor scalar(float value) {
  return float_tensor({}, {value});
}
// Zero point or scale `index` of a parameter that holds one value or one per index.
std::int64_t zero_at(const Tensor& zp, std::int64_t index) {
  return integer_at(zp, zp.numel() == 1 ? 0 : index);
}
float scale_at(const Tensor& scale, std::int64_t index) {
  return scale.data<float>()[scale.numel() == 1 ? 0 : index];
}

// ONNX's reference: the multiplier in float32, then acc * multiplier + zero point in float64,
// rounded half to even and saturated.
std::int64_t requantized(std::int64_t acc, float in_scale, float w_scale, float y_scale, std::int64_t zero,
                         DataType dtype) {
  const float multiplier = in_scale * w_scale / y_scale;
  const double value =
      std::nearbyint(static_cast<double>(acc) * static_cast<double>(multiplier) + static_cast<double>(zero));
  return static_cast<std::int64_t>(
      std::clamp(value, dtype == kI8 ? -128.0 : 0.0, dtype == kI8 ? 127.0 : 255.0));
}

Tensor to_dtype(DataType dtype, const Shape& shape, const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::allocate(dtype, shape);
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case kI32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]); break;
      case kI8: t.data<std::int8_t>()[i] = static_cast<std::int8_t>(values[i]); break;
      default: t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(values[i]); break;
    }
  }
  return t;
}

// (a - a_zp) (b - b_zp) for 2-D a [M, K] and b [K, N], in int64.
std::vector<std::int64_t> reference_matmul(const Tensor& a, const Tensor& a_zp, const Tensor& b,
                                           const Tensor& b_zp) {
  const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  std::vector<std::int64_t> acc(static_cast<std::size_t>(m * n), 0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t p = 0; p < k; ++p) {
        acc[static_cast<std::size_t>(i * n + j)] +=
            (integer_at(a, i * k + p) - zero_at(a_zp, i)) * (integer_at(b, p * n + j) - zero_at(b_zp, j));
      }
    }
  }
  return acc;
}

struct Conv2d {
  std::vector<std::int64_t> strides{1, 1};
  std::vector<std::int64_t> dilations{1, 1};
  std::vector<std::int64_t> pads{0, 0, 0, 0};  // begins, then ends
  std::int64_t group = 1;
};

NodeBuilder conv_node(const std::string& op, int inputs, const Conv2d& c) {
  NodeBuilder node(op);
  node.inputs(inputs).attr("strides", c.strides).attr("dilations", c.dilations).attr("pads", c.pads);
  return node.attr("group", c.group);
}

// Direct 2-D convolution of (x - x_zp) and (w - w_zp[channel]) in int64; padding reads as zero after
// the subtraction. Returns the output shape in `shape`.
std::vector<std::int64_t> reference_conv(const Tensor& x, const Tensor& x_zp, const Tensor& w,
                                         const Tensor& w_zp, const Conv2d& c, Shape* shape) {
  const std::int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const std::int64_t out_channels = w.dim(0), group_in = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const std::int64_t out_h =
      (height + c.pads[0] + c.pads[2] - ((kh - 1) * c.dilations[0] + 1)) / c.strides[0] + 1;
  const std::int64_t out_w =
      (width + c.pads[1] + c.pads[3] - ((kw - 1) * c.dilations[1] + 1)) / c.strides[1] + 1;
  *shape = {batch, out_channels, out_h, out_w};
  const std::int64_t group_out = out_channels / c.group;
  std::vector<std::int64_t> y;
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t m = 0; m < out_channels; ++m) {
      for (std::int64_t oy = 0; oy < out_h; ++oy) {
        for (std::int64_t ox = 0; ox < out_w; ++ox) {
          std::int64_t sum = 0;
          for (std::int64_t ci = 0; ci < group_in; ++ci) {
            const std::int64_t channel = (m / group_out) * group_in + ci;
            for (std::int64_t ty = 0; ty < kh; ++ty) {
              for (std::int64_t tx = 0; tx < kw; ++tx) {
                const std::int64_t iy = oy * c.strides[0] - c.pads[0] + ty * c.dilations[0];
                const std::int64_t ix = ox * c.strides[1] - c.pads[1] + tx * c.dilations[1];
                if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
                const std::int64_t xv = integer_at(x, ((n * channels + channel) * height + iy) * width + ix);
                const std::int64_t wv = integer_at(w, ((m * group_in + ci) * kh + ty) * kw + tx);
                sum += (xv - zero_at(x_zp, 0)) * (wv - zero_at(w_zp, m));
              }
            }
          }
          y.push_back(sum);
        }
      }
    }
  }
  return y;
}

void expect_refused(const Status& status, StatusCode code, const std::string& node, const std::string& what) {
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_NE(status.message().find(node), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(what), std::string::npos) << status.message();
}

// ---- MatMulInteger -----------------------------------------------------------------------------

TEST(OpMatMulInteger, OnnxExample) {
  const Tensor a = u8({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  const Tensor b = u8({3, 2}, {1, 4, 2, 5, 3, 6});
  const auto y = run_node(NodeBuilder("MatMulInteger").inputs(4).build(), {a, b, u8({}, {12}), u8({}, {0})});
  EXPECT_TRUE(tensors_near(y[0], i32({4, 2}, {-38, -83, -44, -98, -50, -113, -56, -128})));
  // Without zero points: plain products.
  const auto plain = run_node(NodeBuilder("MatMulInteger").inputs(2).build(), {a, b});
  EXPECT_TRUE(tensors_near(plain[0], i32({4, 2}, {34, 97, 28, 82, 22, 67, 16, 52})));
}

TEST(OpMatMulInteger, OddSizesWithPerRowAndPerColumnZeroPoints) {
  std::uint32_t seed = 1;
  for (DataType a_type : {kU8, kI8}) {
    for (DataType b_type : {kU8, kI8}) {
      const Tensor a = random_8bit(a_type, {7, 13}, seed++);
      const Tensor b = random_8bit(b_type, {13, 5}, seed++);
      for (bool per_index : {false, true}) {
        const Tensor a_zp = random_8bit(a_type, per_index ? Shape{7} : Shape{}, seed++);
        const Tensor b_zp = random_8bit(b_type, per_index ? Shape{5} : Shape{1}, seed++);
        const auto y = run_node(NodeBuilder("MatMulInteger").inputs(4).build(), {a, b, a_zp, b_zp});
        EXPECT_TRUE(tensors_near(y[0], to_dtype(kI32, {7, 5}, reference_matmul(a, a_zp, b, b_zp))))
            << data_type_name(a_type) << " x " << data_type_name(b_type) << (per_index ? " per index" : "");
      }
    }
  }
}

TEST(OpMatMulInteger, BroadcastsBatchDimsAndPromotesVectors) {
  const Tensor a = random_8bit(kU8, {2, 1, 3, 4}, 11);
  const Tensor b = random_8bit(kI8, {3, 4, 5}, 12);
  const Tensor a_zp = u8({}, {100});
  const Tensor b_zp = i8({}, {-3});
  const auto y = run_node(NodeBuilder("MatMulInteger").inputs(4).build(), {a, b, a_zp, b_zp});
  std::vector<std::int64_t> expected;
  for (std::int64_t p = 0; p < 2; ++p) {
    for (std::int64_t q = 0; q < 3; ++q) {
      for (std::int64_t i = 0; i < 3; ++i) {
        for (std::int64_t j = 0; j < 5; ++j) {
          std::int64_t sum = 0;
          for (std::int64_t k = 0; k < 4; ++k) {
            sum += (integer_at(a, (p * 3 + i) * 4 + k) - 100) * (integer_at(b, (q * 4 + k) * 5 + j) + 3);
          }
          expected.push_back(sum);
        }
      }
    }
  }
  EXPECT_TRUE(tensors_near(y[0], to_dtype(kI32, {2, 3, 3, 5}, expected)));

  // [K] x [K, N] is [N]: a row vector.
  const Tensor v = u8({3}, {1, 2, 3});
  const auto row =
      run_node(NodeBuilder("MatMulInteger").inputs(2).build(), {v, u8({3, 2}, {1, 0, 0, 1, 1, 1})});
  EXPECT_TRUE(tensors_near(row[0], i32({2}, {4, 5})));
}

TEST(OpMatMulInteger, RefusesBadInput) {
  const Node node = NodeBuilder("MatMulInteger").inputs(4).build();
  const Tensor a = random_8bit(kU8, {3, 4}, 1);
  const Tensor b = random_8bit(kI8, {4, 2}, 2);
  expect_refused(run_node_status(node, {a, b, i8({}, {1}), i8({}, {0})}), StatusCode::kInvalidArgument,
                 "MatMulInteger_under_test", "a_zero_point");
  expect_refused(run_node_status(node, {a, b, u8({2}, {1, 2}), i8({}, {0})}), StatusCode::kInvalidArgument,
                 "MatMulInteger_under_test", "row of a");
  expect_refused(run_node_status(node, {a, b, u8({}, {1}), i8({3}, {0, 1, 2})}), StatusCode::kInvalidArgument,
                 "MatMulInteger_under_test", "b_zero_point");
  expect_refused(run_node_status(NodeBuilder("MatMulInteger").inputs(2).build(),
                                 {random_tensor(DataType::kFloat32, {3, 4}, 3), b}),
                 StatusCode::kInvalidArgument, "MatMulInteger_under_test", "int8 or uint8");
  expect_refused(
      run_node_status(NodeBuilder("MatMulInteger").inputs(2).build(), {a, random_8bit(kU8, {5, 2}, 4)}),
      StatusCode::kInvalidArgument, "MatMulInteger_under_test", "inner dims");
  // Past 33025 terms an int32 sum may overflow: refused at shape inference.
  const auto deep = infer_types(NodeBuilder("MatMulInteger").inputs(2).build(),
                                {ValueType{kU8, dims_of({2, 40000})}, ValueType{kU8, dims_of({40000, 3})}});
  ASSERT_FALSE(deep.is_ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(deep.status().message().find("33025"), std::string::npos) << deep.status().message();
}

// ---- QLinearMatMul -----------------------------------------------------------------------------

Node qlinear_matmul() {
  return NodeBuilder("QLinearMatMul").inputs(8).build();
}

TEST(OpQLinearMatMul, TiesRoundToEvenAfterTheZeroPoint) {
  // a [1, 1] = 1 times b [1, 5]: acc = b, multiplier 0.5 exactly.
  const Tensor a = u8({1, 1}, {1});
  const Tensor b = i8({1, 5}, {1, 3, 5, -1, -3});
  const auto zero = run_node(qlinear_matmul(), {a, scalar(0.5f), u8({}, {0}), b, scalar(1.0f), i8({}, {0}),
                                                scalar(1.0f), i8({}, {0})});
  // 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2.
  EXPECT_TRUE(tensors_near(zero[0], i8({1, 5}, {0, 2, 2, 0, -2})));
  // The zero point is added before rounding, as ONNX's reference does: 0.5 + 1 = 1.5 -> 2.
  const auto shifted = run_node(qlinear_matmul(), {a, scalar(0.5f), u8({}, {0}), b, scalar(1.0f), i8({}, {0}),
                                                   scalar(1.0f), i8({}, {1})});
  EXPECT_TRUE(tensors_near(shifted[0], i8({1, 5}, {2, 2, 4, 0, 0})));
}

TEST(OpQLinearMatMul, SaturatesAtBothEnds) {
  const Tensor a = u8({1, 2}, {255, 255});
  const Tensor b = i8({2, 3}, {127, -128, 1, 127, -128, 0});
  const std::vector<Tensor> common = {a,           scalar(1.0f), u8({}, {0}), b, scalar(1.0f),
                                      i8({}, {0}), scalar(2.0f)};
  auto inputs = common;
  inputs.push_back(u8({}, {128}));
  // acc = 64770, -65280, 255: halved and shifted by 128 -> 255 (saturated), 0 (saturated), 255.5 -> 255.
  EXPECT_TRUE(tensors_near(run_node(qlinear_matmul(), inputs)[0], u8({1, 3}, {255, 0, 255})));
  inputs.back() = i8({}, {-100});
  // -> 127 (saturated), -128 (saturated), 127.5 - 100 = 27.5 -> 28.
  EXPECT_TRUE(tensors_near(run_node(qlinear_matmul(), inputs)[0], i8({1, 3}, {127, -128, 28})));
}

TEST(OpQLinearMatMul, OddSizesWithPerRowAndPerColumnScales) {
  std::uint32_t seed = 20;
  for (DataType a_type : {kU8, kI8}) {
    for (DataType y_type : {kU8, kI8}) {
      const Tensor a = random_8bit(a_type, {7, 13}, seed++);
      const Tensor b = random_8bit(kI8, {13, 5}, seed++);
      const Tensor a_zp = random_8bit(a_type, {7}, seed++);
      const Tensor b_zp = random_8bit(kI8, {5}, seed++);
      const Tensor a_scale = random_tensor(DataType::kFloat32, {7}, seed++, 0.01, 0.05);
      const Tensor b_scale = random_tensor(DataType::kFloat32, {5}, seed++, 0.01, 0.05);
      const float y_scale = 0.37f;
      const Tensor y_zp = y_type == kU8 ? u8({}, {131}) : i8({}, {-7});
      const auto y = run_node(qlinear_matmul(), {a, a_scale, a_zp, b, b_scale, b_zp, scalar(y_scale), y_zp});
      const std::vector<std::int64_t> acc = reference_matmul(a, a_zp, b, b_zp);
      std::vector<std::int64_t> expected;
      for (std::int64_t i = 0; i < 7; ++i) {
        for (std::int64_t j = 0; j < 5; ++j) {
          expected.push_back(requantized(acc[static_cast<std::size_t>(i * 5 + j)], scale_at(a_scale, i),
                                         scale_at(b_scale, j), y_scale, zero_at(y_zp, 0), y_type));
        }
      }
      EXPECT_TRUE(tensors_near(y[0], to_dtype(y_type, {7, 5}, expected)))
          << data_type_name(a_type) << " -> " << data_type_name(y_type);
    }
  }
}

TEST(OpQLinearMatMul, RefusesBadScalesAndZeroPoints) {
  const Tensor a = random_8bit(kU8, {3, 4}, 1);
  const Tensor b = random_8bit(kU8, {4, 2}, 2);
  const std::vector<Tensor> good = {a,           scalar(0.1f), u8({}, {1}), b, scalar(0.2f),
                                    u8({}, {2}), scalar(0.3f), u8({}, {3})};
  ASSERT_TRUE(run_node_status(qlinear_matmul(), good).is_ok());
  const std::string node = "QLinearMatMul_under_test";
  for (float bad : {0.0f, -1.0f, NAN, INFINITY}) {
    auto inputs = good;
    inputs[1] = scalar(bad);
    expect_refused(run_node_status(qlinear_matmul(), inputs), StatusCode::kInvalidArgument, node, "a_scale");
    inputs = good;
    inputs[6] = scalar(bad);
    expect_refused(run_node_status(qlinear_matmul(), inputs), StatusCode::kInvalidArgument, node, "y_scale");
  }
  auto inputs = good;
  inputs[4] = float_tensor({3}, {0.1f, 0.2f, 0.3f});  // b has 2 columns
  expect_refused(run_node_status(qlinear_matmul(), inputs), StatusCode::kInvalidArgument, node,
                 "column of b");
  inputs = good;
  inputs[6] = float_tensor({2}, {0.1f, 0.2f});  // y_scale is one value
  expect_refused(run_node_status(qlinear_matmul(), inputs), StatusCode::kInvalidArgument, node, "y_scale");
  inputs = good;
  inputs[5] = i8({}, {2});
  expect_refused(run_node_status(qlinear_matmul(), inputs), StatusCode::kInvalidArgument, node,
                 "b_zero_point");
  inputs = good;
  inputs[1] = Tensor::from_vector(DataType::kFloat64, {}, std::vector<double>{0.1});
  expect_refused(run_node_status(qlinear_matmul(), inputs), StatusCode::kInvalidArgument, node, "float32");
}

// ---- ConvInteger -------------------------------------------------------------------------------

TEST(OpConvInteger, OnnxExamplesWithAndWithoutPadding) {
  const Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  const auto y = run_node(NodeBuilder("ConvInteger").inputs(3).build(), {x, w, u8({}, {1})});
  EXPECT_TRUE(tensors_near(y[0], i32({1, 1, 2, 2}, {12, 16, 24, 28})));
  // The padding is zero after the zero point's subtraction, not before.
  const auto padded = run_node(
      NodeBuilder("ConvInteger").inputs(3).attr("pads", std::vector<std::int64_t>{1, 1, 1, 1}).build(),
      {x, w, u8({}, {1})});
  EXPECT_TRUE(
      tensors_near(padded[0], i32({1, 1, 4, 4}, {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9})));
}

TEST(OpConvInteger, OddSizesStridesDilationsGroupsAndPerChannelZeroPoints) {
  const Conv2d cases[] = {
      {},                                                     // plain
      {.strides = {2, 2}, .pads = {1, 0, 2, 1}},              // stride 2, asymmetric pads
      {.dilations = {2, 1}, .pads = {2, 1, 2, 1}},            // dilation
      {.strides = {2, 1}, .pads = {1, 1, 1, 1}, .group = 2},  // groups
  };
  std::uint32_t seed = 40;
  for (const Conv2d& c : cases) {
    for (DataType x_type : {kU8, kI8}) {
      const Tensor x = random_8bit(x_type, {2, 4, 7, 9}, seed++);
      const Tensor w = random_8bit(kI8, {6, 4 / c.group, 3, 2}, seed++);
      const Tensor x_zp = random_8bit(x_type, {}, seed++);
      const Tensor w_zp = random_8bit(kI8, {6}, seed++);
      const auto y = run_node(conv_node("ConvInteger", 4, c).build(), {x, w, x_zp, w_zp});
      Shape shape;
      const auto expected = reference_conv(x, x_zp, w, w_zp, c, &shape);
      EXPECT_TRUE(tensors_near(y[0], to_dtype(kI32, shape, expected)))
          << "group " << c.group << ", " << data_type_name(x_type);
    }
  }
}

TEST(OpConvInteger, OneDimensionalWithAutoPad) {
  const Tensor x = u8({1, 1, 5}, {1, 2, 3, 4, 5});
  const Tensor w = i8({1, 1, 3}, {1, 0, -1});
  const auto y =
      run_node(NodeBuilder("ConvInteger").inputs(2).attr("auto_pad", "SAME_UPPER").build(), {x, w});
  // Zero beyond both ends: x[i-1] - x[i+1].
  EXPECT_TRUE(tensors_near(y[0], i32({1, 1, 5}, {-2, -2, -2, -2, 4})));
}

TEST(OpConvInteger, RefusesBadInput) {
  const std::string node = "ConvInteger_under_test";
  const Tensor x = random_8bit(kU8, {1, 2, 5, 5}, 1);
  const Tensor w = random_8bit(kU8, {3, 2, 3, 3}, 2);
  expect_refused(
      run_node_status(NodeBuilder("ConvInteger").inputs(4).build(), {x, w, u8({}, {1}), u8({2}, {1, 2})}),
      StatusCode::kInvalidArgument, node, "w_zero_point");
  expect_refused(run_node_status(NodeBuilder("ConvInteger").inputs(3).build(), {x, w, u8({2}, {1, 2})}),
                 StatusCode::kInvalidArgument, node, "x_zero_point");
  expect_refused(run_node_status(NodeBuilder("ConvInteger").inputs(3).build(), {x, w, i8({}, {1})}),
                 StatusCode::kInvalidArgument, node, "x_zero_point");
  expect_refused(
      run_node_status(NodeBuilder("ConvInteger").inputs(2).build(), {x, random_8bit(kU8, {3, 3, 3, 3}, 3)}),
      StatusCode::kInvalidArgument, node, "channels");
  expect_refused(
      run_node_status(NodeBuilder("ConvInteger").inputs(2).build(),
                      {random_8bit(kU8, {1, 1, 2, 2, 2, 2}, 4), random_8bit(kU8, {1, 1, 1, 1, 1, 1}, 5)}),
      StatusCode::kUnsupported, node, "spatial dims");
}

// ---- QLinearConv -------------------------------------------------------------------------------

TEST(OpQLinearConv, PerChannelScalesAndBiasHandChecked) {
  const Tensor x = u8({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = i8({2, 1, 1, 1}, {1, 2});
  const auto y = run_node(NodeBuilder("QLinearConv").inputs(9).build(),
                          {x, scalar(1.0f), u8({}, {0}), w, float_tensor({2}, {0.5f, 0.25f}), i8({2}, {0, 0}),
                           scalar(1.0f), u8({}, {10}), i32({2}, {1, -3})});
  // Channel 0: (x + 1) * 0.5 + 10 = 11, 11.5, 12, 12.5 -> 11, 12, 12, 12 (ties to even).
  // Channel 1: (2x - 3) * 0.25 + 10 = 9.75, 10.25, 10.75, 11.25 -> 10, 10, 11, 11.
  EXPECT_TRUE(tensors_near(y[0], u8({1, 2, 2, 2}, {11, 12, 12, 12, 10, 10, 11, 11})));
}

TEST(OpQLinearConv, OddSizesAgainstPlainLoops) {
  const Conv2d cases[] = {
      {.strides = {2, 2}, .pads = {1, 2, 1, 0}},
      {.strides = {1, 2}, .dilations = {2, 2}, .pads = {2, 2, 2, 2}, .group = 2},
  };
  std::uint32_t seed = 60;
  for (const Conv2d& c : cases) {
    for (DataType y_type : {kU8, kI8}) {
      const Tensor x = random_8bit(kU8, {2, 4, 9, 7}, seed++);
      const Tensor w = random_8bit(kI8, {6, 4 / c.group, 3, 3}, seed++);
      const Tensor x_zp = u8({}, {128});
      const Tensor w_zp = random_8bit(kI8, {6}, seed++);
      const Tensor w_scale = random_tensor(DataType::kFloat32, {6}, seed++, 0.001, 0.01);
      const Tensor bias = random_tensor(kI32, {6}, seed++, -5000, 5000);
      const float x_scale = 0.02f;
      const float y_scale = 0.05f;
      const Tensor y_zp = y_type == kU8 ? u8({}, {120}) : i8({}, {3});
      const auto y = run_node(conv_node("QLinearConv", 9, c).build(),
                              {x, scalar(x_scale), x_zp, w, w_scale, w_zp, scalar(y_scale), y_zp, bias});
      Shape shape;
      const auto acc = reference_conv(x, x_zp, w, w_zp, c, &shape);
      const std::int64_t plane = shape[2] * shape[3];
      std::vector<std::int64_t> expected;
      for (std::size_t i = 0; i < acc.size(); ++i) {
        const std::int64_t channel = static_cast<std::int64_t>(i) / plane % 6;
        expected.push_back(requantized(acc[i] + bias.data<std::int32_t>()[channel], x_scale,
                                       scale_at(w_scale, channel), y_scale, zero_at(y_zp, 0), y_type));
      }
      EXPECT_TRUE(tensors_near(y[0], to_dtype(y_type, shape, expected)))
          << "group " << c.group << ", " << data_type_name(y_type);
    }
  }
}

TEST(OpQLinearConv, RefusesBadInput) {
  const std::string node = "QLinearConv_under_test";
  const Node with_bias = NodeBuilder("QLinearConv").inputs(9).build();
  const Tensor x = random_8bit(kU8, {1, 2, 5, 5}, 1);
  const Tensor w = random_8bit(kI8, {3, 2, 3, 3}, 2);
  const std::vector<Tensor> good = {x,
                                    scalar(0.1f),
                                    u8({}, {1}),
                                    w,
                                    float_tensor({3}, {0.1f, 0.2f, 0.3f}),
                                    i8({}, {0}),
                                    scalar(0.5f),
                                    u8({}, {3}),
                                    i32({3}, {1, 2, 3})};
  ASSERT_TRUE(run_node_status(with_bias, good).is_ok());
  auto inputs = good;
  inputs[8] = float_tensor({3}, {1, 2, 3});
  expect_refused(run_node_status(with_bias, inputs), StatusCode::kInvalidArgument, node, "int32");
  inputs = good;
  inputs[8] = i32({2}, {1, 2});
  expect_refused(run_node_status(with_bias, inputs), StatusCode::kInvalidArgument, node, "input 8 (B)");
  inputs = good;
  inputs[4] = float_tensor({2}, {0.1f, 0.2f});
  expect_refused(run_node_status(with_bias, inputs), StatusCode::kInvalidArgument, node, "w_scale");
  inputs = good;
  inputs[4] = float_tensor({3}, {0.1f, 0.0f, 0.3f});
  expect_refused(run_node_status(with_bias, inputs), StatusCode::kInvalidArgument, node, "w_scale");
  inputs = good;
  inputs[1] = float_tensor({2}, {0.1f, 0.2f});  // x_scale is one value
  expect_refused(run_node_status(with_bias, inputs), StatusCode::kInvalidArgument, node, "x_scale");
  inputs = good;
  inputs[7] = i8({}, {3});  // y_zero_point sets the output type; any 8-bit one is fine
  EXPECT_TRUE(run_node_status(with_bias, inputs).is_ok());
  inputs[7] = i32({}, {3});
  expect_refused(run_node_status(with_bias, inputs), StatusCode::kInvalidArgument, node, "y_zero_point");
}

}  // namespace
}  // namespace fovea::runtime::testing
