// Softmax and LogSoftmax on CUDA against the CPU reference: rows by warp and by block (1000
// classes), columns (21 classes over H*W), the opset < 13 coercion to 2-D, negative axes, batch 1 and
// N, float32/16/64.
#include <string>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

struct SoftmaxCase {
  int opset;
  Shape shape;
  int axis;
};

const SoftmaxCase kCases[] = {
    {13, {5, 37}, -1},         // a warp per row
    {13, {4, 1000}, 1},        // classification: a block per row
    {13, {1, 1000}, -1},       // batch 1
    {13, {2, 21, 13, 17}, 1},  // segmentation: a thread per column along H*W
    {13, {1, 21, 9, 7}, -3},   // batch 1, negative axis
    {13, {3, 5, 7}, 0},        // columns over the outermost axis
    {11, {2, 3, 5, 7}, 1},     // opset < 13: rows of 3*5*7
    {11, {3, 13, 127}, -1},    // opset < 13 at the last axis
    {11, {2, 3, 40, 40}, 1},   // opset < 13: rows of 4800, a block per row
};

void expect_softmax(const std::string& op) {
  std::uint32_t seed = 1;
  for (const SoftmaxCase& c : kCases) {
    const Node node = NodeBuilder(op, c.opset).attr("axis", c.axis).build();
    // A wide range, so that exp would overflow without the maximum subtracted.
    const Tensor x = random_tensor(DataType::kFloat32, c.shape, seed++, -40, 40);
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(node, {x}, {.precision = p, .accuracy = Accuracy::kAccumulating}))
          << shape_string(c.shape) << " opset " << c.opset;
    }
    EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat64, c.shape, seed++, -40, 40)},
                                 {.accuracy = Accuracy::kAccumulating}));
  }
  // The default axis: -1 from opset 13, 1 before.
  for (int opset : {11, 13}) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder(op, opset).build(),
                                 {random_tensor(DataType::kFloat32, {2, 3, 5}, 50)},
                                 {.accuracy = Accuracy::kAccumulating}));
  }
}

TEST(CudaSoftmax, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_softmax("Softmax");
}

TEST(CudaLogSoftmax, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_softmax("LogSoftmax");
}

}  // namespace
}  // namespace fovea::runtime::testing
