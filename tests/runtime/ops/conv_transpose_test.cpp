#include <cstdint>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

// Each output sums up to a few dozen products in another order than the reference: 1e-4.
constexpr double kTolerance = 1e-4;

struct Transpose2d {
  std::int64_t sh, sw, dh, dw;
  std::int64_t top, left;  // pad_begin; the end pads only shrink the output size given here
  std::int64_t out_h, out_w;
  std::int64_t group = 1;
};

// ConvTranspose as the scatter it is: every input element times every kernel tap, added at
// (i * stride - pad + tap * dilation).
Tensor reference_transpose(const Tensor& x, const Tensor& w, const Tensor* bias, const Transpose2d& p) {
  const std::int64_t n_count = x.dim(0), c_count = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const std::int64_t group_in = c_count / p.group, group_out = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const std::int64_t m_count = group_out * p.group;
  Tensor y = Tensor::allocate(DataType::kFloat32, {n_count, m_count, p.out_h, p.out_w});
  float* out = y.data<float>();
  for (std::int64_t n = 0; n < n_count; ++n) {
    for (std::int64_t m = 0; m < m_count; ++m) {
      for (std::int64_t i = 0; i < p.out_h * p.out_w; ++i) {
        out[(n * m_count + m) * p.out_h * p.out_w + i] = bias != nullptr ? bias->data<float>()[m] : 0.0f;
      }
    }
    for (std::int64_t c = 0; c < c_count; ++c) {
      const std::int64_t g = c / group_in;
      for (std::int64_t iy = 0; iy < h; ++iy) {
        for (std::int64_t ix = 0; ix < wd; ++ix) {
          const float v = x.data<float>()[((n * c_count + c) * h + iy) * wd + ix];
          for (std::int64_t mg = 0; mg < group_out; ++mg) {
            for (std::int64_t ty = 0; ty < kh; ++ty) {
              for (std::int64_t tx = 0; tx < kw; ++tx) {
                const std::int64_t oy = iy * p.sh - p.top + ty * p.dh;
                const std::int64_t ox = ix * p.sw - p.left + tx * p.dw;
                if (oy < 0 || oy >= p.out_h || ox < 0 || ox >= p.out_w) continue;
                const std::int64_t m = g * group_out + mg;
                out[((n * m_count + m) * p.out_h + oy) * p.out_w + ox] +=
                    v * w.data<float>()[((c * group_out + mg) * kh + ty) * kw + tx];
              }
            }
          }
        }
      }
    }
  }
  return y;
}

TEST(OpConvTranspose, OnnxExample) {
  std::vector<float> ramp(9);
  for (std::size_t i = 0; i < 9; ++i) ramp[i] = static_cast<float>(i);
  const auto out =
      run_node(NodeBuilder("ConvTranspose").inputs(2).build(),
               {float_tensor({1, 1, 3, 3}, ramp), float_tensor({1, 2, 3, 3}, std::vector<float>(18, 1.0f))});
  const std::vector<float> plane{0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                 27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<float> both(plane);
  both.insert(both.end(), plane.begin(), plane.end());
  EXPECT_TRUE(tensors_near(out[0], float_tensor({1, 2, 5, 5}, both)));
}

TEST(OpConvTranspose, MatchesScatterLoopsWithGroupsStridesDilationsPadsAndOutputPadding) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 4, 5, 7}, 1);
  const Tensor w = random_tensor(DataType::kFloat32, {4, 3, 3, 2}, 2);  // group 2: 6 output channels
  const Tensor b = random_tensor(DataType::kFloat32, {6}, 3);
  // H: 2 * 4 + 1 + (3 - 1) * 2 + 1 - 1 - 2 = 11; W: 3 * 6 + 0 + 2 - 0 - 1 = 19.
  const Node node = NodeBuilder("ConvTranspose")
                        .inputs(3)
                        .attr("group", 2)
                        .attr("strides", std::vector<std::int64_t>{2, 3})
                        .attr("dilations", std::vector<std::int64_t>{2, 1})
                        .attr("pads", std::vector<std::int64_t>{1, 0, 2, 1})
                        .attr("output_padding", std::vector<std::int64_t>{1, 0})
                        .build();
  const auto out = run_node(node, {x, w, b});
  EXPECT_TRUE(tensors_near(out[0], reference_transpose(x, w, &b, {2, 3, 2, 1, 1, 0, 11, 19, 2}), kTolerance,
                           kTolerance));
}

TEST(OpConvTranspose, OutputShapeAndAutoPad) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 3, 4}, 4);
  const Tensor w = random_tensor(DataType::kFloat32, {2, 3, 3, 3}, 5);
  // Full size with stride 2: 2 * 2 + 3 = 7 by 2 * 3 + 3 = 9; output_shape 6x9 -> total padding 1
  // and 0, the odd one at the beginning.
  const auto shaped = run_node(NodeBuilder("ConvTranspose")
                                   .inputs(2)
                                   .attr("strides", std::vector<std::int64_t>{2, 2})
                                   .attr("output_shape", std::vector<std::int64_t>{6, 9})
                                   .build(),
                               {x, w});
  EXPECT_TRUE(tensors_near(shaped[0], reference_transpose(x, w, nullptr, {2, 2, 1, 1, 1, 0, 6, 9}),
                           kTolerance, kTolerance));
  // A requested size beyond the full one (as in ONNX's test_convtranspose_output_shape): the extra rows and
  // columns come at the end, the begin pads stay 0.
  const auto larger = run_node(NodeBuilder("ConvTranspose")
                                   .inputs(2)
                                   .attr("strides", std::vector<std::int64_t>{3, 2})
                                   .attr("output_shape", std::vector<std::int64_t>{10, 10})
                                   .build(),
                               {x, w});
  EXPECT_TRUE(tensors_near(larger[0], reference_transpose(x, w, nullptr, {3, 2, 1, 1, 0, 0, 10, 10}),
                           kTolerance, kTolerance));
  // SAME_UPPER: output = input * stride = 6x8; total padding 1 and 1, SAME_UPPER's begin gets 0.
  const auto same = run_node(NodeBuilder("ConvTranspose")
                                 .inputs(2)
                                 .attr("strides", std::vector<std::int64_t>{2, 2})
                                 .attr("auto_pad", "SAME_UPPER")
                                 .build(),
                             {x, w});
  EXPECT_TRUE(tensors_near(same[0], reference_transpose(x, w, nullptr, {2, 2, 1, 1, 0, 0, 6, 8}), kTolerance,
                           kTolerance));
}

TEST(OpConvTranspose, OneDimensional) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 6}, 6);
  const Tensor w = random_tensor(DataType::kFloat32, {3, 2, 4}, 7);
  const auto out = run_node(
      NodeBuilder("ConvTranspose").inputs(2).attr("strides", std::vector<std::int64_t>{3}).build(), {x, w});
  ASSERT_EQ(out[0].shape(), (Shape{2, 2, 19}));
  // The 1-D case is the 2-D one with a height of 1.
  const Tensor x2 = x.reshaped({2, 3, 1, 6});
  const Tensor w2 = w.reshaped({3, 2, 1, 4});
  EXPECT_TRUE(tensors_near(out[0].reshaped({2, 2, 1, 19}),
                           reference_transpose(x2, w2, nullptr, {1, 3, 1, 1, 0, 0, 1, 19}), kTolerance,
                           kTolerance));
}

TEST(OpConvTranspose, RejectsBadInput) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 3, 3}, 8);
  Status status = run_node_status(NodeBuilder("ConvTranspose").inputs(2).build(),
                                  {x, random_tensor(DataType::kFloat32, {3, 1, 2, 2}, 9)});
  EXPECT_NE(status.message().find("channels"), std::string::npos) << status.message();
  const Tensor w = random_tensor(DataType::kFloat32, {2, 1, 2, 2}, 10);
  status = run_node_status(
      NodeBuilder("ConvTranspose").inputs(2).attr("pads", std::vector<std::int64_t>{3, 0, 3, 0}).build(),
      {x, w});
  EXPECT_NE(status.message().find("negative output"), std::string::npos) << status.message();
  status = run_node_status(
      NodeBuilder("ConvTranspose").inputs(2).attr("output_padding", std::vector<std::int64_t>{1}).build(),
      {x, w});
  EXPECT_NE(status.message().find("output_padding"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
