#include "core/gpu.h"

#include <cstdlib>
#include <string>

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea {

bool gpu_available() {
#if defined(FOVEA_HAVE_CUDA)
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

int widen_cuda_work_queues() {
  constexpr const char* kVariable = "CUDA_DEVICE_MAX_CONNECTIONS";
  setenv(kVariable, std::to_string(kCudaWorkQueues).c_str(), /*overwrite=*/0);
  const char* value = std::getenv(kVariable);
  return value != nullptr ? std::atoi(value) : kCudaWorkQueues;
}

}  // namespace fovea
