#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/op_test_util.h"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::testing {
namespace {

// Means and variances over up to a few hundred float32 values: 1e-4 (the kernel stores float32
// normalized values before the affine step, the reference stays in double).
constexpr double kTolerance = 1e-4;

TEST(OpBatchNormalization, MatchesFormulaPerChannel) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 1);
  const Tensor scale = random_tensor(DataType::kFloat32, {3}, 2);
  const Tensor bias = random_tensor(DataType::kFloat32, {3}, 3);
  const Tensor mean = random_tensor(DataType::kFloat32, {3}, 4);
  const Tensor var = random_tensor(DataType::kFloat32, {3}, 5, 0.1, 2.0);
  const auto out = run_node(NodeBuilder("BatchNormalization", 15).inputs(5).attr("epsilon", 1e-3f).build(),
                            {x, scale, bias, mean, var});
  Tensor expected = Tensor::allocate(DataType::kFloat32, x.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t c = (i / 35) % 3;
    expected.data<float>()[i] =
        static_cast<float>((x.data<float>()[i] - mean.data<float>()[c]) /
                               std::sqrt(var.data<float>()[c] + 1e-3) * scale.data<float>()[c] +
                           bias.data<float>()[c]);
  }
  EXPECT_TRUE(tensors_near(out[0], expected, kTolerance, kTolerance));
}

TEST(OpBatchNormalization, RejectsTrainingModeAndBadChannels) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 3}, 1);
  const Tensor p = float_tensor({2}, {1, 1});
  Status status = run_node_status(
      NodeBuilder("BatchNormalization", 15).inputs(5).attr("training_mode", 1).build(), {x, p, p, p, p});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("training_mode"), std::string::npos) << status.message();
  const Tensor p3 = float_tensor({3}, {1, 1, 1});
  status = run_node_status(NodeBuilder("BatchNormalization", 15).inputs(5).build(), {x, p, p3, p, p});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("3 entries for 2 channels"), std::string::npos) << status.message();
}

// fovea.BatchNormalization normalizes the last axis of an NHWC value: the NHWC form of ONNX's NCHW
// result, then the ReLU when asked.
TEST(Opfovea_BatchNormalization, NormalizesTheLastAxisOfNhwcAndAppliesTheRelu) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 1);  // NCHW, 3 channels
  const Tensor scale = random_tensor(DataType::kFloat32, {3}, 2);
  const Tensor bias = random_tensor(DataType::kFloat32, {3}, 3);
  const Tensor mean = random_tensor(DataType::kFloat32, {3}, 4);
  const Tensor var = random_tensor(DataType::kFloat32, {3}, 5, 0.1, 2.0);
  const Node onnx = NodeBuilder("BatchNormalization", 15).inputs(5).attr("epsilon", 1e-3f).build();
  const Tensor nchw = run_node(onnx, {x, scale, bias, mean, var})[0];
  Tensor relu = ops::permute_tensor(nchw, ops::kNchwToNhwc);
  for (std::int64_t i = 0; i < relu.numel(); ++i)
    relu.data<float>()[i] = std::max(relu.data<float>()[i], 0.0f);
  const Tensor x_nhwc = ops::permute_tensor(x, ops::kNchwToNhwc);
  for (const bool with_relu : {false, true}) {
    NodeBuilder builder("BatchNormalization");
    builder.domain("fovea").inputs(5).attr("epsilon", 1e-3f).attr("channels_last", std::int64_t{1});
    if (with_relu) builder.attr("activation", std::string("Relu"));
    const auto out = run_node(builder.build(), {x_nhwc, scale, bias, mean, var});
    EXPECT_TRUE(tensors_near(out[0], with_relu ? relu : ops::permute_tensor(nchw, ops::kNchwToNhwc), 0, 0))
        << "relu " << with_relu;
  }
}

TEST(Opfovea_BatchNormalization, RefusesNchwAndUnknownActivations) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 2, 3}, 1);
  const Tensor p = float_tensor({3}, {1, 1, 1});
  Status status =
      run_node_status(NodeBuilder("BatchNormalization").domain("fovea").inputs(5).build(), {x, p, p, p, p});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("NHWC only"), std::string::npos) << status.message();
  status = run_node_status(NodeBuilder("BatchNormalization")
                               .domain("fovea")
                               .inputs(5)
                               .attr("channels_last", std::int64_t{1})
                               .attr("activation", std::string("Sigmoid"))
                               .build(),
                           {x, p, p, p, p});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'Sigmoid'"), std::string::npos) << status.message();
  const Tensor p2 = float_tensor({2}, {1, 1});  // the channels are the last axis, 3
  status = run_node_status(NodeBuilder("BatchNormalization")
                               .domain("fovea")
                               .inputs(5)
                               .attr("channels_last", std::int64_t{1})
                               .build(),
                           {x, p2, p2, p2, p2});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("2 entries for 3 channels"), std::string::npos) << status.message();
}

// Normalizes rows of `length` elements of x in double, then y = v * scale(row, i) + bias(row, i).
template <typename Scale, typename Bias>
Tensor reference_normalize(const Tensor& x, std::int64_t length, double epsilon, Scale scale, Bias bias) {
  Tensor y = Tensor::allocate(DataType::kFloat32, x.shape());
  for (std::int64_t r = 0; r < x.numel() / length; ++r) {
    const float* in = x.data<float>() + r * length;
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < length; ++i) mean += in[i];
    mean /= static_cast<double>(length);
    for (std::int64_t i = 0; i < length; ++i) var += (in[i] - mean) * (in[i] - mean);
    var /= static_cast<double>(length);
    for (std::int64_t i = 0; i < length; ++i) {
      y.data<float>()[r * length + i] =
          static_cast<float>((in[i] - mean) / std::sqrt(var + epsilon) * scale(r, i) + bias(r, i));
    }
  }
  return y;
}

TEST(OpInstanceNormalization, NormalizesEachPlane) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 13, 17}, 6);
  const Tensor scale = random_tensor(DataType::kFloat32, {3}, 7);
  const Tensor bias = random_tensor(DataType::kFloat32, {3}, 8);
  const auto out = run_node(NodeBuilder("InstanceNormalization").inputs(3).attr("epsilon", 1e-2f).build(),
                            {x, scale, bias});
  const Tensor expected = reference_normalize(
      x, 13 * 17, 1e-2, [&](std::int64_t r, std::int64_t) { return scale.data<float>()[r % 3]; },
      [&](std::int64_t r, std::int64_t) { return bias.data<float>()[r % 3]; });
  EXPECT_TRUE(tensors_near(out[0], expected, kTolerance, kTolerance));
  const Status status = run_node_status(NodeBuilder("InstanceNormalization").inputs(3).build(),
                                        {random_tensor(DataType::kFloat32, {2, 3}, 1), scale, bias});
  EXPECT_NE(status.message().find("rank"), std::string::npos) << status.message();
}

TEST(OpLayerNormalization, NormalizesTrailingDimsWithBroadcastScale) {
  const Tensor x = random_tensor(DataType::kFloat32, {3, 5, 7}, 9);
  const Tensor scale = random_tensor(DataType::kFloat32, {7}, 10);  // broadcast over the 5
  const Tensor bias = random_tensor(DataType::kFloat32, {5, 7}, 11);
  const auto out = run_node(NodeBuilder("LayerNormalization").inputs(3).outputs(3).attr("axis", -2).build(),
                            {x, scale, bias});
  const Tensor expected = reference_normalize(
      x, 35, 1e-5, [&](std::int64_t, std::int64_t i) { return scale.data<float>()[i % 7]; },
      [&](std::int64_t, std::int64_t i) { return bias.data<float>()[i]; });
  EXPECT_TRUE(tensors_near(out[0], expected, kTolerance, kTolerance));
  ASSERT_EQ(out[1].shape(), (Shape{3, 1, 1}));
  double mean = 0;
  for (int i = 0; i < 35; ++i) mean += x.data<float>()[i];
  EXPECT_NEAR(out[1].data<float>()[0], mean / 35, 1e-5);

  // Default axis -1 without B.
  const Tensor scale7 = random_tensor(DataType::kFloat32, {7}, 12);
  const auto plain = run_node(NodeBuilder("LayerNormalization").inputs(2).build(), {x, scale7});
  EXPECT_TRUE(
      tensors_near(plain[0],
                   reference_normalize(
                       x, 7, 1e-5, [&](std::int64_t, std::int64_t i) { return scale7.data<float>()[i]; },
                       [](std::int64_t, std::int64_t) { return 0.0; }),
                   kTolerance, kTolerance));
  const Status status =
      run_node_status(NodeBuilder("LayerNormalization").inputs(2).build(), {x, float_tensor({2}, {1, 1})});
  EXPECT_NE(status.message().find("broadcast"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
