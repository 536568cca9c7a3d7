// A test kernel that records which SMs a stream's work ran on.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace fovea::testing {

// Launches `blocks` blocks on `stream`; each sets used[its SM id] = 1 (`used` holds one int per SM
// id the device may report, zeroed by the caller).
Status launch_mark_sms(cudaStream_t stream, int* used, int blocks);

}  // namespace fovea::testing
