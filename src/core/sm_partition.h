// The SMs fovea's compute streams run on. By default a stream may use every SM. A flow whose inference
// shares the GPU with kernels on streams fovea does not own (nvJPEG's hardware decoder converts each
// picture with a kernel on nvJPEG's own streams, at the device's default priority) can keep a few SMs
// free of its compute: with every SM busy with a batch of the model, those kernels otherwise wait
// behind it (docs/perf.md, "The photo flow's decode calls"). The partition is a CUDA green context
// holding the other SMs; compute streams (CudaStream::Placement::kComputeSms) are created in it, and
// so are the CUDA graphs captured on them. Only with FOVEA_HAVE_CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace fovea {

struct SmPartition {
  int device_sms = 0;   // the device's SMs
  int compute_sms = 0;  // the SMs compute streams may use (the device's when nothing is reserved)
};

// Keeps at least `reserved` SMs of `device` out of the compute streams created from now on (the
// driver rounds the compute share down to its partition granularity, so more may stay free; the
// result says how many the compute streams have). Process-wide and set once: a second call must
// ask for the same. 0 reserves nothing. Fails on a driver without green contexts (CUDA 12.5) or when
// `reserved` leaves no SMs to compute on.
Result<SmPartition> reserve_sms(int device, int reserved);

// The partition compute streams use now (every SM when reserve_sms was not called).
SmPartition current_sm_partition(int device);

// A non-blocking stream of the compute partition at `priority`, or null when no SMs are reserved
// (the caller then creates an ordinary stream).
Result<cudaStream_t> create_compute_partition_stream(int priority);

}  // namespace fovea
