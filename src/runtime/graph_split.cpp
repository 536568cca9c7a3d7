#include "runtime/graph_split.h"

#include <algorithm>

namespace fovea::runtime {
namespace {

bool contains(const std::vector<ValueId>& ids, ValueId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// `graph` with only the nodes `keep` marks, the given inputs and outputs, and only the values those
// refer to.
Graph subgraph(const Graph& graph, const std::vector<bool>& keep, std::vector<ValueId> inputs,
               std::vector<ValueId> outputs) {
  Graph part;
  part.model_path = graph.model_path;
  part.opsets = graph.opsets;
  part.values = graph.values;  // constants share their storage
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (keep[n]) part.nodes.push_back(graph.nodes[n]);
  }
  part.inputs = std::move(inputs);
  part.outputs = std::move(outputs);
  part.compact();  // also re-indexes producers: a prefix value the tail reads is a tail input there
  return part;
}

}  // namespace

GraphSplit split_graph(const Graph& graph, const std::function<bool(const Node&)>& takes) {
  std::vector<bool> available(graph.values.size(), false);  // the prefix has this value
  for (ValueId id : graph.inputs) available[static_cast<std::size_t>(id)] = true;
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    if (graph.values[v].constant) available[v] = true;
  }
  std::vector<bool> in_prefix(graph.nodes.size(), false);
  GraphSplit split;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const bool inputs_ready = std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId in) {
      return in == kNoValue || available[static_cast<std::size_t>(in)];
    });
    in_prefix[n] = inputs_ready && takes(node);
    if (!in_prefix[n]) {
      if (split.first_tail_node.empty()) split.first_tail_node = node.describe();
      continue;
    }
    for (ValueId out : node.outputs) {
      if (out != kNoValue) available[static_cast<std::size_t>(out)] = true;
    }
  }

  std::vector<ValueId> prefix_outputs;
  std::vector<ValueId> tail_outputs;
  for (ValueId out : graph.outputs) {
    (available[static_cast<std::size_t>(out)] ? prefix_outputs : tail_outputs).push_back(out);
  }
  // What the tail reads of the prefix: values prefix nodes make (graph inputs and constants it
  // reads directly).
  std::vector<ValueId> boundary;
  std::vector<ValueId> tail_inputs;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (in_prefix[n]) continue;
    for (ValueId in : graph.nodes[n].inputs) {
      if (in == kNoValue || graph.is_constant(in) || !available[static_cast<std::size_t>(in)]) continue;
      const bool graph_input = contains(graph.inputs, in);
      if (!graph_input && !contains(boundary, in)) boundary.push_back(in);
      if (graph_input && !contains(tail_inputs, in)) tail_inputs.push_back(in);
    }
  }
  for (ValueId id : boundary) {
    if (!contains(prefix_outputs, id)) prefix_outputs.push_back(id);
    split.boundary.push_back(graph.value(id).name);
  }
  tail_inputs.insert(tail_inputs.begin(), boundary.begin(), boundary.end());

  std::vector<bool> in_tail(in_prefix.size());
  std::transform(in_prefix.begin(), in_prefix.end(), in_tail.begin(), [](bool p) { return !p; });
  split.prefix = subgraph(graph, in_prefix, graph.inputs, prefix_outputs);
  split.tail = subgraph(graph, in_tail, tail_inputs, tail_outputs);
  return split;
}

}  // namespace fovea::runtime
