// Small graph-editing helpers shared by the passes.
#pragma once

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

// Drops the nodes flagged in `removed` (indexed like graph.nodes) and reindexes producers.
void erase_nodes(Graph& graph, const std::vector<bool>& removed);

}  // namespace fovea::runtime
