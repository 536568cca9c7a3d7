#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

TEST(OpIdentity, CopiesAnyDtype) {
  const Tensor in = random_tensor(DataType::kInt32, {3, 5}, 1, -100, 100);
  const auto out = run_node(NodeBuilder("Identity").build(), {in});
  EXPECT_TRUE(tensors_near(out[0], in));
}

TEST(OpDropout, IsIdentityWithAllTrueMask) {
  const Tensor in = random_tensor(DataType::kFloat32, {2, 7, 3}, 2);
  const auto out = run_node(NodeBuilder("Dropout").outputs(2).build(), {in});
  EXPECT_TRUE(tensors_near(out[0], in));
  ASSERT_EQ(out[1].dtype(), DataType::kBool);
  for (std::int64_t i = 0; i < out[1].numel(); ++i) EXPECT_EQ(out[1].data<std::uint8_t>()[i], 1);
}

TEST(OpDropout, RejectsTrainingMode) {
  const Tensor in = random_tensor(DataType::kFloat32, {4}, 3);
  const Tensor ratio = float_tensor({}, {0.5f});
  Tensor training = Tensor::allocate(DataType::kBool, {});
  training.data<std::uint8_t>()[0] = 1;
  const Status status = run_node_status(NodeBuilder("Dropout").inputs(3).build(), {in, ratio, training});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("training_mode"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
