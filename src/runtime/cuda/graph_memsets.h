// Memset nodes of a captured CUDA graph rewritten as kernel nodes.
//
// cuBLASLt's and cuDNN's Hopper kernels (nvjet products, the fused attention) clear a small buffer of
// their own with cudaMemsetAsync before every launch, scratch given or not, and a capture records each
// as a memset node: 60 in ViT-B's graph. Between two kernel nodes a memset node costs about 3.5 us on
// an H200 in a traced run (the hand-over to the memset and back: 1.2 + 0.7 + 1.7 us) where a kernel
// following a kernel starts within 0.3 us. A fill kernel in the memset's place writes the same bytes
// in the same order of the graph at a kernel's cost (1 us): ViT-B's traced batch 4.39 -> 4.22 ms,
// steady throughput +0.7% (ViT-B) to +2.4% (ResNet-50), docs/perf.md.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace fovea::runtime::cuda {

// Replaces every memset node of `graph` (top level; device memory) by a kernel node that writes the
// same value over the same rows, with the same dependencies. Memsets of host memory stay.
Status memsets_as_kernels(cudaGraph_t graph);

}  // namespace fovea::runtime::cuda
