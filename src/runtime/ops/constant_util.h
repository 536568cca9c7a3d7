// Host-side values of the ops that make tensors from attributes and shapes, shared by the CPU
// kernels (constant.cpp) and the CUDA kernels (cuda/ops/constant.cu).
#pragma once

#include <cstdint>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace fovea::runtime::ops {

// The value a Constant node holds, from whichever one of its value attributes is set. Errors name
// the node, like those of the attribute getters.
Result<Tensor> constant_value(const Node& node);

// Shape's opset-15 start/end select dims [start, end), clamped to [0, rank] after counting
// negative values from the end.
struct DimRange {
  std::int64_t begin;
  std::int64_t end;
};

Result<DimRange> shape_range(const Node& node, std::int64_t rank);

// ConstantOfShape's fill value: the one-element `value` tensor, float32 0 without one.
Result<Tensor> fill_value(const Node& node);

}  // namespace fovea::runtime::ops
