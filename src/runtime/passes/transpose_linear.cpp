// Transposes of the row dims move across linear layers to the attention that can absorb them
// (passes.h). torch's nn.MultiheadAttention with batch_first=True (ViT's, and most transformers')
// turns its input [B, T, E] into [T, B, E] before the QKV projection and its output back after
// the output projection: two full copies of the activations a layer (ViT-B: 0.26 ms of a 6.5 ms
// batch of 64 on the H200, docs/perf.md). A linear layer treats each row alone, so
// Gemm(Transpose(x)) = Transpose(Gemm(x)) for a Transpose that keeps the last axis; moved to the
// attention side, fold_attention_views makes each a strided read or a permuted write.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/ops/conv_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

bool is_attention(const Node& node) {
  return node.domain == "fovea" && node.op_type == "Attention";
}

// Whether every reader of `value` is an attention's Q, KT or V, directly or through view ops.
bool feeds_only_attention(Graph& graph, ValueId value) {
  const std::vector<Node*> nodes = readers(graph, value);
  if (nodes.empty() || graph.is_graph_output(value)) return false;
  for (Node* node : nodes) {
    if (is_attention(*node)) {
      for (std::size_t i = 3; i < node->inputs.size(); ++i) {
        if (node->inputs[i] == value) return false;  // the bias
      }
    } else if (!is_view_op(*node) || node->inputs[0] != value ||
               !feeds_only_attention(graph, node->outputs[0])) {
      return false;
    }
  }
  return true;
}

// Whether `value` is an attention's output seen through Reshapes that alone read each step.
bool reshaped_attention_output(Graph& graph, ValueId value) {
  for (Node* node = producer_of(graph, value); node != nullptr; node = producer_of(graph, node->inputs[0])) {
    if (is_attention(*node)) return true;
    if (!is_op(*node, "Reshape") || sole_consumer(graph, node->inputs[0]) != node) return false;
  }
  return false;
}

// A plain Gemm on rows: A [R, K] not transposed.
bool row_gemm(const Node& node) {
  const Result<std::int64_t> trans_a = node.attr_int("transA", 0);
  return is_op(node, "Gemm") && trans_a.is_ok() && *trans_a == 0;
}

// The perm of a Transpose of `rank` dims that keeps the last axis last.
std::optional<std::vector<std::int64_t>> row_perm(const Node& transpose, std::size_t rank) {
  std::optional<std::vector<std::int64_t>> perm = transpose_perm(transpose, rank);
  if (!perm || perm->empty() || perm->back() != static_cast<std::int64_t>(rank) - 1) return std::nullopt;
  return perm;
}

// Builds the replacement nodes, each a copy of a template node of its kind (opset, attributes).
// New values and nodes are named after the Gemm (`base`), which is rewritten once.
class Builder {
 public:
  Builder(Graph& graph, std::string base, Node reshape, Node transpose)
      : graph_(graph),
        base_(std::move(base)),
        reshape_(std::move(reshape)),
        transpose_(std::move(transpose)) {}

  // `from` as `shape`, into `out` (a new value when kNoValue).
  ValueId reshape(ValueId from, const Shape& shape, ValueId out = kNoValue) {
    const std::string name = next_name("reshape");
    if (out == kNoValue) out = new_value(from, name, shape);
    nodes.push_back(reshape_like(graph_, reshape_, name, from, shape, out));
    return out;
  }

  ValueId transpose(ValueId from, const std::vector<std::int64_t>& perm) {
    const std::string name = next_name("transpose");
    const ValueId out = new_value(from, name, ops::permute_tensor_shape(*known_shape(graph_, from), perm));
    Node node = transpose_;
    node.name = name;
    node.inputs = {from};
    node.outputs = {out};
    Attribute attribute;
    attribute.kind = Attribute::Kind::kInts;
    attribute.ints = perm;
    node.attributes = {{"perm", std::move(attribute)}};
    nodes.push_back(std::move(node));
    return out;
  }

  // `gemm` reading `a` instead, into `out` (a new value [R, N] when kNoValue).
  ValueId gemm(const Node& gemm, ValueId a, ValueId out = kNoValue) {
    if (out == kNoValue) out = new_value(gemm.outputs[0], next_name("product"), {});
    Node node = gemm;
    node.inputs[0] = a;
    node.outputs = {out};
    nodes.push_back(std::move(node));
    return out;
  }

  std::vector<Node> nodes;

 private:
  // A value of `like`'s dtype; `shape` empty keeps `like`'s dims.
  ValueId new_value(ValueId like, const std::string& name, const Shape& shape) {
    ValueType type = graph_.value(like).type;  // by value: adding values may move them
    if (!shape.empty()) type.dims = dims_of(shape);
    return graph_.add_value(name, type);
  }

  std::string next_name(const char* what) { return base_ + "/moved_" + what + std::to_string(nodes.size()); }

  Graph& graph_;
  std::string base_;
  Node reshape_, transpose_;
};

std::string base_name(const Graph& graph, const Node& gemm) {
  return gemm.name.empty() ? graph.value(gemm.outputs[0]).name : gemm.name;
}

struct Rewrite {
  std::size_t at = 0;             // where the new nodes stand
  std::vector<std::size_t> gone;  // nodes they replace
  std::vector<Node> nodes;
};

// Transpose(x) -> Reshape [R, K] -> Gemm, the product read only by attentions: the Gemm reads x's
// rows in their order and the Transpose moves after it, onto the product's rows.
std::optional<Rewrite> sink_below(Graph& graph, std::size_t index) {
  const Node& gemm = graph.nodes[index];
  if (!row_gemm(gemm)) return std::nullopt;
  Node* flatten = producer_of(graph, gemm.inputs[0]);
  if (flatten == nullptr || !is_op(*flatten, "Reshape") || sole_consumer(graph, gemm.inputs[0]) == nullptr) {
    return std::nullopt;
  }
  Node* transpose = producer_of(graph, flatten->inputs[0]);
  if (transpose == nullptr || !is_op(*transpose, "Transpose") ||
      sole_consumer(graph, flatten->inputs[0]) == nullptr)
    return std::nullopt;
  const std::optional<Shape> x = known_shape(graph, transpose->inputs[0]);
  const std::optional<Shape> rows = known_shape(graph, gemm.inputs[0]);
  const std::optional<Shape> product = known_shape(graph, gemm.outputs[0]);
  if (!x || x->size() < 3 || !rows || !product || rows->back() != x->back()) return std::nullopt;
  const std::optional<std::vector<std::int64_t>> perm = row_perm(*transpose, x->size());
  if (!perm || !feeds_only_attention(graph, gemm.outputs[0])) return std::nullopt;
  Builder build(graph, base_name(graph, gemm), *flatten, *transpose);
  const ValueId x_rows = build.reshape(transpose->inputs[0], *rows);
  const ValueId product_rows = build.gemm(gemm, x_rows);
  Shape unflat = *x;
  unflat.back() = product->back();
  const ValueId transposed = build.transpose(build.reshape(product_rows, unflat), *perm);
  build.reshape(transposed, *product, gemm.outputs[0]);
  return Rewrite{.at = index,
                 .gone = {index, static_cast<std::size_t>(flatten - graph.nodes.data()),
                          static_cast<std::size_t>(transpose - graph.nodes.data())},
                 .nodes = std::move(build.nodes)};
}

// Gemm on an attention's output -> Reshape -> Transpose: the Transpose moves before the Gemm, next
// to the attention, which then writes its output in that order.
std::optional<Rewrite> hoist_above(Graph& graph, std::size_t index) {
  const Node& gemm = graph.nodes[index];
  if (!row_gemm(gemm) || sole_consumer(graph, gemm.inputs[0]) == nullptr ||
      !reshaped_attention_output(graph, gemm.inputs[0]))
    return std::nullopt;
  Node* unflatten = sole_consumer(graph, gemm.outputs[0]);
  if (unflatten == nullptr || !is_op(*unflatten, "Reshape")) return std::nullopt;
  Node* transpose = sole_consumer(graph, unflatten->outputs[0]);
  if (transpose == nullptr || !is_op(*transpose, "Transpose")) return std::nullopt;
  const std::optional<Shape> rows = known_shape(graph, gemm.inputs[0]);
  const std::optional<Shape> unflat = known_shape(graph, unflatten->outputs[0]);
  if (!rows || rows->size() != 2 || !unflat || unflat->size() < 3) return std::nullopt;
  const std::optional<std::vector<std::int64_t>> perm = row_perm(*transpose, unflat->size());
  if (!perm) return std::nullopt;
  Builder build(graph, base_name(graph, gemm), *unflatten, *transpose);
  Shape a_shape = *unflat;
  a_shape.back() = rows->back();
  const ValueId a = build.transpose(build.reshape(gemm.inputs[0], a_shape), *perm);
  const ValueId product = build.gemm(gemm, build.reshape(a, *rows));
  build.reshape(product, ops::permute_tensor_shape(*unflat, *perm), transpose->outputs[0]);
  return Rewrite{.at = index,
                 .gone = {index, static_cast<std::size_t>(unflatten - graph.nodes.data()),
                          static_cast<std::size_t>(transpose - graph.nodes.data())},
                 .nodes = std::move(build.nodes)};
}

}  // namespace

void move_transposes_to_attention(Graph& graph, AttentionSide side) {
  graph.index_producers();
  std::vector<Rewrite> rewrites;
  std::vector<bool> taken(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    std::optional<Rewrite> rewrite =
        side == AttentionSide::kInputs ? sink_below(graph, n) : hoist_above(graph, n);
    if (!rewrite) continue;
    bool free = true;
    for (std::size_t gone : rewrite->gone) free = free && !taken[gone];
    if (!free) continue;
    for (std::size_t gone : rewrite->gone) taken[gone] = true;
    rewrites.push_back(std::move(*rewrite));
  }
  if (rewrites.empty()) return;
  std::set<std::string> moved;  // the Transposes the rewrites add, which the fold must absorb
  std::vector<std::vector<Node>> replacing(graph.nodes.size());
  std::vector<bool> dropped(graph.nodes.size(), false);
  for (Rewrite& rewrite : rewrites) {
    for (std::size_t gone : rewrite.gone) dropped[gone] = true;
    for (const Node& node : rewrite.nodes) {
      if (is_op(node, "Transpose")) moved.insert(node.name);
    }
    replacing[rewrite.at] = std::move(rewrite.nodes);
  }
  // Where the attention cannot read the moved Transpose as a view (its operands' dims are no strided
  // view of the product: an older exporter's [B * H, T, D] heads), the Transpose would stay a copy,
  // of the wider side for the QKV projection. The fold is tried on the rewritten graph, and the graph
  // as it was comes back unless it absorbed every moved Transpose.
  std::vector<Node> before = graph.nodes;
  splice_nodes(graph, std::move(replacing), dropped);
  fold_attention_views(graph);
  eliminate_dead_nodes(graph);
  const bool absorbed = std::none_of(graph.nodes.begin(), graph.nodes.end(), [&](const Node& node) {
    return is_op(node, "Transpose") && moved.count(node.name) > 0;
  });
  if (absorbed) return;
  graph.nodes = std::move(before);
  graph.index_producers();
}

}  // namespace fovea::runtime
