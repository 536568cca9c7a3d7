// How the elementwise kernel (elementwise.cuh) walks a broadcast: the output's dims reduced to the
// fewest that still describe every input, so that common layouts need little or no index math.
// Host-only, so CPU tests check it.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace fovea::runtime::cuda {

struct ElementwiseLayout {
  // The output's dims with size-1 dims dropped and neighbours merged wherever every input is
  // contiguous (or broadcast) across both: same-shape inputs and scalars leave one dim (a flat
  // loop), [N, C, H, W] + [C, 1, 1] leaves [N, C, H * W]. Never empty: a one-element output is {1}.
  Shape dims;
  // Per input, its element stride along each of `dims`: 0 where it is broadcast. The innermost
  // stride is always 1 or 0.
  std::vector<Shape> strides;
};

// `inputs` broadcast to `out` (numpy rules, already checked by shape inference).
ElementwiseLayout elementwise_layout(const Shape& out, const std::vector<Shape>& inputs);

}  // namespace fovea::runtime::cuda
