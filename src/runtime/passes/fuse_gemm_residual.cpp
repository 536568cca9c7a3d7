// A linear layer's residual Add goes into the layer (passes.h): transformers add each block's input
// back after its projection (ViT-B: 24 Adds a batch, 0.33 ms of 6.5 on the H200, docs/perf.md),
// and cuBLASLt adds a C operand inside the product at no cost where the Add was a pass of its own
// over two activations.
#include <optional>
#include <string>
#include <vector>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

struct Match {
  std::size_t gemm = 0, add = 0;
  std::optional<std::size_t> unflatten;  // the Reshape between them, if any
  ValueId residual = kNoValue;
};

// Gemm -> [Reshape] -> Add(., residual) where the residual has the sum's shape (no broadcasting)
// and only the Add reads the product.
std::optional<Match> match_at(Graph& graph, std::size_t index) {
  const Node& gemm = graph.nodes[index];
  if (!is_op(gemm, "Gemm") || !gemm.domain.empty() || gemm.inputs.size() > 3) return std::nullopt;
  Match match{.gemm = index};
  ValueId sum_operand = gemm.outputs[0];
  Node* next = sole_consumer(graph, sum_operand);
  if (next != nullptr && is_op(*next, "Reshape")) {
    match.unflatten = static_cast<std::size_t>(next - graph.nodes.data());
    sum_operand = next->outputs[0];
    next = sole_consumer(graph, sum_operand);
  }
  if (next == nullptr || !is_op(*next, "Add") || next->inputs.size() != 2) return std::nullopt;
  match.add = static_cast<std::size_t>(next - graph.nodes.data());
  match.residual = next->inputs[0] == sum_operand ? next->inputs[1] : next->inputs[0];
  const std::optional<Shape> sum = known_shape(graph, next->outputs[0]);
  if (match.residual == sum_operand || !sum || known_shape(graph, match.residual) != sum ||
      known_shape(graph, sum_operand) != sum ||
      graph.value(match.residual).type.dtype != graph.value(sum_operand).type.dtype)
    return std::nullopt;
  return match;
}

// fovea.Gemm reading the residual as [M, N], then the product back to the sum's shape: at the Add's
// place, where the residual exists.
std::vector<Node> fused_nodes(Graph& graph, const Match& match) {
  const Node& gemm = graph.nodes[match.gemm];
  const Node& add = graph.nodes[match.add];
  const ValueId product = gemm.outputs[0];
  const Shape matrix = *known_shape(graph, product);
  std::vector<Node> nodes;
  ValueId residual = match.residual;
  if (*known_shape(graph, residual) != matrix) {
    const std::string base = graph.value(residual).name + "/rows";
    ValueType type = graph.value(match.residual).type;  // by value: adding values may move them
    type.dims = dims_of(matrix);
    residual = graph.add_value(base, type);
    nodes.push_back(
        reshape_like(graph, graph.nodes[*match.unflatten], base, match.residual, matrix, residual));
  }
  Node fused = graph.nodes[match.gemm];
  fused.domain = "fovea";
  while (fused.inputs.size() < 3) fused.inputs.push_back(kNoValue);
  fused.inputs.push_back(residual);
  if (!match.unflatten) {
    fused.outputs = {add.outputs[0]};
    nodes.push_back(std::move(fused));
    return nodes;
  }
  nodes.push_back(std::move(fused));
  Node unflatten = graph.nodes[*match.unflatten];
  unflatten.outputs = {graph.nodes[match.add].outputs[0]};
  nodes.push_back(std::move(unflatten));
  return nodes;
}

}  // namespace

void fuse_gemm_residual(Graph& graph) {
  graph.index_producers();
  std::vector<Match> matches;
  std::vector<bool> taken(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (taken[n]) continue;
    std::optional<Match> match = match_at(graph, n);
    if (!match || taken[match->add]) continue;
    taken[match->gemm] = taken[match->add] = true;
    if (match->unflatten) taken[*match->unflatten] = true;
    matches.push_back(*match);
  }
  if (matches.empty()) return;
  std::vector<std::vector<Node>> replacing(graph.nodes.size());
  std::vector<bool> dropped(graph.nodes.size(), false);
  for (const Match& match : matches) {
    replacing[match.add] = fused_nodes(graph, match);
    dropped[match.gemm] = dropped[match.add] = true;
    if (match.unflatten) dropped[*match.unflatten] = true;
  }
  splice_nodes(graph, std::move(replacing), dropped);
}

}  // namespace fovea::runtime
