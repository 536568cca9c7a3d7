// MeanVarianceNormalization, shared by the CPU reference (mvn.cpp) and the CUDA kernel
// (cuda/ops/mvn.cu): Y = (X - mean) / (sqrt(variance) + 1e-9), the mean and the (biased) variance
// taken over the `axes` attribute (default [0, 2, 3]), as ONNX's function body defines it. The
// elements split into groups (one per combination of the kept dims) of members (the reduced
// dims); mvn_offset maps (group, member) to the element's offset, axes being any subset.
//
// The variance is the mean of (x - mean)^2 (two passes), which the function body's
// E[X^2] - E[X]^2 equals without its cancellation.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

// Added to the standard deviation, as the function body does (its Epsilon constant).
inline constexpr double kMvnEpsilon = 1e-9;

struct MvnPlan {
  int kept_rank = 0;
  int reduced_rank = 0;
  std::int64_t kept_dims[kMaxTensorRank] = {};
  std::int64_t kept_strides[kMaxTensorRank] = {};
  std::int64_t reduced_dims[kMaxTensorRank] = {};
  std::int64_t reduced_strides[kMaxTensorRank] = {};
  std::int64_t groups = 1;
  std::int64_t members = 1;
};

// The axes attribute against `shape`.
Result<MvnPlan> mvn_plan(const InferContext& ctx, const Shape& shape);

FOVEA_HD std::int64_t mvn_offset(const MvnPlan& plan, std::int64_t group, std::int64_t member) {
  std::int64_t offset = 0;
  for (int d = plan.kept_rank - 1; d >= 0; --d) {
    offset += (group % plan.kept_dims[d]) * plan.kept_strides[d];
    group /= plan.kept_dims[d];
  }
  for (int d = plan.reduced_rank - 1; d >= 0; --d) {
    offset += (member % plan.reduced_dims[d]) * plan.reduced_strides[d];
    member /= plan.reduced_dims[d];
  }
  return offset;
}

}  // namespace fovea::runtime::ops
