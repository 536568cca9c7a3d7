#include "core/gpu.h"

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

}  // namespace fovea
