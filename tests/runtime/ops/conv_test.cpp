#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

// Convolutions sum up to a few hundred products in another order than the reference: 1e-4.
constexpr double kConvTolerance = 1e-4;

struct ConvParams {
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  std::vector<std::int64_t> pads;  // begins, then ends
  std::int64_t group = 1;
};

// Unravels a row-major flat index into per-dim indices.
std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// Direct N-D convolution in plain loops, accumulating in double.
Tensor reference_conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvParams& p) {
  const std::size_t rank = x.shape().size() - 2;
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  Shape out_shape{x.dim(0), w.dim(0)};
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t extent = (kernel[d] - 1) * p.dilations[d] + 1;
    out_shape.push_back((in[d] + p.pads[d] + p.pads[d + rank] - extent) / p.strides[d] + 1);
  }
  Tensor y = Tensor::allocate(DataType::kFloat32, out_shape);
  const std::int64_t group_in = w.dim(1);
  const std::int64_t group_out = w.dim(0) / p.group;
  const std::int64_t kernel_size = element_count(kernel);
  const Shape in_strides = contiguous_strides(x.shape());
  for (std::int64_t flat = 0; flat < y.numel(); ++flat) {
    const auto index = unravel(flat, out_shape);
    const std::int64_t n = index[0];
    const std::int64_t m = index[1];
    double sum = bias != nullptr ? bias->data<float>()[m] : 0.0;
    for (std::int64_t c = 0; c < group_in; ++c) {
      const std::int64_t channel = (m / group_out) * group_in + c;
      for (std::int64_t k = 0; k < kernel_size; ++k) {
        const auto tap = unravel(k, kernel);
        std::int64_t offset = n * in_strides[0] + channel * in_strides[1];
        bool inside = true;
        for (std::size_t d = 0; d < rank; ++d) {
          const std::int64_t i = index[d + 2] * p.strides[d] - p.pads[d] + tap[d] * p.dilations[d];
          inside = inside && i >= 0 && i < in[d];
          offset += i * in_strides[d + 2];
        }
        if (inside) {
          sum += static_cast<double>(x.data<float>()[offset]) *
                 static_cast<double>(w.data<float>()[(m * group_in + c) * kernel_size + k]);
        }
      }
    }
    y.data<float>()[flat] = static_cast<float>(sum);
  }
  return y;
}

NodeBuilder conv_node(const ConvParams& p, int inputs) {
  NodeBuilder node("Conv");
  node.inputs(inputs).attr("strides", p.strides).attr("dilations", p.dilations).attr("pads", p.pads);
  node.attr("group", p.group);
  return node;
}

TEST(OpConv, OnnxExampleWithPadding) {
  std::vector<float> ramp(25);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i);
  const Tensor x = float_tensor({1, 1, 5, 5}, ramp);
  const Tensor w = float_tensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  const auto out = run_node(
      NodeBuilder("Conv").inputs(2).attr("pads", std::vector<std::int64_t>{1, 1, 1, 1}).build(), {x, w});
  const Tensor expected =
      float_tensor({1, 1, 5, 5}, {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                                  117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  EXPECT_TRUE(tensors_near(out[0], expected));
}

TEST(OpConv, MatchesDirectLoops2dWithGroupsDilationStrideAsymmetricPads) {
  const ConvParams base{.strides = {2, 1}, .dilations = {2, 1}, .pads = {1, 0, 2, 3}};
  for (std::int64_t group : {1, 5}) {
    ConvParams p = base;
    p.group = group;
    const std::int64_t out_channels = group == 1 ? 7 : 10;  // depthwise with multiplier 2
    const Tensor x = random_tensor(DataType::kFloat32, {2, 5, 13, 17}, 1);
    const Tensor w = random_tensor(DataType::kFloat32, {out_channels, 5 / group, 3, 4}, 2);
    const Tensor b = random_tensor(DataType::kFloat32, {out_channels}, 3);
    const auto out = run_node(conv_node(p, 3).build(), {x, w, b});
    EXPECT_TRUE(tensors_near(out[0], reference_conv(x, w, &b, p), kConvTolerance, kConvTolerance))
        << "group " << group;
  }
}

// Depthwise layers (one input channel per group) take their own direct loops: strides 1 to 3,
// dilations, pads wider than the kernel's reach on one side and none on the other, kernels wider
// than the image, multipliers 1 and 3, with and without a bias.
TEST(OpConv, DepthwiseMatchesDirectLoops) {
  struct Case {
    ConvParams p;
    Shape w;  // [C * multiplier, 1, kh, kw]
  };
  const Case cases[] = {
      {{.strides = {1, 1}, .dilations = {1, 1}, .pads = {1, 1, 1, 1}, .group = 6}, {6, 1, 3, 3}},
      {{.strides = {2, 2}, .dilations = {1, 1}, .pads = {2, 2, 2, 2}, .group = 6}, {6, 1, 5, 5}},
      {{.strides = {3, 1}, .dilations = {2, 3}, .pads = {0, 4, 3, 0}, .group = 6}, {18, 1, 3, 2}},
      {{.strides = {1, 2}, .dilations = {1, 1}, .pads = {5, 0, 0, 6}, .group = 6}, {6, 1, 7, 9}},
  };
  const Tensor x = random_tensor(DataType::kFloat32, {2, 6, 11, 8}, 30);
  std::uint32_t seed = 31;
  for (const Case& c : cases) {
    const Tensor w = random_tensor(DataType::kFloat32, c.w, seed++);
    const Tensor b = random_tensor(DataType::kFloat32, {c.w[0]}, seed++);
    EXPECT_TRUE(tensors_near(run_node(conv_node(c.p, 3).build(), {x, w, b})[0], reference_conv(x, w, &b, c.p),
                             kConvTolerance, kConvTolerance))
        << "weights " << shape_string(c.w) << ", stride " << c.p.strides[0] << "x" << c.p.strides[1];
    EXPECT_TRUE(tensors_near(run_node(conv_node(c.p, 2).build(), {x, w})[0],
                             reference_conv(x, w, nullptr, c.p), kConvTolerance, kConvTolerance))
        << "weights " << shape_string(c.w) << ", no bias";
  }
}

TEST(OpConv, MatchesDirectLoops1dAnd3d) {
  const ConvParams p1{.strides = {3}, .dilations = {2}, .pads = {2, 1}};
  const Tensor x1 = random_tensor(DataType::kFloat32, {3, 4, 29}, 4);
  const Tensor w1 = random_tensor(DataType::kFloat32, {6, 4, 5}, 5);
  EXPECT_TRUE(tensors_near(run_node(conv_node(p1, 2).build(), {x1, w1})[0],
                           reference_conv(x1, w1, nullptr, p1), kConvTolerance, kConvTolerance));

  const ConvParams p3{.strides = {1, 2, 1}, .dilations = {1, 1, 2}, .pads = {1, 0, 1, 0, 1, 2}, .group = 2};
  const Tensor x3 = random_tensor(DataType::kFloat32, {1, 4, 5, 7, 6}, 6);
  const Tensor w3 = random_tensor(DataType::kFloat32, {4, 2, 2, 3, 2}, 7);
  EXPECT_TRUE(tensors_near(run_node(conv_node(p3, 2).build(), {x3, w3})[0],
                           reference_conv(x3, w3, nullptr, p3), kConvTolerance, kConvTolerance));
}

TEST(OpConv, PointwiseAndLargeProductsMatchDirectLoops) {
  // 1x1 takes the no-im2col path; the 32-channel 3x3 one (K = 288) spans several K blocks and runs in
  // parallel.
  const ConvParams p1{.strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}};
  const Tensor x1 = random_tensor(DataType::kFloat32, {2, 9, 11, 13}, 8);
  const Tensor w1 = random_tensor(DataType::kFloat32, {5, 9, 1, 1}, 9);
  EXPECT_TRUE(tensors_near(run_node(conv_node(p1, 2).build(), {x1, w1})[0],
                           reference_conv(x1, w1, nullptr, p1), kConvTolerance, kConvTolerance));

  const ConvParams p3{.strides = {1, 1}, .dilations = {1, 1}, .pads = {1, 1, 1, 1}};
  const Tensor x3 = random_tensor(DataType::kFloat32, {1, 32, 21, 19}, 10);
  const Tensor w3 = random_tensor(DataType::kFloat32, {70, 32, 3, 3}, 11);
  const Tensor b3 = random_tensor(DataType::kFloat32, {70}, 12);
  EXPECT_TRUE(tensors_near(run_node(conv_node(p3, 3).build(), {x3, w3, b3})[0],
                           reference_conv(x3, w3, &b3, p3), kConvTolerance, kConvTolerance));
}

TEST(OpConv, AutoPadSameAndValid) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 10}, 13);
  const Tensor w = random_tensor(DataType::kFloat32, {3, 2, 4}, 14);
  // Total padding for out = ceil(10 / 3) = 4: (4 - 1) * 3 + 4 - 10 = 3; SAME_UPPER puts 2 at the end.
  const auto upper = run_node(NodeBuilder("Conv")
                                  .inputs(2)
                                  .attr("auto_pad", "SAME_UPPER")
                                  .attr("strides", std::vector<std::int64_t>{3})
                                  .build(),
                              {x, w});
  EXPECT_TRUE(tensors_near(upper[0], reference_conv(x, w, nullptr, {{3}, {1}, {1, 2}}), kConvTolerance,
                           kConvTolerance));
  const auto lower = run_node(NodeBuilder("Conv")
                                  .inputs(2)
                                  .attr("auto_pad", "SAME_LOWER")
                                  .attr("strides", std::vector<std::int64_t>{3})
                                  .build(),
                              {x, w});
  EXPECT_TRUE(tensors_near(lower[0], reference_conv(x, w, nullptr, {{3}, {1}, {2, 1}}), kConvTolerance,
                           kConvTolerance));
  const auto valid = run_node(NodeBuilder("Conv")
                                  .inputs(2)
                                  .attr("auto_pad", "VALID")
                                  .attr("kernel_shape", std::vector<std::int64_t>{4})
                                  .build(),
                              {x, w});
  EXPECT_TRUE(tensors_near(valid[0], reference_conv(x, w, nullptr, {{1}, {1}, {0, 0}}), kConvTolerance,
                           kConvTolerance));
}

TEST(OpConv, Float64) {
  const Tensor x = random_tensor(DataType::kFloat64, {1, 3, 6, 5}, 15);
  const Tensor w = random_tensor(DataType::kFloat64, {2, 3, 3, 3}, 16);
  const auto out = run_node(NodeBuilder("Conv").inputs(2).build(), {x, w});
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 4, 3}));
  double expected = 0;  // output (0, 1, 2, 0) by hand
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j)
        expected += x.data<double>()[(c * 6 + 2 + i) * 5 + j] * w.data<double>()[((3 + c) * 3 + i) * 3 + j];
    }
  }
  EXPECT_NEAR(out[0].data<double>()[12 + 6], expected, 1e-12);
}

TEST(OpConv, InfersWithUnknownDims) {
  const Node node = NodeBuilder("Conv").inputs(2).attr("strides", std::vector<std::int64_t>{2, 2}).build();
  const auto types = infer_types(
      node, {ValueType{DataType::kFloat32,
                       Dims{Dim::unknown("N"), Dim::known_size(3), Dim::unknown(), Dim::known_size(33)}},
             ValueType{DataType::kFloat32, dims_of({8, 3, 3, 3})}});
  ASSERT_TRUE(types.is_ok()) << types.status().message();
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[N, 8, ?, 16]");
  const auto unknown_rank = infer_types(
      node, {ValueType{DataType::kFloat32, std::nullopt}, ValueType{DataType::kFloat32, std::nullopt}});
  ASSERT_TRUE(unknown_rank.is_ok());
  EXPECT_FALSE((*unknown_rank)[0].dims.has_value());
}

TEST(OpConv, RejectsBadInput) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 4, 5, 5}, 17);
  const Tensor w = random_tensor(DataType::kFloat32, {2, 3, 3, 3}, 18);
  Status status = run_node_status(NodeBuilder("Conv").inputs(2).build(), {x, w});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("channels"), std::string::npos) << status.message();

  const Tensor w4 = random_tensor(DataType::kFloat32, {2, 4, 3, 3}, 19);
  status = run_node_status(NodeBuilder("Conv").inputs(2).attr("auto_pad", "SAME").build(), {x, w4});
  EXPECT_NE(status.message().find("auto_pad"), std::string::npos) << status.message();

  const Tensor big = random_tensor(DataType::kFloat32, {2, 4, 7, 7}, 20);
  status = run_node_status(NodeBuilder("Conv").inputs(2).build(), {x, big});
  EXPECT_NE(status.message().find("window"), std::string::npos) << status.message();

  status = run_node_status(
      NodeBuilder("Conv").inputs(2).attr("strides", std::vector<std::int64_t>{0, 1}).build(), {x, w4});
  EXPECT_NE(status.message().find("strides"), std::string::npos) << status.message();

  const Tensor x_int = random_tensor(DataType::kInt32, {1, 4, 5, 5}, 21);
  status = run_node_status(NodeBuilder("Conv").inputs(2).build(), {x_int, w4});
  EXPECT_NE(status.message().find("type mismatch"), std::string::npos) << status.message();
}

// Throughput on ResNet-50 layer shapes (FCN-ResNet at 520x520); run by hand with
// --gtest_also_run_disabled_tests --gtest_filter='OpConv.DISABLED_*'.
TEST(OpConv, DISABLED_ThroughputOnResnetLayers) {
  struct Layer {
    Shape x;
    Shape w;
    std::int64_t pad;
    std::int64_t stride;
  };
  for (const Layer& layer :
       {Layer{{1, 64, 130, 130}, {64, 64, 3, 3}, 1, 1}, Layer{{1, 256, 130, 130}, {64, 256, 1, 1}, 0, 1},
        Layer{{1, 512, 65, 65}, {2048, 512, 1, 1}, 0, 1}, Layer{{1, 3, 520, 520}, {64, 3, 7, 7}, 3, 2},
        Layer{{1, 256, 65, 65}, {256, 256, 3, 3}, 2, 1}}) {
    const Tensor x = random_tensor(DataType::kFloat32, layer.x, 1);
    const Tensor w = random_tensor(DataType::kFloat32, layer.w, 2);
    const Node node = NodeBuilder("Conv")
                          .inputs(2)
                          .attr("pads", std::vector<std::int64_t>(4, layer.pad))
                          .attr("strides", std::vector<std::int64_t>(2, layer.stride))
                          .build();
    const auto start = std::chrono::steady_clock::now();
    const Tensor y = run_node(node, {x, w})[0];
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops =
        2.0 * static_cast<double>(y.numel()) * static_cast<double>(element_count(layer.w) / layer.w[0]);
    std::printf("%s * %s: %.1f ms, %.1f GFLOP/s\n", shape_string(layer.x).c_str(),
                shape_string(layer.w).c_str(), seconds * 1e3, flops / seconds / 1e9);
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
