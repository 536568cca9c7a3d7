// Softmax and top-k in plain loops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "post/classify.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

template <typename T>
std::vector<float> load_row(const TensorView& logits, std::int64_t n, int classes) {
  std::vector<float> row(static_cast<std::size_t>(classes));
  for (int c = 0; c < classes; ++c) {
    row[static_cast<std::size_t>(c)] =
        load_float(static_cast<const T*>(logits.data) + n * logits.strides[0] + c * logits.strides[1]);
  }
  return row;
}

bool has_data(const TensorView& t) {
  return t.data != nullptr;
}

}  // namespace

Result<ClassifyPlan> plan_classify(const TensorView& logits, const ClassifyParams& params,
                                   const ClassifyOutputs& outputs) {
  FOVEA_TRY(check_tensor(logits, 2, {DataType::kFloat32, DataType::kFloat16}, "logits"));
  const std::int64_t batch = logits.shape[0], classes = logits.shape[1];
  if (classes > INT32_MAX || batch > INT32_MAX) {
    return make_error(StatusCode::kInvalidArgument, "classify: logits too large");
  }
  if (params.top_k < 0 || params.top_k > classes) {
    return make_error(StatusCode::kInvalidArgument, "classify: top_k ", std::to_string(params.top_k),
                      " is not within 0..", std::to_string(classes), " classes");
  }
  if (has_data(outputs.probabilities)) {
    FOVEA_TRY(
        check_dense_output(outputs.probabilities, {batch, classes}, DataType::kFloat32, "probabilities"));
  }
  if (params.top_k > 0) {
    FOVEA_TRY(
        check_dense_output(outputs.top_indices, {batch, params.top_k}, DataType::kInt32, "top_indices"));
    FOVEA_TRY(check_dense_output(outputs.top_probabilities, {batch, params.top_k}, DataType::kFloat32,
                                 "top_probabilities"));
  }
  return ClassifyPlan{static_cast<int>(batch), static_cast<int>(classes)};
}

Status run_classify_cpu(const TensorView& logits, const ClassifyParams& params,
                        const ClassifyOutputs& outputs) {
  FOVEA_ASSIGN_OR_RETURN(const ClassifyPlan plan, plan_classify(logits, params, outputs));
  FOVEA_TRY(check_memory(logits, false, "logits"));
  for (std::int64_t n = 0; n < plan.batch; ++n) {
    const std::vector<float> row = dispatch_float_dtype(
        logits.dtype, [&](auto tag) { return load_row<decltype(tag)>(logits, n, plan.classes); });
    float max_logit = -INFINITY;
    for (float x : row) max_logit = fmaxf(max_logit, x);
    float sum = 0.0f;
    for (float x : row) sum += expf(x - max_logit);
    auto probability = [&](int c) { return expf(row[static_cast<std::size_t>(c)] - max_logit) / sum; };
    if (has_data(outputs.probabilities)) {
      for (int c = 0; c < plan.classes; ++c) {
        static_cast<float*>(outputs.probabilities.data)[n * plan.classes + c] = probability(c);
      }
    }
    std::vector<std::uint64_t> keys(row.size());
    for (int c = 0; c < plan.classes; ++c) {
      keys[static_cast<std::size_t>(c)] =
          logit_rank_key(row[static_cast<std::size_t>(c)], static_cast<std::uint32_t>(c));
    }
    std::sort(keys.begin(), keys.end(), [](std::uint64_t a, std::uint64_t b) { return a > b; });
    for (int i = 0; i < params.top_k; ++i) {
      const auto c = static_cast<int>(logit_rank_index(keys[static_cast<std::size_t>(i)]));
      static_cast<std::int32_t*>(outputs.top_indices.data)[n * params.top_k + i] = c;
      static_cast<float*>(outputs.top_probabilities.data)[n * params.top_k + i] = probability(c);
    }
  }
  return Status::ok();
}

}  // namespace fovea::post
