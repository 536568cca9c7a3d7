// TopK on CUDA against the CPU reference: largest and smallest, the last axis and an inner one,
// K from 1 to the whole axis, ties (integers with few values), opset 9's attribute K, float32/16 and
// the other dtypes; and the axis-length limit of the shared-memory sort.
#include <string>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

struct TopKCase {
  Shape shape;
  int axis;
  std::int64_t k;
};

const TopKCase kCases[] = {
    {{3, 37}, -1, 5},    {{1, 1000}, 1, 10},  {{2, 50, 3}, 1, 50},
    {{4, 13, 17}, 0, 1}, {{2, 8732}, 1, 200}, {{5, 1}, 1, 1},
};

Node topk_node(int axis, int largest) {
  return NodeBuilder("TopK").inputs(2).outputs(2).attr("axis", axis).attr("largest", largest).build();
}

TEST(CudaTopK, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const TopKCase& c : kCases) {
    for (int largest : {0, 1}) {
      const Node node = topk_node(c.axis, largest);
      const Tensor k = int64_tensor({1}, {c.k});
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, c.shape, seed++), k},
                                     {.precision = p, .constant_inputs = {1}}))
            << shape_string(c.shape) << " k " << c.k << " largest " << largest;
      }
      // Few distinct values: ties, which go to the lower index.
      for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8, DataType::kUInt8}) {
        EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(dtype, c.shape, seed++, 0, 5), k},
                                     {.constant_inputs = {1}}))
            << data_type_name(dtype) << " " << shape_string(c.shape);
      }
      EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat64, c.shape, seed++), k},
                                   {.constant_inputs = {1}}));
    }
  }
}

TEST(CudaTopK, AttributeKBeforeOpset10) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("TopK", 9).outputs(2).attr("k", 4).build();
  EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, {3, 11}, 7)}));
}

TEST(CudaTopK, RejectsAxesLongerThanTheSharedMemorySort) {
  FOVEA_REQUIRE_GPU();
  const Status status = run_cuda_node_status(
      topk_node(-1, 1), {random_tensor(DataType::kFloat32, {2, 20000}, 8), int64_tensor({1}, {3})}, {1});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported) << status.to_string();
  EXPECT_NE(status.to_string().find("16384"), std::string::npos) << status.to_string();
}

}  // namespace
}  // namespace fovea::runtime::testing
