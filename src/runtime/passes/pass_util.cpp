#include "runtime/passes/pass_util.h"

namespace fovea::runtime {

void replace_uses(Graph& graph, ValueId from, ValueId to) {
  for (Node& node : graph.nodes) {
    for (ValueId& in : node.inputs) {
      if (in == from) in = to;
    }
  }
}

void rename_output(Graph& graph, ValueId from, ValueId to) {
  for (Node& node : graph.nodes) {
    for (ValueId& out : node.outputs) {
      if (out == from) out = to;
    }
  }
  graph.index_producers();
}

Node* sole_consumer(Graph& graph, ValueId value) {
  if (graph.is_graph_output(value)) return nullptr;
  Node* consumer = nullptr;
  for (Node& node : graph.nodes) {
    for (ValueId in : node.inputs) {
      if (in != value) continue;
      if (consumer != nullptr && consumer != &node) return nullptr;
      consumer = &node;
    }
  }
  return consumer;
}

void erase_nodes(Graph& graph, const std::vector<bool>& removed) {
  std::vector<Node> kept;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!removed[n]) kept.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(kept);
  graph.index_producers();
}

}  // namespace fovea::runtime
