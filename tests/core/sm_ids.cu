#include <cstdint>

#include "core/cuda_check.h"
#include "core/sm_ids.h"

namespace fovea::testing {
namespace {

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Each block marks the SM it ran on, then holds it a while so that the blocks spread over every SM
// the stream may use instead of a few SMs taking them all in turn.
__global__ void mark_sm_kernel(int* used, std::uint64_t hold_ns) {
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0) used[sm] = 1;
  const std::uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < hold_ns) {
  }
}

}  // namespace

Status launch_mark_sms(cudaStream_t stream, int* used, int blocks) {
  mark_sm_kernel<<<blocks, 32, 0, stream>>>(used, 200'000);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace fovea::testing
