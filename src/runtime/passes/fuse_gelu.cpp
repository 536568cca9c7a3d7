// GELU written out in elementary ops, as exporters write it before opset 20, becomes one Gelu node
// (passes.h says which forms). Five to eight elementwise passes over the activation become one.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "runtime/ops/activation_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

constexpr auto kSqrt2 = static_cast<float>(1.0 / ops::kGeluInvSqrt2);
constexpr auto kSqrt2OverPi = static_cast<float>(ops::kGeluTanhScale);
constexpr auto kTanhCubic = static_cast<float>(ops::kGeluTanhCubic);
constexpr int kGeluOpset = 20;

// Exported constants are rounded to float32 or printed with a few digits (0.7071, 1.4142).
bool near(std::optional<float> value, float expected) {
  return value && std::abs(*value - expected) <= 1e-3f * std::abs(expected);
}

// The pattern's nodes, its input, the node writing its output (among `nodes`) and its form.
struct Match {
  ValueId x = kNoValue;
  std::vector<Node*> nodes;
  Node* output = nullptr;
  bool tanh_form = false;

  // `value` read by one node of `op_type` alone; that node, recorded.
  Node* next(Graph& graph, ValueId value, std::string_view op_type) {
    Node* node = sole_consumer(graph, value);
    if (node == nullptr || !is_op(*node, op_type)) return nullptr;
    nodes.push_back(node);
    return node;
  }
};

// The operand of a binary `node` other than `known` (kNoValue when `known` is not an operand).
ValueId other_operand(const Node& node, ValueId known) {
  if (node.inputs.size() != 2) return kNoValue;
  if (node.inputs[0] == known) return node.inputs[1];
  if (node.inputs[1] == known) return node.inputs[0];
  return kNoValue;
}

// Mul(a, s) or Mul(s, a) with s a scalar near `factor`: a; else kNoValue.
ValueId scaled_operand(const Graph& graph, const Node& node, float factor) {
  if (!is_op(node, "Mul") || node.inputs.size() != 2) return kNoValue;
  if (near(scalar_of(graph, node.inputs[1]), factor)) return node.inputs[0];
  if (near(scalar_of(graph, node.inputs[0]), factor)) return node.inputs[1];
  return kNoValue;
}

// From the Erf or Tanh output `inner` to the GELU's output: Add(inner, 1), then x * that * 0.5 in
// either of the two orders exporters write: Mul(Mul(x, a), 0.5) or Mul(Mul(x, 0.5), a).
bool match_tail(Graph& graph, ValueId inner, Match& match) {
  Node* add = match.next(graph, inner, "Add");
  if (add == nullptr || !near(scalar_of(graph, other_operand(*add, inner)), 1.0f)) return false;
  Node* product = match.next(graph, add->outputs[0], "Mul");
  if (product == nullptr) return false;
  const ValueId other = other_operand(*product, add->outputs[0]);
  if (other == match.x) {
    match.output = match.next(graph, product->outputs[0], "Mul");
    return match.output != nullptr && scaled_operand(graph, *match.output, 0.5f) == product->outputs[0];
  }
  Node* half = other == kNoValue ? nullptr : producer_of(graph, other);
  if (half == nullptr) return false;
  if (scaled_operand(graph, *half, 0.5f) != match.x || sole_consumer(graph, other) != product) return false;
  match.nodes.push_back(half);
  match.output = product;
  return true;
}

// Erf(Div(x, sqrt 2)) or Erf(Mul(x, 1 / sqrt 2)), then the tail.
std::optional<Match> match_erf_form(Graph& graph, Node& scale) {
  Match match;
  if (is_op(scale, "Div") && scale.inputs.size() == 2 && near(scalar_of(graph, scale.inputs[1]), kSqrt2)) {
    match.x = scale.inputs[0];
  } else {
    match.x = scaled_operand(graph, scale, static_cast<float>(ops::kGeluInvSqrt2));
  }
  if (match.x == kNoValue || graph.is_constant(match.x)) return std::nullopt;
  match.nodes.push_back(&scale);
  Node* erf = match.next(graph, scale.outputs[0], "Erf");
  if (erf == nullptr || !match_tail(graph, erf->outputs[0], match)) return std::nullopt;
  return match;
}

// Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2 / pi))), then the tail.
std::optional<Match> match_tanh_form(Graph& graph, Node& cube) {
  Match match{.tanh_form = true};
  if (!is_op(cube, "Pow") || cube.inputs.size() != 2 || !near(scalar_of(graph, cube.inputs[1]), 3.0f))
    return std::nullopt;
  match.x = cube.inputs[0];
  if (graph.is_constant(match.x)) return std::nullopt;
  match.nodes.push_back(&cube);
  Node* cubic = match.next(graph, cube.outputs[0], "Mul");
  if (cubic == nullptr || scaled_operand(graph, *cubic, kTanhCubic) != cube.outputs[0]) return std::nullopt;
  Node* sum = match.next(graph, cubic->outputs[0], "Add");
  if (sum == nullptr || other_operand(*sum, cubic->outputs[0]) != match.x) return std::nullopt;
  Node* scaled = match.next(graph, sum->outputs[0], "Mul");
  if (scaled == nullptr || scaled_operand(graph, *scaled, kSqrt2OverPi) != sum->outputs[0])
    return std::nullopt;
  Node* tanh = match.next(graph, scaled->outputs[0], "Tanh");
  if (tanh == nullptr || !match_tail(graph, tanh->outputs[0], match)) return std::nullopt;
  return match;
}

// The node writing the GELU's output becomes the Gelu node; the others go.
void replace(Graph& graph, const Match& match, std::vector<bool>& removed) {
  Node* last = match.output;
  for (Node* node : match.nodes) {
    if (node == last) continue;
    removed[static_cast<std::size_t>(node - graph.nodes.data())] = true;
    node->inputs.clear();
    node->outputs.clear();
  }
  last->op_type = "Gelu";
  last->inputs = {match.x};
  last->opset = std::max(last->opset, kGeluOpset);
  last->attributes.clear();
  Attribute approximate;
  approximate.kind = Attribute::Kind::kString;
  approximate.s = match.tanh_form ? "tanh" : "none";
  last->attributes["approximate"] = approximate;
}

}  // namespace

void fuse_gelu(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (removed[n]) continue;
    Node& node = graph.nodes[n];
    std::optional<Match> match = match_erf_form(graph, node);
    if (!match) match = match_tanh_form(graph, node);
    if (match) replace(graph, *match, removed);
  }
  erase_nodes(graph, removed);
}

}  // namespace fovea::runtime
