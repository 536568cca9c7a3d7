// ONNX's If, as fovea runs it: an If whose condition is known when the model is planned (an
// initializer, a Constant, or a value constant folding computes: a shape compared with a number)
// becomes the nodes of the branch it picks, inlined into the enclosing graph by infer_shapes. An
// If whose condition only the run decides is refused by name when the model is planned: the
// executors run static plans, and exporters write If mostly around what the shapes decide.
#pragma once

#include <vector>

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

bool is_if(const Node& node);

// The nodes of the branch that `node`'s constant condition picks, in a topological order, reading
// `graph`'s values (the branch's outer reads by name, its initializers added as constants) and
// writing the If's outputs. A branch value whose name `graph` already has is renamed; nested
// subgraphs are kept, to be inlined in their turn.
Result<std::vector<Node>> inline_if(Graph& graph, const Node& node);

// The output types of an If not inlined yet: each output as both branches declare it, where they
// agree; unknown otherwise.
std::vector<ValueType> if_output_types(const Node& node);

// The error for an If whose condition is not known when the model is planned.
Status refuse_run_time_if(const Graph& graph, const Node& node);

}  // namespace fovea::runtime
