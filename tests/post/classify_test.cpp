// Softmax and top-k: values, tie order, NaN handling, float16, strided rows and bad arguments.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "image/tolerances.h"
#include "post/classify.h"
#include "runtime/tensor.h"

namespace fovea::post {
namespace {

using image::testing::kF32Tolerance;

struct ClassifyResult {
  std::vector<float> probabilities;
  std::vector<std::int32_t> indices;
  std::vector<float> top_probabilities;
};

ClassifyResult classify(const TensorView& logits, int top_k) {
  const auto batch = logits.shape[0], classes = logits.shape[1];
  ClassifyResult r{std::vector<float>(static_cast<std::size_t>(batch * classes)),
                   std::vector<std::int32_t>(static_cast<std::size_t>(batch * top_k)),
                   std::vector<float>(static_cast<std::size_t>(batch * top_k))};
  const ClassifyOutputs outputs{
      contiguous_tensor(r.probabilities.data(), DataType::kFloat32, MemoryKind::kHost, {batch, classes}),
      contiguous_tensor(r.indices.data(), DataType::kInt32, MemoryKind::kHost, {batch, top_k}),
      contiguous_tensor(r.top_probabilities.data(), DataType::kFloat32, MemoryKind::kHost, {batch, top_k})};
  const Status status = run_classify_cpu(logits, ClassifyParams{top_k}, outputs);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return r;
}

TEST(Classify, SoftmaxAndTopKWithTiesByLowerIndex) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  const ClassifyResult r =
      classify(contiguous_tensor(logits.data(), DataType::kFloat32, MemoryKind::kHost, {1, 4}), 3);
  const float sum = std::exp(-2.0f) + 1.0f + std::exp(-1.0f) + 1.0f;
  EXPECT_NEAR(r.probabilities[0], std::exp(-2.0f) / sum, kF32Tolerance);
  EXPECT_NEAR(r.probabilities[1], 1.0f / sum, kF32Tolerance);
  EXPECT_EQ(r.indices, (std::vector<std::int32_t>{1, 3, 2}));
  EXPECT_NEAR(r.top_probabilities[2], std::exp(-1.0f) / sum, kF32Tolerance);
}

TEST(Classify, NanRanksLastAndPoisonsTheRow) {
  std::vector<float> logits = {std::nanf(""), -5.0f, 0.0f};
  const ClassifyResult r =
      classify(contiguous_tensor(logits.data(), DataType::kFloat32, MemoryKind::kHost, {1, 3}), 3);
  EXPECT_EQ(r.indices, (std::vector<std::int32_t>{2, 1, 0}));
  EXPECT_TRUE(std::isnan(r.probabilities[1]));
}

TEST(Classify, Float16StridedBatch) {
  // Two rows of 2 classes stored with a row stride of 3 (a padded buffer).
  std::vector<runtime::Half> raw = {runtime::float_to_half(0.0f), runtime::float_to_half(1.0f), {},
                                    runtime::float_to_half(2.0f), runtime::float_to_half(0.0f), {}};
  TensorView logits = contiguous_tensor(raw.data(), DataType::kFloat16, MemoryKind::kHost, {2, 2});
  logits.strides = {3, 1};
  const ClassifyResult r = classify(logits, 1);
  EXPECT_EQ(r.indices, (std::vector<std::int32_t>{1, 0}));
  EXPECT_NEAR(r.top_probabilities[0], 1.0f / (1.0f + std::exp(-1.0f)), kF32Tolerance);
  EXPECT_NEAR(r.probabilities[2], 1.0f / (1.0f + std::exp(-2.0f)), kF32Tolerance);
}

TEST(Classify, BadTopKIsRejected) {
  std::vector<float> logits(4);
  std::vector<std::int32_t> indices(5);
  std::vector<float> probs(5);
  const ClassifyOutputs outputs{
      {},
      contiguous_tensor(indices.data(), DataType::kInt32, MemoryKind::kHost, {1, 5}),
      contiguous_tensor(probs.data(), DataType::kFloat32, MemoryKind::kHost, {1, 5})};
  EXPECT_EQ(run_classify_cpu(contiguous_tensor(logits.data(), DataType::kFloat32, MemoryKind::kHost, {1, 4}),
                             ClassifyParams{5}, outputs)
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea::post
