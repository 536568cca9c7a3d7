#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

struct Pool2d {
  std::int64_t kh, kw, sh, sw, dh, dw;
  std::int64_t top, left, bottom, right;
  std::int64_t out_h, out_w;
  bool include_pad = false;
};

// 2-D pooling in plain loops; `max` selects MaxPool, else AveragePool.
Tensor reference_pool(const Tensor& x, const Pool2d& p, bool max) {
  const std::int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y = Tensor::allocate(DataType::kFloat32, {x.dim(0), x.dim(1), p.out_h, p.out_w});
  for (std::int64_t c = 0; c < planes; ++c) {
    for (std::int64_t oy = 0; oy < p.out_h; ++oy) {
      for (std::int64_t ox = 0; ox < p.out_w; ++ox) {
        double sum = 0;
        float best = std::numeric_limits<float>::lowest();
        std::int64_t count = 0;
        for (std::int64_t i = 0; i < p.kh; ++i) {
          for (std::int64_t j = 0; j < p.kw; ++j) {
            const std::int64_t iy = oy * p.sh - p.top + i * p.dh;
            const std::int64_t ix = ox * p.sw - p.left + j * p.dw;
            const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
            const bool in_padding = iy >= -p.top && iy < h + p.bottom && ix >= -p.left && ix < w + p.right;
            count += (p.include_pad ? in_padding : inside) ? 1 : 0;
            if (!inside) continue;
            const float v = x.data<float>()[(c * h + iy) * w + ix];
            sum += v;
            best = std::max(best, v);
          }
        }
        y.data<float>()[(c * p.out_h + oy) * p.out_w + ox] =
            max ? best : static_cast<float>(sum / static_cast<double>(count));
      }
    }
  }
  return y;
}

NodeBuilder pool_node(const char* op, const Pool2d& p) {
  NodeBuilder node(op);
  node.attr("kernel_shape", std::vector<std::int64_t>{p.kh, p.kw})
      .attr("strides", std::vector<std::int64_t>{p.sh, p.sw})
      .attr("dilations", std::vector<std::int64_t>{p.dh, p.dw})
      .attr("pads", std::vector<std::int64_t>{p.top, p.left, p.bottom, p.right});
  return node;
}

TEST(OpMaxPool, MatchesLoopsWithPadsStridesDilationsAndCeil) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 13, 17}, 1);
  // out_h = (13 + 1 + 2 - 5) / 2 + 1 = 6; out_w = (17 + 0 + 1 - 3) / 3 + 1 = 6.
  const Pool2d p{3, 3, 2, 3, 2, 1, 1, 0, 2, 1, 6, 6};
  EXPECT_TRUE(tensors_near(run_node(pool_node("MaxPool", p).build(), {x})[0], reference_pool(x, p, true)));
  // ceil_mode adds a window along H: ceil((16 - 5) / 2) + 1 = 7, and it starts inside the input (12 < 14).
  // Along W, (18 - 3) / 3 is exact: still 6.
  Pool2d p_ceil = p;
  p_ceil.out_h = 7;
  const auto ceil = run_node(pool_node("MaxPool", p).attr("ceil_mode", 1).build(), {x});
  EXPECT_TRUE(tensors_near(ceil[0], reference_pool(x, p_ceil, true)));
  // ONNX's example: 4x4 ramp, kernel 3, stride 2, ceil_mode -> 2x2.
  std::vector<float> ramp(16);
  for (std::size_t i = 0; i < 16; ++i) ramp[i] = static_cast<float>(i + 1);
  const auto onnx = run_node(NodeBuilder("MaxPool")
                                 .attr("kernel_shape", std::vector<std::int64_t>{3, 3})
                                 .attr("strides", std::vector<std::int64_t>{2, 2})
                                 .attr("ceil_mode", 1)
                                 .build(),
                             {float_tensor({1, 1, 4, 4}, ramp)});
  EXPECT_TRUE(tensors_near(onnx[0], float_tensor({1, 1, 2, 2}, {11, 12, 15, 16})));
}

TEST(OpMaxPool, IndicesInBothStorageOrdersAndUint8) {
  const Tensor x = float_tensor({1, 2, 2, 3}, {1, 9, 2, 3, 4, 5, /**/ 7, 0, 1, 2, 3, 8});
  const Node node =
      NodeBuilder("MaxPool").outputs(2).attr("kernel_shape", std::vector<std::int64_t>{2, 2}).build();
  const auto out = run_node(node, {x});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({1, 2, 1, 2}, {9, 9, 7, 8})));
  // Row-major within the tensor: (0, 0, 0, 1) -> 1; plane 1's (1, 2) -> 6 + 5.
  EXPECT_TRUE(tensors_near(out[1], int64_tensor({1, 2, 1, 2}, {1, 1, 6, 11})));
  Node column_major = node;
  column_major.attributes["storage_order"] = NodeBuilder("X").attr("s", 1).build().attributes["s"];
  // Column-major: (h, w) -> h + w * 2; (0, 1) -> 2; plane 1: (0, 0) -> 0, (1, 2) -> 5.
  EXPECT_TRUE(tensors_near(run_node(column_major, {x})[1], int64_tensor({1, 2, 1, 2}, {2, 2, 6, 11})));

  Tensor bytes = Tensor::allocate(DataType::kUInt8, {1, 1, 1, 4});
  const std::vector<std::uint8_t> values{3, 250, 7, 1};
  std::copy(values.begin(), values.end(), bytes.data<std::uint8_t>());
  const auto pooled =
      run_node(NodeBuilder("MaxPool").attr("kernel_shape", std::vector<std::int64_t>{1, 2}).build(), {bytes});
  ASSERT_EQ(pooled[0].shape(), (Shape{1, 1, 1, 3}));
  EXPECT_EQ(pooled[0].data<std::uint8_t>()[1], 250);
}

TEST(OpMaxPool, AutoPadAndUnknownDims) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 7, 8}, 2);
  // SAME_UPPER with kernel 3, stride 2: out 4x4; total pads 2 (H) and 1 (W), the odd one at the end.
  const Node node = NodeBuilder("MaxPool")
                        .attr("kernel_shape", std::vector<std::int64_t>{3, 3})
                        .attr("strides", std::vector<std::int64_t>{2, 2})
                        .attr("auto_pad", "SAME_UPPER")
                        .build();
  EXPECT_TRUE(
      tensors_near(run_node(node, {x})[0], reference_pool(x, {3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 4, 4}, true)));
  const auto types = infer_types(
      node, {ValueType{DataType::kFloat32,
                       Dims{Dim::unknown("N"), Dim::known_size(2), Dim::unknown(), Dim::known_size(9)}}});
  ASSERT_TRUE(types.is_ok());
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[N, 2, ?, 5]");
}

TEST(OpMaxPool, RejectsBadInput) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 1, 4, 4}, 3);
  Status status = run_node_status(NodeBuilder("MaxPool").build(), {x});
  EXPECT_NE(status.message().find("kernel_shape"), std::string::npos) << status.message();
  status = run_node_status(
      NodeBuilder("MaxPool").attr("kernel_shape", std::vector<std::int64_t>{5, 5}).build(), {x});
  EXPECT_NE(status.message().find("window"), std::string::npos) << status.message();
  status =
      run_node_status(NodeBuilder("MaxPool").attr("kernel_shape", std::vector<std::int64_t>{2}).build(), {x});
  EXPECT_NE(status.message().find("kernel_shape has 1 entries"), std::string::npos) << status.message();
  status = run_node_status(NodeBuilder("MaxPool").attr("kernel_shape", std::vector<std::int64_t>{2}).build(),
                           {random_tensor(DataType::kFloat32, {4, 4}, 4)});
  EXPECT_NE(status.message().find("rank"), std::string::npos) << status.message();
}

// x [N, C, H, W] as [N, H, W, C], in plain loops (not the op's own permute).
Tensor to_nhwc(const Tensor& x) {
  const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y = Tensor::allocate(DataType::kFloat32, {n, h, w, c});
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t k = 0; k < c; ++k) {
      for (std::int64_t i = 0; i < h; ++i) {
        for (std::int64_t j = 0; j < w; ++j)
          y.data<float>()[((b * h + i) * w + j) * c + k] = x.data<float>()[((b * c + k) * h + i) * w + j];
      }
    }
  }
  return y;
}

struct NhwcPoolCase {
  std::vector<std::int64_t> kernel, strides, pads, dilations;
  int ceil_mode = 0;
};

// ResNet's stem pool, VGG's 2x2 with ceil_mode on odd sizes, SSD's pool5, dilation 2 with uneven
// pads and mixed strides, ceil_mode with dilation.
const NhwcPoolCase kNhwcPoolCases[] = {
    {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0}, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
    {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 0}, {{3, 2}, {2, 1}, {1, 0, 2, 1}, {2, 2}, 0},
    {{2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 1}, 1},
};

NodeBuilder nhwc_pool_node(const NhwcPoolCase& c, const std::string& domain) {
  NodeBuilder node("MaxPool");
  node.domain(domain)
      .attr("kernel_shape", c.kernel)
      .attr("strides", c.strides)
      .attr("pads", c.pads)
      .attr("dilations", c.dilations)
      .attr("ceil_mode", c.ceil_mode);
  if (!domain.empty()) node.attr("channels_last", 1);
  return node;
}

TEST(Opfovea_MaxPool, EqualsMaxPoolOnTheNchwView) {
  std::uint32_t seed = 10;
  for (const Shape& shape : {Shape{2, 5, 13, 11}, Shape{2, 16, 13, 11}}) {
    for (const NhwcPoolCase& c : kNhwcPoolCases) {
      const Tensor x = random_tensor(DataType::kFloat32, shape, seed++);
      const Tensor expected = to_nhwc(run_node(nhwc_pool_node(c, "").build(), {x})[0]);
      const auto out = run_node(nhwc_pool_node(c, "fovea").build(), {to_nhwc(x)});
      // The same taps compared in the same order: exactly the same values.
      EXPECT_TRUE(tensors_near(out[0], expected, 0, 0)) << shape_string(shape) << " kernel " << c.kernel[0]
                                                        << "x" << c.kernel[1] << " ceil " << c.ceil_mode;
    }
  }
}

TEST(Opfovea_MaxPool, InfersNhwcShapesAndTakesTheFloat16OfPlans) {
  const Node node = nhwc_pool_node(kNhwcPoolCases[0], "fovea").build();
  const auto types =
      infer_types(node, {ValueType{DataType::kFloat16, Dims{Dim::unknown("N"), Dim::known_size(13),
                                                            Dim::known_size(11), Dim::known_size(5)}}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  // (13 + 2 - 3) / 2 + 1 = 7 rows, (11 + 2 - 3) / 2 + 1 = 6 columns; channels last, unchanged.
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[N, 7, 6, 5]");
  EXPECT_EQ((*types)[0].dtype, DataType::kFloat16);
}

TEST(Opfovea_MaxPool, RejectsBadInput) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 4, 4, 3}, 20);
  Node node = nhwc_pool_node(kNhwcPoolCases[0], "fovea").build();
  node.attributes.erase("channels_last");
  Status status = run_node_status(node, {x});
  EXPECT_NE(status.message().find("channels_last=0 is not 1"), std::string::npos) << status.message();
  status = run_node_status(nhwc_pool_node(kNhwcPoolCases[0], "fovea").build(),
                           {random_tensor(DataType::kFloat32, {1, 4, 4, 3, 2}, 21)});
  EXPECT_NE(status.message().find("rank"), std::string::npos) << status.message();
  // No Indices: ONNX numbers them within NCHW planes.
  status = run_node_status(nhwc_pool_node(kNhwcPoolCases[0], "fovea").outputs(2).build(), {x});
  EXPECT_NE(status.message().find("at most 1 allowed"), std::string::npos) << status.message();
  node = nhwc_pool_node(kNhwcPoolCases[0], "fovea").build();
  node.attributes.erase("kernel_shape");
  status = run_node_status(node, {x});
  EXPECT_NE(status.message().find("kernel_shape"), std::string::npos) << status.message();
}

TEST(OpAveragePool, MatchesLoopsWithAndWithoutPadCounting) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 11, 9}, 5);
  const Pool2d p{3, 2, 2, 1, 1, 2, 1, 1, 2, 0, 6, 8};
  EXPECT_TRUE(
      tensors_near(run_node(pool_node("AveragePool", p).build(), {x})[0], reference_pool(x, p, false)));
  Pool2d include = p;
  include.include_pad = true;
  EXPECT_TRUE(tensors_near(run_node(pool_node("AveragePool", p).attr("count_include_pad", 1).build(), {x})[0],
                           reference_pool(x, include, false)));
  // 1-D with ceil_mode: windows [0, 3), [2, 5), [4, 6) -> the last one averages two elements.
  const auto one_d = run_node(NodeBuilder("AveragePool")
                                  .attr("kernel_shape", std::vector<std::int64_t>{3})
                                  .attr("strides", std::vector<std::int64_t>{2})
                                  .attr("ceil_mode", 1)
                                  .build(),
                              {float_tensor({1, 1, 6}, {1, 2, 3, 4, 5, 6})});
  EXPECT_TRUE(tensors_near(one_d[0], float_tensor({1, 1, 3}, {2, 4, 5.5f})));
}

TEST(OpAveragePool, RejectsIntegerInput) {
  const Status status =
      run_node_status(NodeBuilder("AveragePool").attr("kernel_shape", std::vector<std::int64_t>{2}).build(),
                      {Tensor::allocate(DataType::kInt32, {1, 1, 4})});
  EXPECT_NE(status.message().find("type mismatch"), std::string::npos) << status.message();
}

TEST(OpGlobalAveragePool, AveragesEachPlane) {
  const Tensor x = float_tensor({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, 10});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("GlobalAveragePool").build(), {x})[0],
                           float_tensor({1, 2, 1, 1}, {2.5f, 1})));
  const Status status =
      run_node_status(NodeBuilder("GlobalAveragePool").build(), {float_tensor({2}, {1, 2})});
  EXPECT_NE(status.message().find("rank"), std::string::npos) << status.message();
}

TEST(OpGlobalMaxPool, TakesEachPlanesMaximum) {
  const Tensor x = float_tensor({2, 1, 3}, {1, 5, 2, -4, -3, -9});
  EXPECT_TRUE(
      tensors_near(run_node(NodeBuilder("GlobalMaxPool").build(), {x})[0], float_tensor({2, 1, 1}, {5, -3})));
}

}  // namespace
}  // namespace fovea::runtime::testing
