// Graph rewrites between loading and planning. Each pass keeps the graph valid and topologically
// sorted; each has its own tests (tests/runtime/passes_test.cpp).
#pragma once

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

// Constant folding is infer_shapes(graph, FoldConstants::kYes) (shape_inference.h): it needs the
// op kernels and the shapes, which inference has at hand.

// Identity, and Dropout whose mask nobody reads, are bypassed: consumers read the input directly.
void remove_identities(Graph& graph);

// BatchNormalization right after a Conv (its only consumer) becomes part of the Conv's weights and
// bias, when all of them are constants.
Status fold_batchnorm_into_conv(Graph& graph);

// Conv + (residual Add of a same-shape tensor) + (Relu, LeakyRelu, Clip, Sigmoid or HardSwish)
// becomes one fovea.FusedConv node, so executors can run the epilogue inside the convolution.
void fuse_conv_epilogues(Graph& graph);

// Removes nodes none of whose outputs reach a graph output.
void eliminate_dead_nodes(Graph& graph);

// All of the above in order (after folding), then drops unused values.
Status optimize(Graph& graph);

}  // namespace fovea::runtime
