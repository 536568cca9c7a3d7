// Shape inference over a whole graph, optionally folding constants on the way: a node whose inputs
// are all known values (or a Shape/Size whose input shape is known) is evaluated once with the CPU
// kernels and replaced by its results. With input shapes bound, this turns the
// Shape/Gather/Unsqueeze/Concat/Reshape chains of PyTorch exports into constants.
#pragma once

#include "runtime/graph.h"

namespace fovea::runtime {

enum class FoldConstants { kNo, kYes };

// Folded values larger than this stay computed at run time: folding must not bloat the model.
inline constexpr std::size_t kMaxFoldedBytes = std::size_t{64} << 20;

// Sets every node output's type from its op's inference, in topological order. A graph output
// whose declared element type disagrees with the inferred one is a type mismatch error. An If whose
// condition is constant by then is replaced by the branch it picks (control_flow.h); with folding,
// an If left is refused.
Status infer_shapes(Graph& graph, FoldConstants fold);

}  // namespace fovea::runtime
