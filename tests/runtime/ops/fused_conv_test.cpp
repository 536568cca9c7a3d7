#include <cmath>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

// The fused kernel sums in another order than Conv followed by Add: 1e-4 as for convolutions.
constexpr double kTolerance = 1e-4;

NodeBuilder fused_node(const char* activation) {
  NodeBuilder node("FusedConv");
  node.domain("fovea").inputs(4).attr("activation", activation);
  node.attr("pads", std::vector<std::int64_t>{1, 0, 2, 1}).attr("strides", std::vector<std::int64_t>{2, 1});
  return node;
}

// Conv, then Add of the residual: the unfused graph the fusion pass replaces.
Tensor conv_plus_residual(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& z) {
  Node conv = fused_node("").build();
  conv.domain.clear();
  conv.op_type = "Conv";
  conv.attributes.erase("activation");
  conv.inputs.resize(3);
  const Tensor y = run_node(conv, {x, w, b})[0];
  return run_node(NodeBuilder("Add").inputs(2).build(), {y, z})[0];
}

struct Inputs {
  Tensor x = random_tensor(DataType::kFloat32, {2, 6, 11, 9}, 1);
  Tensor w = random_tensor(DataType::kFloat32, {4, 6, 3, 3}, 2);
  Tensor b = random_tensor(DataType::kFloat32, {4}, 3);
  Tensor z = random_tensor(DataType::kFloat32, {2, 4, 6, 8}, 4);
};

TEST(Opfovea_FusedConv, EqualsConvAddRelu) {
  const Inputs in;
  const Tensor sum = conv_plus_residual(in.x, in.w, in.b, in.z);
  const Tensor expected = run_node(NodeBuilder("Relu").build(), {sum})[0];
  const auto out = run_node(fused_node("Relu").build(), {in.x, in.w, in.b, in.z});
  EXPECT_TRUE(tensors_near(out[0], expected, kTolerance, kTolerance));
}

TEST(Opfovea_FusedConv, OtherActivationsAndOptionalInputs) {
  const Inputs in;
  const Tensor sum = conv_plus_residual(in.x, in.w, in.b, in.z);
  const auto check = [&](const Node& node, float (*f)(float)) {
    Tensor expected = sum.clone();
    for (std::int64_t i = 0; i < expected.numel(); ++i)
      expected.data<float>()[i] = f(expected.data<float>()[i]);
    EXPECT_TRUE(tensors_near(run_node(node, {in.x, in.w, in.b, in.z})[0], expected, kTolerance, kTolerance))
        << node.attributes.at("activation").s;
  };
  check(fused_node("").build(), [](float v) { return v; });
  check(fused_node("LeakyRelu").attr("activation_alpha", 0.2f).build(),
        [](float v) { return v < 0 ? 0.2f * v : v; });
  check(fused_node("Clip").attr("activation_min", -0.5f).attr("activation_max", 0.7f).build(),
        [](float v) { return std::fmin(std::fmax(v, -0.5f), 0.7f); });
  check(fused_node("Sigmoid").build(), [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
  check(fused_node("HardSwish").build(),
        [](float v) { return v * std::fmin(std::fmax(v / 6.0f + 0.5f, 0.0f), 1.0f); });
  check(fused_node("Silu").build(), [](float v) { return v / (1.0f + std::exp(-v)); });

  // Without bias and residual it is Conv then the activation.
  const Tensor zero_b = Tensor::allocate(DataType::kFloat32, {4});
  const Tensor zero_z = Tensor::allocate(DataType::kFloat32, {2, 4, 6, 8});
  const Tensor conv_only = conv_plus_residual(in.x, in.w, zero_b, zero_z);
  const Tensor expected = run_node(NodeBuilder("Relu").build(), {conv_only})[0];
  const auto out =
      run_node(fused_node("Relu").omit_input(2).omit_input(3).build(), {in.x, in.w, Tensor(), Tensor()});
  EXPECT_TRUE(tensors_near(out[0], expected, kTolerance, kTolerance));
}

TEST(Opfovea_FusedConv, RejectsBadActivationAndResidualShape) {
  const Inputs in;
  Status status = run_node_status(fused_node("Gelu").build(), {in.x, in.w, in.b, in.z});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("activation 'Gelu'"), std::string::npos) << status.message();

  const Tensor bad_z = random_tensor(DataType::kFloat32, {2, 4, 6, 7}, 5);
  status = run_node_status(fused_node("Relu").build(), {in.x, in.w, in.b, bad_z});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("residual"), std::string::npos) << status.message();

  status = run_node_status(fused_node("Clip").build(), {in.x, in.w, in.b, in.z});
  EXPECT_NE(status.message().find("activation_min"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
