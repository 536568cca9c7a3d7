// Whether a GPU can be used: this build has CUDA and the driver sees at least one device. What
// every "auto" device choice (flows, decoders, tests that skip) asks, so they all agree.
#pragma once

namespace fovea {

bool gpu_available();

// How many hardware work queues the CUDA driver gives this process (CUDA_DEVICE_MAX_CONNECTIONS:
// 8 by default, 32 at most). Streams past that count share queues, and work on one then waits behind
// unrelated work queued on another: a false dependency. A flow has more streams than 8 (a decode
// thread's each, the inference stages', nvJPEG's own twelve), so its decoders' short copies and
// conversions queued behind the model's kernels: the image flow's nvJPEG threads lost 15% of their
// rate that way beside a detector (docs/perf.md, "Hardware work queues"). The process asks for 32 unless
// the environment already says; it must run before the first CUDA call to count. The count in effect.
int widen_cuda_work_queues();
inline constexpr int kCudaWorkQueues = 32;

}  // namespace fovea
