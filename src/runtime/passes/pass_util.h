// Small graph-editing helpers shared by the passes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/graph.h"

namespace fovea::runtime {

// Every node input reading `from` reads `to` instead.
void replace_uses(Graph& graph, ValueId from, ValueId to);
// The node producing `from` produces `to` instead (`from` is left unproduced).
void rename_output(Graph& graph, ValueId from, ValueId to);
// The nodes reading `value`, each once, in graph order.
std::vector<Node*> readers(Graph& graph, ValueId value);
// The only node reading `value`, or nullptr when zero or several nodes (or a graph output) read it.
Node* sole_consumer(Graph& graph, ValueId value);

// The node producing `value`, or nullptr for a graph input or a constant.
Node* producer_of(Graph& graph, ValueId value);
// A default-domain node of `op_type` with one output.
bool is_op(const Node& node, std::string_view op_type);
// The value of a float32 scalar constant (any shape with one element), if `id` is one.
std::optional<float> scalar_of(const Graph& graph, ValueId id);
// A Transpose's perm for an input of `rank` dims (without the attribute it reverses the axes), or
// nullopt when the attribute is not a list of that length.
std::optional<std::vector<std::int64_t>> transpose_perm(const Node& node, std::size_t rank);
// `value`'s shape when its rank and every dim are known.
std::optional<Shape> known_shape(const Graph& graph, ValueId value);
// A node whose output only reinterprets or moves its first input's elements (Reshape, Squeeze,
// Unsqueeze, Flatten, Identity, Transpose, Gather of a constant index): what fold_attention_views
// turns into strided reads.
bool is_view_op(const Node& node);
// A Reshape of `from` to `shape` writing `out`, named `name`, its shape a new constant named after
// it, at the graph's default-domain opset.
Node reshape_node(Graph& graph, const std::string& name, ValueId from, const Shape& shape, ValueId out);
// The same, made from `like` (an existing Reshape: its opset and attributes).
Node reshape_like(Graph& graph, const Node& like, const std::string& name, ValueId from, const Shape& shape,
                  ValueId out);

// Drops the nodes flagged in `removed` (indexed like graph.nodes) and reindexes producers.
void erase_nodes(Graph& graph, const std::vector<bool>& removed);
// Rebuilds graph.nodes: at each index n, the nodes of inserted[n] in their order, then node n unless
// removed[n] (both indexed like graph.nodes); reindexes producers. Nodes inserted at n may read
// what the nodes before n produce.
void splice_nodes(Graph& graph, std::vector<std::vector<Node>> inserted, const std::vector<bool>& removed);

}  // namespace fovea::runtime
