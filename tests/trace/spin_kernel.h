// A kernel of known duration for the profiler's GPU tests.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"

namespace fovea::trace::testing {

// One thread that spins on the GPU's global timer for `ns` nanoseconds.
Status launch_spin(cudaStream_t stream, std::int64_t ns);

}  // namespace fovea::trace::testing
