#include "runtime/cuda/elementwise_layout.h"

#include <algorithm>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::cuda {

ElementwiseLayout elementwise_layout(const Shape& out, const std::vector<Shape>& inputs) {
  std::vector<Shape> full_strides;
  for (const Shape& in : inputs) full_strides.push_back(ops::broadcast_strides(in, out));
  ElementwiseLayout layout;
  layout.strides.resize(inputs.size());
  // From the innermost dim outwards: dim d joins the dim collected last when, for every input,
  // stepping once along d is the same as stepping across the whole collected dim.
  for (std::size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1) continue;
    bool merges = !layout.dims.empty();
    for (std::size_t k = 0; k < inputs.size() && merges; ++k) {
      merges = full_strides[k][d] == layout.strides[k].back() * layout.dims.back();
    }
    if (merges) {
      layout.dims.back() *= out[d];
      continue;
    }
    layout.dims.push_back(out[d]);
    for (std::size_t k = 0; k < inputs.size(); ++k) layout.strides[k].push_back(full_strides[k][d]);
  }
  if (layout.dims.empty()) {
    layout.dims.push_back(1);
    for (Shape& strides : layout.strides) strides.push_back(0);
  }
  // Collected innermost first; the kernel wants row-major order.
  std::reverse(layout.dims.begin(), layout.dims.end());
  for (Shape& strides : layout.strides) std::reverse(strides.begin(), strides.end());
  return layout;
}

}  // namespace fovea::runtime::cuda
