// Classification heads: softmax over each row of logits and the top-k classes.
//
// | input          | dtype            | outputs                                               |
// |----------------|------------------|-------------------------------------------------------|
// | logits [N, C]  | float32, float16 | probabilities [N, C] float32 (optional, dense)        |
// | (strided)      |                  | top_indices [N, k] int32, top_probabilities [N, k] f32 |
//
// softmax(x)_c = exp(x_c - max) / sum_j exp(x_j - max), in float32. A row with a NaN or a +inf logit
// gives NaN probabilities (as torch.softmax). Top-k ranks by logit (softmax is monotonic, and the
// logits' comparison is exact where rounded probabilities may tie): descending, equal logits by
// lower class index, NaN below everything. The CPU and CUDA runs pick the same classes; their
// probabilities agree within kF32Tolerance (exp and the order of the sum differ).
// The CPU run takes host memory, the CUDA run device memory.
#pragma once

#include <cstdint>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"
#include "post/post_math.h"

namespace fovea::post {

struct ClassifyParams {
  int top_k = 5;  // 0: probabilities only
};

// Leave `probabilities` with no data to skip it; with top_k 0, leave the top-k outputs empty.
struct ClassifyOutputs {
  TensorView probabilities;      // [N, C] float32, dense
  TensorView top_indices;        // [N, k] int32, dense
  TensorView top_probabilities;  // [N, k] float32, dense
};

struct ClassifyPlan {
  int batch = 0;
  int classes = 0;
};

Result<ClassifyPlan> plan_classify(const TensorView& logits, const ClassifyParams& params,
                                   const ClassifyOutputs& outputs);
Status run_classify_cpu(const TensorView& logits, const ClassifyParams& params,
                        const ClassifyOutputs& outputs);
Status run_classify_cuda(cudaStream_t stream, const TensorView& logits, const ClassifyParams& params,
                         const ClassifyOutputs& outputs);

// Top-k's ranking as one integer per class: larger keys rank first (logit order, NaN lowest, then
// lower index). Keys are unique per row, so "the largest key below the previous one" walks the
// ranking without sorting.
FOVEA_HD std::uint64_t logit_rank_key(float logit, std::uint32_t index) {
  const std::uint32_t order = is_nan(logit) ? 0u : float_order_bits(logit);
  return static_cast<std::uint64_t>(order) << 32 | (0xffffffffu - index);
}
FOVEA_HD std::uint32_t logit_rank_index(std::uint64_t key) {
  return 0xffffffffu - static_cast<std::uint32_t>(key & 0xffffffffu);
}

}  // namespace fovea::post
