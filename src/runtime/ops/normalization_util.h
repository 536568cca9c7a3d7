// fovea.BatchNormalization's attributes, read the same way by its CPU kernel (normalization.cpp)
// and its CUDA kernel (cuda/ops/normalization.cu).
#pragma once

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime::ops {

// What follows the normalization in the same pass: `activation` "" (nothing, the default) or "Relu".
enum class BatchNormActivation { kNone, kRelu };

// The node's activation; kInvalidArgument naming the node and the value for any other.
Result<BatchNormActivation> batch_norm_activation(const Node& node);

}  // namespace fovea::runtime::ops
