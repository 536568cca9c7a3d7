// The view ops on CUDA: run() (the copy used when the output needs its own buffer) against the CPU.
#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

TEST(CudaIdentity, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Identity").build(),
                                 {random_tensor(DataType::kFloat32, {3, 5, 7}, 1)}, {.precision = p}));
  }
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Identity").build(), {int64_tensor({3}, {1, -2, 3})}));
}

TEST(CudaDropout, CopiesAndKeepsEveryElement) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Dropout").outputs(2).build(),
                                 {random_tensor(DataType::kFloat32, {2, 9}, 2)}, {.precision = p}));
  }
}

TEST(CudaReshape, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(
        cuda_matches_cpu(NodeBuilder("Reshape").inputs(2).build(),
                         {random_tensor(DataType::kFloat32, {5, 3, 7}, 3), int64_tensor({2}, {-1, 7})},
                         {.precision = p, .constant_inputs = {1}}));
  }
}

TEST(CudaFlatten, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Flatten").attr("axis", 2).build(),
                                 {random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 4)}, {.precision = p}));
  }
}

TEST(CudaSqueeze, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Squeeze").inputs(2).build(),
                                 {random_tensor(DataType::kFloat32, {1, 3, 1, 7}, 5), int64_tensor({1}, {2})},
                                 {.precision = p, .constant_inputs = {1}}));
  }
}

TEST(CudaUnsqueeze, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Unsqueeze").inputs(2).build(),
                                 {random_tensor(DataType::kFloat32, {3, 7}, 6), int64_tensor({2}, {0, -1})},
                                 {.precision = p, .constant_inputs = {1}}));
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
