// Timing at plan time: a node's prepare() that chooses between ways to run it (cuDNN's convolution
// algorithms against fovea's kernels, cuDNN's fused matrix products against cuBLASLt) runs each as
// the plan will and keeps the fastest.
#pragma once

#include <algorithm>

#include "core/cuda_raii.h"
#include "core/status.h"
#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {

// The shortest of three replays of `work` captured as a CUDA graph, on the node's stream (`work`
// has run once eagerly: warm). A graph, as the plan runs it: timed eagerly, cuDNN's host-side work
// per call (tens of microseconds) lies between the events and swamps small problems; at batch 1 it
// made every ResNet-50 convolution look 30-90 us long and ranked cuDNN's legacy kernels first.
template <typename Work>
Result<float> shortest_run_ms(CudaKernelContext& ctx, Work&& work) {
  FOVEA_ASSIGN_OR_RETURN(CudaGraph graph, CudaGraph::capture(ctx.stream(), work));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent begin, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(true));
  FOVEA_TRY(graph.launch(ctx.stream()));
  float shortest = 0.0f;
  for (int run = 0; run < 3; ++run) {
    FOVEA_TRY(begin.record(ctx.stream()));
    FOVEA_TRY(graph.launch(ctx.stream()));
    FOVEA_TRY(end.record(ctx.stream()));
    FOVEA_TRY(end.synchronize());
    FOVEA_ASSIGN_OR_RETURN(const float ms, end.elapsed_ms_since(begin));
    shortest = run == 0 ? ms : std::min(shortest, ms);
  }
  return shortest;
}

}  // namespace fovea::runtime::cuda
