// What a linear layer's output alone goes through next joins the layer (passes.h): a residual Add
// (transformers add each block's input back after its projection: ViT-B's 24 Adds a batch, 0.33 ms
// of 6.5 on the H200, docs/perf.md), which cuBLASLt adds as its C operand inside the product; or a
// GELU (the MLP's first layer: 0.61 ms), which the CUDA executor's own Hopper GEMM applies in its
// epilogue (cuda/hopper_gemm.cuh).
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

struct Match {
  std::size_t gemm = 0, tail = 0;        // the Gemm and the Add or Gelu it goes into
  std::optional<std::size_t> unflatten;  // the Reshape between them, if any
  ValueId residual = kNoValue;           // the Add's other operand; kNoValue for a Gelu
};

// Gemm -> [Reshape] -> Add(., residual) where the residual has the sum's shape (no broadcasting),
// or -> Gelu, only that node reading the product.
std::optional<Match> match_at(Graph& graph, std::size_t index) {
  const Node& gemm = graph.nodes[index];
  if (!is_op(gemm, "Gemm") || !gemm.domain.empty() || gemm.inputs.size() > 3) return std::nullopt;
  Match match{.gemm = index};
  ValueId product = gemm.outputs[0];
  Node* next = sole_consumer(graph, product);
  if (next != nullptr && is_op(*next, "Reshape")) {
    match.unflatten = static_cast<std::size_t>(next - graph.nodes.data());
    product = next->outputs[0];
    next = sole_consumer(graph, product);
  }
  if (next == nullptr) return std::nullopt;
  match.tail = static_cast<std::size_t>(next - graph.nodes.data());
  if (is_op(*next, "Gelu")) return match;
  if (!is_op(*next, "Add") || next->inputs.size() != 2) return std::nullopt;
  match.residual = next->inputs[0] == product ? next->inputs[1] : next->inputs[0];
  const std::optional<Shape> sum = known_shape(graph, next->outputs[0]);
  if (match.residual == product || !sum || known_shape(graph, match.residual) != sum ||
      known_shape(graph, product) != sum ||
      graph.value(match.residual).type.dtype != graph.value(product).type.dtype)
    return std::nullopt;
  return match;
}

// The residual as [M, N] for fovea.Gemm's R: a Reshape (modelled on the unflatten one) where the
// sum has another shape than the product, which only happens through that Reshape.
ValueId residual_rows(Graph& graph, const Match& match, const Shape& matrix, std::vector<Node>& nodes) {
  if (*known_shape(graph, match.residual) == matrix) return match.residual;
  const std::string base = graph.value(match.residual).name + "/rows";
  ValueType type = graph.value(match.residual).type;  // by value: adding values may move them
  type.dims = dims_of(matrix);
  const ValueId rows = graph.add_value(base, type);
  nodes.push_back(reshape_like(graph, graph.nodes[*match.unflatten], base, match.residual, matrix, rows));
  return rows;
}

// Constant weights B [K, N] as [N, K] with transB = 1: K-major, the layout the Hopper GEMM's TMA
// loads read (it multiplies A [M, K] by B [N, K] transposed). The product is the same; weights that
// are already [N, K] (torch's Linear exported as Gemm), or not constant, stay as they are.
void store_weights_k_major(Graph& graph, Node& gemm) {
  const Result<std::int64_t> trans_b = gemm.attr_int("transB", 0);
  if (!trans_b.is_ok() || *trans_b != 0 || !graph.is_constant(gemm.inputs[1])) return;
  const Tensor& b = *graph.value(gemm.inputs[1]).constant;
  if (b.rank() != 2) return;
  const std::int64_t k = b.dim(0), n = b.dim(1);
  Tensor transposed = Tensor::allocate(b.dtype(), {n, k});
  const std::size_t size = data_type_size(b.dtype());
  const auto* from = static_cast<const std::uint8_t*>(b.raw());
  auto* to = static_cast<std::uint8_t*>(transposed.raw());
  for (std::int64_t row = 0; row < k; ++row) {
    for (std::int64_t col = 0; col < n; ++col) {
      std::memcpy(to + static_cast<std::size_t>(col * k + row) * size,
                  from + static_cast<std::size_t>(row * n + col) * size, size);
    }
  }
  gemm.inputs[1] = graph.add_constant(graph.value(gemm.inputs[1]).name + "/k_major", std::move(transposed));
  Attribute attribute;
  attribute.i = 1;
  gemm.attributes["transB"] = attribute;
}

// fovea.Gemm with the residual or the activation, then the product back to the sum's shape: at the
// tail's place, where the residual exists.
std::vector<Node> fused_nodes(Graph& graph, const Match& match) {
  const Shape matrix = *known_shape(graph, graph.nodes[match.gemm].outputs[0]);
  std::vector<Node> nodes;
  Node fused = graph.nodes[match.gemm];
  fused.domain = "fovea";
  if (match.residual != kNoValue) {
    const ValueId residual = residual_rows(graph, match, matrix, nodes);
    while (fused.inputs.size() < 3) fused.inputs.push_back(kNoValue);
    fused.inputs.push_back(residual);
  } else {
    const Node& gelu = graph.nodes[match.tail];
    Attribute activation;
    activation.kind = Attribute::Kind::kString;
    activation.s = "Gelu";
    fused.attributes["activation"] = std::move(activation);
    if (const auto approximate = gelu.attributes.find("approximate"); approximate != gelu.attributes.end()) {
      fused.attributes["approximate"] = approximate->second;
    }
    store_weights_k_major(graph, fused);
  }
  const ValueId out = graph.nodes[match.tail].outputs[0];
  if (!match.unflatten) {
    fused.outputs = {out};
    nodes.push_back(std::move(fused));
    return nodes;
  }
  nodes.push_back(std::move(fused));
  Node unflatten = graph.nodes[*match.unflatten];
  unflatten.outputs = {out};
  nodes.push_back(std::move(unflatten));
  return nodes;
}

}  // namespace

void fuse_gemm_epilogues(Graph& graph) {
  graph.index_producers();
  std::vector<Match> matches;
  std::vector<bool> taken(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (taken[n]) continue;
    std::optional<Match> match = match_at(graph, n);
    if (!match || taken[match->tail]) continue;
    taken[match->gemm] = taken[match->tail] = true;
    if (match->unflatten) taken[*match->unflatten] = true;
    matches.push_back(*match);
  }
  if (matches.empty()) return;
  std::vector<std::vector<Node>> replacing(graph.nodes.size());
  std::vector<bool> dropped(graph.nodes.size(), false);
  for (const Match& match : matches) {
    replacing[match.tail] = fused_nodes(graph, match);
    dropped[match.gemm] = dropped[match.tail] = true;
    if (match.unflatten) dropped[*match.unflatten] = true;
  }
  splice_nodes(graph, std::move(replacing), dropped);
}

}  // namespace fovea::runtime
