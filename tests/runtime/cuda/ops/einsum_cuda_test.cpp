// Einsum on CUDA (cuda/ops/einsum.cu) against the CPU reference: the forms exported models use on
// random odd-sized inputs, in float32 and float16 plans and on integers.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

struct EinsumCase {
  const char* equation;
  std::vector<Shape> inputs;
};

const EinsumCase kCases[] = {
    {"bij,bjk->bik", {{3, 5, 7}, {3, 7, 9}}},           // batched matmul
    {"bhqd,bhkd->bhqk", {{2, 3, 5, 7}, {2, 3, 9, 7}}},  // attention scores
    {"ij->ji", {{13, 17}}},                             // transpose
    {"ijk->ik", {{5, 7, 9}}},                           // a reduction
    {"ij->", {{13, 17}}},                               // the sum
    {"...ii->...i", {{3, 5, 7, 7}}},                    // batched diagonal
    {"i,i", {{131}, {131}}},                            // inner product
    {"ij,jk", {{5, 7}, {7, 3}}},                        // implicit output
    {"...j,...j->...", {{3, 5, 7}, {5, 7}}},            // broadcast ellipses of different ranks
    {"i,j,k->ijk", {{3}, {5}, {7}}},                    // three operands, an outer product
};

TEST(CudaEinsum, MatchesCpuOnEveryForm) {
  FOVEA_REQUIRE_GPU();
  for (const EinsumCase& c : kCases) {
    const Node node = NodeBuilder("Einsum", 12)
                          .inputs(static_cast<int>(c.inputs.size()))
                          .attr("equation", std::string(c.equation))
                          .build();
    for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kInt32}) {
      std::vector<Tensor> inputs;
      for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        inputs.push_back(random_tensor(dtype, c.inputs[i], static_cast<std::uint32_t>(i + 1), -5, 5));
      }
      if (dtype != DataType::kFloat32) {
        EXPECT_TRUE(cuda_matches_cpu(node, inputs)) << c.equation << ", " << data_type_name(dtype);
        continue;
      }
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(cuda_matches_cpu(node, inputs, accumulating(p)))
            << c.equation << ", " << precision_name(p);
      }
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
