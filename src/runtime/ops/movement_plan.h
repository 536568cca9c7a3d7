// Host-side parameters of the data movement ops that both the CPU kernels (movement.cpp) and the
// CUDA kernels (cuda/ops/movement.cu) derive from a node: Slice's per-axis starts and steps,
// Transpose's permutation and Pad's mode and pads. pad_source() is the one definition of which
// input index a padded coordinate reads, on the host and on the device.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/host_device.h"
#include "runtime/ops/movement_util.h"

namespace fovea::runtime::ops {

// ---- Slice ----

// Per input axis: the first input index read, the step and the output size.
struct SliceAxis {
  std::int64_t start = 0;
  std::int64_t step = 1;
  Dim count;
};

// Clamps start and end as the ONNX spec does (so INT64_MAX/INT64_MIN mean "to the end") and
// counts the elements taken.
SliceAxis slice_axis(std::int64_t start, std::int64_t end, std::int64_t step, std::int64_t dim);

// One entry per input axis; nullopt when a starts/ends/axes/steps value is not known yet.
Result<std::optional<std::vector<SliceAxis>>> slice_plan(const InferContext& ctx, const Dims& in);

// ---- Transpose ----

// The perm attribute (reversed axes by default), checked to be a permutation of `rank` axes.
Result<std::vector<std::int64_t>> transpose_perm(const InferContext& ctx, int rank);

// ---- Pad ----

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct PadPlan {
  PadMode mode = PadMode::kConstant;
  std::vector<std::int64_t> begin, end;  // per input axis; negative crops
};

Result<PadMode> pad_mode(const InferContext& ctx);

// nullopt when the pads or axes are not known yet.
Result<std::optional<PadPlan>> pad_plan(const InferContext& ctx, int rank);

// The input index that output coordinate `c` (relative to the input's start) reads, or -1 for the
// constant. `dim` > 0 (shape inference rejects padding an empty axis in the other modes).
FOVEA_HD std::int64_t pad_source(std::int64_t c, std::int64_t dim, PadMode mode) {
  if (c >= 0 && c < dim) return c;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return c < 0 ? 0 : dim - 1;
    case PadMode::kWrap: return ((c % dim) + dim) % dim;
    case PadMode::kReflect: {
      if (dim == 1) return 0;
      const std::int64_t period = 2 * (dim - 1);  // reflection without repeating the edge
      const std::int64_t m = ((c % period) + period) % period;
      return m < dim ? m : period - m;
    }
  }
  return -1;
}

}  // namespace fovea::runtime::ops
