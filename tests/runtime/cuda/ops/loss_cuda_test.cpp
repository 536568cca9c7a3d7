// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on CUDA (cuda/ops/loss.cu) against the CPU
// reference: [N, C] and [N, C, d1..dk] scores of odd sizes, batch 1 and N, every reduction, with and
// without weights, ignore_index (a class, and -1 among the targets), int64 and int32 targets,
// SoftmaxCrossEntropyLoss's log_prob output, float32 and float16 plans.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

const Shape kScoreShapes[] = {{13, 127}, {1, 7, 9}, {5, 3, 13, 17}, {2, 4, 3, 5, 2}};

struct LossCase {
  const char* reduction;
  bool weighted;
  bool ignores;  // ignore_index -1, which some targets hold
};
const LossCase kLossCases[] = {
    {"none", false, false}, {"sum", false, false}, {"mean", false, false}, {"none", true, true},
    {"sum", true, false},   {"mean", true, true},  {"mean", false, true},
};

Node loss_node(const std::string& op_type, const LossCase& c, int outputs) {
  NodeBuilder builder(op_type, 13);
  builder.inputs(c.weighted ? 3 : 2).outputs(outputs).attr("reduction", c.reduction);
  if (c.ignores) builder.attr("ignore_index", -1);
  return builder.build();
}

// Scores, targets in [0, C) (or [-1, C) when -1 is ignored) and positive weights.
std::vector<Tensor> loss_inputs(const Shape& scores, const LossCase& c, DataType target_type,
                                std::uint32_t seed) {
  Shape targets = scores;
  targets.erase(targets.begin() + 1);
  const auto classes = static_cast<double>(scores[1]);
  std::vector<Tensor> inputs{random_tensor(kF32, scores, seed, -4, 4),
                             random_tensor(target_type, targets, seed + 1, c.ignores ? -1 : 0, classes)};
  if (c.weighted) inputs.push_back(random_tensor(kF32, {scores[1]}, seed + 2, 0.5, 2));
  return inputs;
}

void expect_loss_matches(const std::string& op_type, int outputs) {
  std::uint32_t seed = 1;
  for (const Shape& scores : kScoreShapes) {
    for (const LossCase& c : kLossCases) {
      for (DataType target_type : {DataType::kInt64, DataType::kInt32}) {
        const std::vector<Tensor> inputs = loss_inputs(scores, c, target_type, seed);
        seed += 3;
        for (Precision p : kPrecisions) {
          EXPECT_TRUE(cuda_matches_cpu(loss_node(op_type, c, outputs), inputs, accumulating(p)))
              << op_type << " " << shape_string(scores) << " " << c.reduction
              << (c.weighted ? " weighted" : "") << (c.ignores ? " ignoring" : "") << " "
              << data_type_name(target_type) << " " << precision_name(p);
        }
      }
    }
  }
}

TEST(CudaNegativeLogLikelihoodLoss, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_loss_matches("NegativeLogLikelihoodLoss", 1);
}

TEST(CudaSoftmaxCrossEntropyLoss, MatchesCpuWithAndWithoutLogProb) {
  FOVEA_REQUIRE_GPU();
  expect_loss_matches("SoftmaxCrossEntropyLoss", 1);
  expect_loss_matches("SoftmaxCrossEntropyLoss", 2);
}

TEST(CudaSoftmaxCrossEntropyLoss, ManyTargetsReduceAcrossBlocks) {
  FOVEA_REQUIRE_GPU();
  // 4 * 300 * 301 targets: hundreds of blocks' partials folded by the finishing block.
  const LossCase c{"mean", true, true};
  const std::vector<Tensor> inputs = loss_inputs({4, 5, 300, 301}, c, DataType::kInt64, 7);
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(loss_node("SoftmaxCrossEntropyLoss", c, 2), inputs, accumulating(p)))
        << precision_name(p);
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
