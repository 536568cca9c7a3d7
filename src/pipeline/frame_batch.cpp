#include "pipeline/frame_batch.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {

Status FrameBatch::resolve() {
#if defined(FOVEA_HAVE_CUDA)
  if (void* ready = slot->events.ready.get(); ready != nullptr) {
    FOVEA_CUDA_TRY(cudaEventSynchronize(static_cast<cudaEvent_t>(ready)));
  }
#endif
  // Steps may queue no further steps; take them first so a failing one is not run twice.
  std::vector<std::function<Status(FrameBatch&)>> steps = std::move(after_gpu);
  after_gpu.clear();
  for (auto& step : steps) FOVEA_TRY(step(*this));
  return Status::ok();
}

}  // namespace fovea::pipeline
