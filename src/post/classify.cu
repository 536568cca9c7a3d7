// Softmax and top-k on the GPU: one block per row (rows are a few thousand classes at most, so a
// block's reductions cover them in a few strided passes).
#include <cstdint>

#include <cub/block/block_reduce.cuh>

#include "core/cuda_check.h"
#include "post/classify.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

constexpr int kThreads = 256;

struct FloatMax {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct KeyMax {
  __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a > b ? a : b; }
};

template <typename T>
__global__ void classify_kernel(const T* logits, std::int64_t row_stride, std::int64_t class_stride,
                                int classes, int top_k, float* probabilities, std::int32_t* top_indices,
                                float* top_probabilities) {
  using FloatReduce = cub::BlockReduce<float, kThreads>;
  using KeyReduce = cub::BlockReduce<std::uint64_t, kThreads>;
  __shared__ union {
    typename FloatReduce::TempStorage floats;
    typename KeyReduce::TempStorage keys;
  } temp;
  __shared__ float row_max, row_sum;
  __shared__ std::uint64_t previous;
  const int n = blockIdx.x;
  const T* row = logits + n * row_stride;
  auto logit = [&](int c) { return load_float(row + c * class_stride); };

  float local_max = -INFINITY;
  for (int c = threadIdx.x; c < classes; c += kThreads) local_max = fmaxf(local_max, logit(c));
  const float block_max = FloatReduce(temp.floats).Reduce(local_max, FloatMax{});
  if (threadIdx.x == 0) row_max = block_max;
  __syncthreads();
  float local_sum = 0.0f;
  for (int c = threadIdx.x; c < classes; c += kThreads) local_sum += expf(logit(c) - row_max);
  const float block_sum = FloatReduce(temp.floats).Sum(local_sum);
  if (threadIdx.x == 0) row_sum = block_sum;
  __syncthreads();
  if (probabilities != nullptr) {
    for (int c = threadIdx.x; c < classes; c += kThreads) {
      probabilities[static_cast<std::int64_t>(n) * classes + c] = expf(logit(c) - row_max) / row_sum;
    }
  }
  if (threadIdx.x == 0) previous = UINT64_MAX;
  for (int i = 0; i < top_k; ++i) {
    __syncthreads();
    const std::uint64_t bound = previous;
    std::uint64_t best = 0;
    for (int c = threadIdx.x; c < classes; c += kThreads) {
      const std::uint64_t key = logit_rank_key(logit(c), static_cast<std::uint32_t>(c));
      if (key < bound && key > best) best = key;
    }
    const std::uint64_t block_best = KeyReduce(temp.keys).Reduce(best, KeyMax{});
    if (threadIdx.x == 0) {
      const auto c = static_cast<int>(logit_rank_index(block_best));
      top_indices[static_cast<std::int64_t>(n) * top_k + i] = c;
      top_probabilities[static_cast<std::int64_t>(n) * top_k + i] = expf(logit(c) - row_max) / row_sum;
      previous = block_best;
    }
  }
}

}  // namespace

Status run_classify_cuda(cudaStream_t stream, const TensorView& logits, const ClassifyParams& params,
                         const ClassifyOutputs& outputs) {
  FOVEA_ASSIGN_OR_RETURN(const ClassifyPlan plan, plan_classify(logits, params, outputs));
  FOVEA_TRY(check_memory(logits, true, "logits"));
  dispatch_float_dtype(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    classify_kernel<T><<<plan.batch, kThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), logits.strides[0], logits.strides[1], plan.classes, params.top_k,
        static_cast<float*>(outputs.probabilities.data), static_cast<std::int32_t*>(outputs.top_indices.data),
        static_cast<float*>(outputs.top_probabilities.data));
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace fovea::post
