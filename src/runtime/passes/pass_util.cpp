#include "runtime/passes/pass_util.h"

#include <algorithm>
#include <numeric>

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

std::vector<Node*> readers(Graph& graph, ValueId value) {
  std::vector<Node*> found;
  for (Node& node : graph.nodes) {
    if (std::find(node.inputs.begin(), node.inputs.end(), value) != node.inputs.end()) found.push_back(&node);
  }
  return found;
}

Node* sole_consumer(Graph& graph, ValueId value) {
  if (graph.is_graph_output(value)) return nullptr;
  const std::vector<Node*> found = readers(graph, value);
  return found.size() == 1 ? found.front() : nullptr;
}

Node* producer_of(Graph& graph, ValueId value) {
  const int producer = graph.value(value).producer;
  return producer < 0 ? nullptr : &graph.nodes[static_cast<std::size_t>(producer)];
}

bool is_op(const Node& node, std::string_view op_type) {
  return node.domain.empty() && node.op_type == op_type && node.outputs.size() == 1;
}

std::optional<float> scalar_of(const Graph& graph, ValueId id) {
  if (!graph.is_constant(id)) return std::nullopt;
  const Tensor& t = *graph.value(id).constant;
  if (t.dtype() != DataType::kFloat32 || t.numel() != 1) return std::nullopt;
  return t.data<float>()[0];
}

std::optional<std::vector<std::int64_t>> transpose_perm(const Node& node, std::size_t rank) {
  std::vector<std::int64_t> reversed(rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  const Result<std::vector<std::int64_t>> perm = node.attr_ints("perm", reversed);
  if (!perm.is_ok() || perm->size() != rank) return std::nullopt;
  return *perm;
}

std::optional<Shape> known_shape(const Graph& graph, ValueId value) {
  const auto& dims = graph.value(value).type.dims;
  if (!dims) return std::nullopt;
  Shape shape;
  for (const Dim& d : *dims) {
    if (!d.known()) return std::nullopt;
    shape.push_back(d.value);
  }
  return shape;
}

void erase_nodes(Graph& graph, const std::vector<bool>& removed) {
  std::vector<Node> kept;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!removed[n]) kept.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(kept);
  graph.index_producers();
}

bool is_view_op(const Node& node) {
  return !node.inputs.empty() &&
         (is_op(node, "Reshape") || is_op(node, "Squeeze") || is_op(node, "Unsqueeze") ||
          is_op(node, "Flatten") || is_op(node, "Identity") || is_op(node, "Transpose") ||
          is_op(node, "Gather"));
}

Node reshape_node(Graph& graph, const std::string& name, ValueId from, const Shape& shape, ValueId out) {
  Node node;
  node.op_type = "Reshape";
  node.opset = graph.opsets.count("") ? graph.opsets.at("") : 14;
  node.name = name;
  node.inputs = {from,
                 graph.add_constant(name + "/shape",
                                    Tensor::from_vector<std::int64_t>(
                                        DataType::kInt64, {static_cast<std::int64_t>(shape.size())}, shape))};
  node.outputs = {out};
  return node;
}

Node reshape_like(Graph& graph, const Node& like, const std::string& name, ValueId from, const Shape& shape,
                  ValueId out) {
  Node node = like;  // copied first: `like` may be a node of graph.nodes
  Node made = reshape_node(graph, name, from, shape, out);
  node.name = std::move(made.name);
  node.inputs = std::move(made.inputs);
  node.outputs = std::move(made.outputs);
  return node;
}

void splice_nodes(Graph& graph, std::vector<std::vector<Node>> inserted, const std::vector<bool>& removed) {
  std::vector<Node> nodes;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (Node& node : inserted[n]) nodes.push_back(std::move(node));
    if (!removed[n]) nodes.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(nodes);
  graph.index_producers();
}

}  // namespace fovea::runtime
