// Non-finite values on the GPU: a grid-stride loop over 16-byte vectors of the tensor (4 float32 or
// 8 float16 values) where it starts aligned, over single values for the rest (the last few, or a view
// that starts unaligned); each warp adds its sum to the counter once.
#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "post/non_finite.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 132 * 8;  // keeps an H100/H200's memory busy; the loop does the rest

__device__ __forceinline__ unsigned non_finite_in(std::uint32_t word, bool half) {
  if (!half) return non_finite_float_bits(word) ? 1u : 0u;
  return (non_finite_half_bits(static_cast<std::uint16_t>(word & 0xffffu)) ? 1u : 0u) +
         (non_finite_half_bits(static_cast<std::uint16_t>(word >> 16)) ? 1u : 0u);
}

// Every thread of the block calls it (blocks are whole warps, and no thread leaves early).
__device__ __forceinline__ void add_to(unsigned long long* counter, unsigned found) {
  for (int offset = 16; offset > 0; offset /= 2) found += __shfl_xor_sync(0xffffffffu, found, offset);
  if (threadIdx.x % 32 == 0 && found > 0) atomicAdd(counter, static_cast<unsigned long long>(found));
}

__global__ void count_vectors_kernel(const uint4* data, std::int64_t vectors, bool half,
                                     unsigned long long* counter) {
  unsigned found = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    found += non_finite_in(v.x, half) + non_finite_in(v.y, half) + non_finite_in(v.z, half) +
             non_finite_in(v.w, half);
  }
  add_to(counter, found);
}

__global__ void count_values_kernel(const void* data, std::int64_t count, bool half,
                                    unsigned long long* counter) {
  unsigned found = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    found += half ? (non_finite_half_bits(static_cast<const std::uint16_t*>(data)[i]) ? 1u : 0u)
                  : (non_finite_float_bits(static_cast<const std::uint32_t*>(data)[i]) ? 1u : 0u);
  }
  add_to(counter, found);
}

unsigned blocks_for(std::int64_t items) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

}  // namespace

Status count_non_finite_cuda(cudaStream_t stream, const TensorView& values, unsigned long long* counter) {
  FOVEA_TRY(check_non_finite_input(values));
  FOVEA_TRY(check_memory(values, true, "values"));
  if (counter == nullptr) return make_error(StatusCode::kInvalidArgument, "count_non_finite: no counter");
  const std::int64_t count = values.num_elements();
  const bool half = values.dtype == DataType::kFloat16;
  const std::int64_t value_bytes = half ? 2 : 4;
  const std::int64_t per_vector = static_cast<std::int64_t>(sizeof(uint4)) / value_bytes;
  const bool aligned = reinterpret_cast<std::uintptr_t>(values.data) % sizeof(uint4) == 0;
  const std::int64_t vectors = aligned ? count / per_vector : 0;
  if (vectors > 0) {
    count_vectors_kernel<<<blocks_for(vectors), kThreads, 0, stream>>>(static_cast<const uint4*>(values.data),
                                                                       vectors, half, counter);
    FOVEA_CUDA_TRY_LAUNCH();
  }
  const std::int64_t rest = count - vectors * per_vector;
  if (rest > 0) {
    const auto* first = static_cast<const std::uint8_t*>(values.data) + vectors * per_vector * value_bytes;
    count_values_kernel<<<blocks_for(rest), kThreads, 0, stream>>>(first, rest, half, counter);
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

}  // namespace fovea::post
