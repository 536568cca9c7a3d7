// A graph cut in two where an executor of static plans stops. The CUDA executor plans every
// shape, buffer and kernel before the first run; the nodes after one whose output's size the data
// decides (NonZero, an NMS that later nodes read, a run-time If or Loop) cannot be planned so. The
// prefix holds the nodes that executor takes, in order, whose inputs are the graph's inputs,
// constants or other prefix nodes' outputs; the tail holds every other node and runs where
// shapes are known as the run goes (the CPU executor). torchvision's detectors split right after
// their network, at the first data-dependent step of the postprocess.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace fovea::runtime {

struct GraphSplit {
  // Inputs: the graph's. Outputs: the graph's outputs it makes (or passes on), then the boundary.
  Graph prefix;
  // Inputs: the boundary values and the graph's inputs it reads. Outputs: the graph's other
  // outputs. Empty (no nodes) when the prefix takes the whole graph.
  Graph tail;
  // Names of the prefix's values the tail reads; each is a prefix output and a tail input.
  std::vector<std::string> boundary;
  // The first tail node, for messages: "node 'nms' (NonMaxSuppression)".
  std::string first_tail_node;

  bool splits() const { return !tail.nodes.empty(); }
};

// `takes` is asked only about nodes whose inputs the prefix already has. Values keep their names in
// both graphs; each graph keeps only the values and constants it refers to.
GraphSplit split_graph(const Graph& graph, const std::function<bool(const Node&)>& takes);

}  // namespace fovea::runtime
