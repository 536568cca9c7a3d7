// The reduction kernels of reduce.cu, for the ops built on them (GlobalAveragePool and GlobalMaxPool
// are a Mean and a Max over each plane).
#pragma once

#include <cuda_runtime.h>

#include "core/status.h"
#include "runtime/ops/reduce_util.h"
#include "runtime/tensor.h"

namespace fovea::runtime::cuda {

// y = the reduction of device tensor x over `geometry` (reduce_geometry of x's shape), in x's dtype,
// enqueued on `stream`. An error for a dtype the reduction does not support.
Status launch_reduction(ops::Reduction reduction, const ops::ReduceGeometry& geometry, const Tensor& x,
                        Tensor& y, cudaStream_t stream);

}  // namespace fovea::runtime::cuda
