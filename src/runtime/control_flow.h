// ONNX's If, Loop and Scan, as fovea runs them. An If whose condition is known when the model is planned
// (an initializer, a Constant, or a value constant folding computes: a shape compared with a number)
// becomes the nodes of the branch it picks, inlined into the enclosing graph by infer_shapes. An If
// whose condition only the run decides, every Loop and every Scan (opset 9 on), stay nodes: the CPU executor
// runs them by executing the subgraph node by node with the CPU kernels (torchvision's detectors test the
// number of boxes left, and Mask R-CNN pastes its masks in a Loop). Their outputs' shapes are
// known only at run time. The CUDA executor, whose plans are static, refuses them by name.
//
// A subgraph reads outer values by name; the loader lists those after the node's own inputs
// (Graph::captured), so that order and liveness in the enclosing graph see them. At run time they
// are bound back by position, in the order the loader listed them.
#pragma once

#include <vector>

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

bool is_if(const Node& node);
bool is_loop(const Node& node);
bool is_scan(const Node& node);
// If, Loop or Scan: a node the CPU executor runs through its subgraphs.
bool is_control_flow(const Node& node);

// The nodes of the branch that `node`'s constant condition picks, in a topological order, reading
// `graph`'s values (the branch's outer reads by name, its initializers added as constants) and
// writing the If's outputs. A branch value whose name `graph` already has is renamed; nested
// subgraphs are kept, to be inlined in their turn.
Result<std::vector<Node>> inline_if(Graph& graph, const Node& node);

// The output types of an If not inlined yet: each output as both branches declare it, where they
// agree; unknown otherwise.
std::vector<ValueType> if_output_types(const Node& node);

// The output types of a Loop: its loop-carried values typed from their initial values (dims kept
// where the body declares the same), its scan outputs from the body's declared outputs with a
// leading dimension of unknown size (the iterations).
Result<std::vector<ValueType>> loop_output_types(const Graph& graph, const Node& node);
// The output types of a Scan: its states typed as a Loop's carried values, its scan outputs from
// the body's declared outputs with the iterations' dimension inserted at their axis.
Result<std::vector<ValueType>> scan_output_types(const Graph& graph, const Node& node);

// Runs an If, a Loop or a Scan on concrete inputs (its own, then the outer values its subgraphs read).
// Every output is allocated here, at the shape the run gives it.
Result<std::vector<Tensor>> evaluate_control_flow(const Graph* graph, const Node& node,
                                                  const std::vector<Tensor>& inputs);

}  // namespace fovea::runtime
