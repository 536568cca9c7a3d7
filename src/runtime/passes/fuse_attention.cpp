// Scaled dot-product attention written out in ops becomes one fovea.Attention node (passes.h says
// which forms): the scores, their scaling, softmax and the product with V are one kernel on the
// GPU, where they were two batched GEMMs with the scores written out and read back twice between.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

// The chain from the first MatMul to the last, each node read only by the next.
struct Match {
  ValueId q = kNoValue, kt = kNoValue, v = kNoValue, bias = kNoValue;
  float scale = 1.0f;
  std::vector<Node*> nodes;  // every node of the chain but the last MatMul
  Node* last = nullptr;
};

// `value` times a scalar constant: Mul(x, s), Mul(s, x) or Div(x, s). Folds the factor into
// `scale` and returns x, the producer recorded; else `value` itself.
ValueId unscaled(Graph& graph, ValueId value, float& scale, std::vector<Node*>& nodes) {
  Node* node = producer_of(graph, value);
  if (node == nullptr || node->inputs.size() != 2 || sole_consumer(graph, value) == nullptr) return value;
  if (is_op(*node, "Mul")) {
    for (int i = 0; i < 2; ++i) {
      if (const std::optional<float> s = scalar_of(graph, node->inputs[static_cast<std::size_t>(i)])) {
        scale *= *s;
        nodes.push_back(node);
        return node->inputs[static_cast<std::size_t>(1 - i)];
      }
    }
  } else if (is_op(*node, "Div")) {
    if (const std::optional<float> s = scalar_of(graph, node->inputs[1]); s && *s != 0.0f) {
      scale /= *s;
      nodes.push_back(node);
      return node->inputs[0];
    }
  }
  return value;
}

// The head dims the CUDA kernel takes (cuda/ops/attention.cu keeps a row's outputs in registers).
constexpr std::int64_t kMaxHeadDim = 256;

// Q [..., Tq, D], KT [..., D, Tk] and V [..., Tk, Dv] of one rank with the same leading dims (no
// broadcasting between them), D and Dv up to kMaxHeadDim, and a bias of at most their rank.
bool shapes_fit(const Graph& graph, const Match& match) {
  const std::optional<Shape> q = known_shape(graph, match.q);
  const std::optional<Shape> kt = known_shape(graph, match.kt);
  const std::optional<Shape> v = known_shape(graph, match.v);
  if (!q || !kt || !v || q->size() < 3 || kt->size() != q->size() || v->size() != q->size()) return false;
  const std::size_t rank = q->size();
  for (std::size_t d = 0; d + 2 < rank; ++d) {
    if ((*kt)[d] != (*q)[d] || (*v)[d] != (*q)[d]) return false;
  }
  if ((*q)[rank - 1] != (*kt)[rank - 2] || (*kt)[rank - 1] != (*v)[rank - 2]) return false;
  if ((*q)[rank - 1] > kMaxHeadDim || (*v)[rank - 1] > kMaxHeadDim) return false;
  if (match.bias == kNoValue) return true;
  const std::optional<Shape> bias = known_shape(graph, match.bias);
  return bias && bias->size() <= rank;
}

// Softmax over the last axis (opset 13's meaning; before it, axis = rank - 1 flattens to the same).
bool last_axis_softmax(const Graph& graph, const Node& node) {
  if (!is_op(node, "Softmax") || node.inputs.size() != 1) return false;
  const auto& dims = graph.value(node.inputs[0]).type.dims;
  const Result<std::int64_t> axis = node.attr_int("axis", node.opset >= 13 ? -1 : 1);
  if (!dims || !axis.is_ok()) return false;
  const auto rank = static_cast<std::int64_t>(dims->size());
  return *axis == -1 || *axis == rank - 1;
}

// `scores` as Q KT times scalars: the first MatMul and the scalings around it, into `match`.
bool match_scores(Graph& graph, ValueId scores, Match& match) {
  scores = unscaled(graph, scores, match.scale, match.nodes);
  Node* qk = producer_of(graph, scores);
  if (qk == nullptr || !is_op(*qk, "MatMul") || sole_consumer(graph, scores) == nullptr) return false;
  match.nodes.push_back(qk);
  match.q = unscaled(graph, qk->inputs[0], match.scale, match.nodes);
  match.kt = unscaled(graph, qk->inputs[1], match.scale, match.nodes);
  return true;
}

bool all_zero(const Graph& graph, ValueId id) {
  if (!graph.is_constant(id) || graph.value(id).constant->dtype() != DataType::kFloat32) return false;
  const Tensor& t = *graph.value(id).constant;
  const float* v = t.data<float>();
  return std::all_of(v, v + t.numel(), [](float x) { return x == 0.0f; });
}

// The chain before `softmax`: the scores' MatMul and scalings, and an additive bias (relative
// positions, a mask) as Add(scores, bias) either way round, where the scores side leads to the first
// MatMul and the sum has the scores' shape (the bias broadcasts into them, not they into it).
std::optional<Match> match_scores_and_bias(Graph& graph, const Node& softmax, Match match) {
  const ValueId softmax_input = softmax.inputs[0];
  if (Node* add = producer_of(graph, softmax_input); add != nullptr && is_op(*add, "Add") &&
                                                     add->inputs.size() == 2 &&
                                                     sole_consumer(graph, softmax_input) != nullptr) {
    for (int i = 0; i < 2; ++i) {
      Match tried = match;
      tried.nodes.push_back(add);
      tried.bias = add->inputs[static_cast<std::size_t>(1 - i)];
      const ValueId scores = add->inputs[static_cast<std::size_t>(i)];
      if (graph.value(scores).type.dims == graph.value(softmax_input).type.dims &&
          sole_consumer(graph, scores) == add && match_scores(graph, scores, tried)) {
        // A mask of zeros (Hugging Face's ViT builds one for a batch without padding) adds nothing;
        // without it the node can run on cuDNN's fused attention.
        if (all_zero(graph, tried.bias)) tried.bias = kNoValue;
        return shapes_fit(graph, tried) ? std::optional(tried) : std::nullopt;
      }
    }
  }
  if (!match_scores(graph, softmax_input, match)) return std::nullopt;
  if (!shapes_fit(graph, match)) return std::nullopt;
  return match;
}

// The guard Hugging Face's attention exports after its softmax, Where(IsNaN(p), 0, p) (rows that a
// mask took entirely come out zero instead of NaN): its two nodes, if `softmax` is followed by it.
std::optional<std::pair<Node*, Node*>> nan_guard(Graph& graph, const Node& softmax) {
  const ValueId p = softmax.outputs[0];
  const std::vector<Node*> users = readers(graph, p);
  if (users.size() != 2 || graph.is_graph_output(p)) return std::nullopt;
  Node* is_nan = is_op(*users[0], "IsNaN") ? users[0] : users[1];
  Node* where = is_nan == users[0] ? users[1] : users[0];
  if (!is_op(*is_nan, "IsNaN") || !is_op(*where, "Where") || where->inputs.size() != 3 ||
      where->inputs[0] != is_nan->outputs[0] || where->inputs[2] != p ||
      sole_consumer(graph, is_nan->outputs[0]) != where || scalar_of(graph, where->inputs[1]) != 0.0f) {
    return std::nullopt;
  }
  return std::pair{is_nan, where};
}

// Whether the guard can go: without a bias, or with a constant one whose every row (last axis)
// holds a value that stays finite in float16, finite scores give a softmax without NaN. (NaN or
// infinite activations are the one case where the fused node's output differs from the guarded
// ops'.)
bool guard_is_idle(const Graph& graph, ValueId bias) {
  if (bias == kNoValue) return true;
  if (!graph.is_constant(bias) || graph.value(bias).constant->dtype() != DataType::kFloat32) return false;
  const Tensor& t = *graph.value(bias).constant;
  const std::int64_t row = t.rank() == 0 ? 1 : t.dim(t.rank() - 1);
  const float* v = t.data<float>();
  constexpr float kFloat16Max = 65504.0f;
  for (std::int64_t start = 0; start < t.numel(); start += row) {
    bool finite_in_row = false;
    for (std::int64_t i = start; i < start + row; ++i) {
      if (!std::isfinite(v[i])) return false;
      finite_in_row = finite_in_row || std::abs(v[i]) <= kFloat16Max;
    }
    if (!finite_in_row) return false;
  }
  return true;
}

// From a Softmax back to its MatMul, and forward (through a NaN guard that cannot fire) to the
// MatMul with V.
std::optional<Match> match_at(Graph& graph, Node& softmax) {
  if (!last_axis_softmax(graph, softmax)) return std::nullopt;
  Match match;
  const std::optional<std::pair<Node*, Node*>> guard = nan_guard(graph, softmax);
  const ValueId probabilities = guard ? guard->second->outputs[0] : softmax.outputs[0];
  Node* product = sole_consumer(graph, probabilities);
  if (product == nullptr || !is_op(*product, "MatMul") || product->inputs[0] != probabilities ||
      product->inputs[1] == probabilities)
    return std::nullopt;
  match.last = product;
  match.v = product->inputs[1];
  match.nodes.push_back(&softmax);
  if (guard) match.nodes.insert(match.nodes.end(), {guard->first, guard->second});
  const std::optional<Match> found = match_scores_and_bias(graph, softmax, match);
  if (!found || (guard && !guard_is_idle(graph, found->bias))) return std::nullopt;
  return found;
}

// The last MatMul becomes the Attention node; the rest of the chain goes.
void replace(Graph& graph, const Match& match, std::vector<bool>& removed) {
  for (Node* node : match.nodes) {
    removed[static_cast<std::size_t>(node - graph.nodes.data())] = true;
    node->inputs.clear();
    node->outputs.clear();
  }
  Node& attention = *match.last;
  attention.domain = "fovea";
  attention.op_type = "Attention";
  attention.inputs = {match.q, match.kt, match.v};
  if (match.bias != kNoValue) attention.inputs.push_back(match.bias);
  attention.attributes.clear();
  Attribute scale;
  scale.kind = Attribute::Kind::kFloat;
  scale.f = match.scale;
  attention.attributes["scale"] = scale;
}

}  // namespace

void fuse_attention(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (removed[n]) continue;
    if (std::optional<Match> match = match_at(graph, graph.nodes[n])) replace(graph, *match, removed);
  }
  erase_nodes(graph, removed);
}

}  // namespace fovea::runtime
