#include "core/cuda_check.h"
#include "trace/spin_kernel.h"

namespace fovea::trace::testing {
namespace {

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < ns) {
  }
}

}  // namespace

Status launch_spin(cudaStream_t stream, std::int64_t ns) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<std::uint64_t>(ns));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace fovea::trace::testing
