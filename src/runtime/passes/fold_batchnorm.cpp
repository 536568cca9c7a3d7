// y = scale * (conv(x, W) + b - mean) / sqrt(var + eps) + B
//   = conv(x, W * s) + (b - mean) * s + B,   with s = scale / sqrt(var + eps) per output channel.
// A frozen batch norm (torchvision's FrozenBatchNorm2d in pretrained detectors' backbones, DETR's)
// is exported already reduced to y = conv(x, W) * s + t with constant s and t: the same fold.
#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

bool is_float_constant(const Graph& graph, ValueId id) {
  return graph.is_constant(id) && graph.value(id).constant->dtype() == DataType::kFloat32;
}

// The BatchNormalization reading `conv`'s output alone, in inference form, with constant float
// parameters of one value per output channel; nullptr otherwise.
Node* foldable_batchnorm(Graph& graph, const Node& conv) {
  Node* bn = sole_consumer(graph, conv.outputs[0]);
  if (bn == nullptr || bn->op_type != "BatchNormalization" || !bn->domain.empty() ||
      bn->inputs[0] != conv.outputs[0]) {
    return nullptr;
  }
  if (bn->inputs.size() != 5 ||
      (bn->outputs.size() > 1 &&
       std::any_of(bn->outputs.begin() + 1, bn->outputs.end(), [](ValueId v) { return v != kNoValue; }))) {
    return nullptr;  // training-mode outputs are requested
  }
  if (!bn->attr_int("training_mode", 0).is_ok() || *bn->attr_int("training_mode", 0) != 0) return nullptr;
  const Tensor& weights = *graph.value(conv.inputs[1]).constant;
  for (std::size_t i = 1; i < 5; ++i) {
    if (!is_float_constant(graph, bn->inputs[i]) ||
        graph.value(bn->inputs[i]).constant->numel() != weights.dim(0)) {
      return nullptr;
    }
  }
  return bn;
}

bool foldable_conv(const Graph& graph, const Node& conv) {
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2) return false;
  if (!is_float_constant(graph, conv.inputs[1]) || graph.value(conv.inputs[1]).constant->rank() < 3)
    return false;
  return conv.inputs.size() < 3 || conv.inputs[2] == kNoValue || is_float_constant(graph, conv.inputs[2]);
}

// y = conv(x, W) * scale + shift, one scale and shift per output channel.
struct ChannelAffine {
  std::vector<float> scale, shift;
};

ChannelAffine batchnorm_affine(const Graph& graph, const Node& bn, std::int64_t channels) {
  const float epsilon = bn.attr_float("epsilon", 1e-5f).is_ok() ? *bn.attr_float("epsilon", 1e-5f) : 1e-5f;
  const float* scale = graph.value(bn.inputs[1]).constant->data<float>();
  const float* shift = graph.value(bn.inputs[2]).constant->data<float>();
  const float* mean = graph.value(bn.inputs[3]).constant->data<float>();
  const float* variance = graph.value(bn.inputs[4]).constant->data<float>();
  ChannelAffine affine;
  for (std::int64_t c = 0; c < channels; ++c) {
    const float s = scale[c] / std::sqrt(variance[c] + epsilon);
    affine.scale.push_back(s);
    affine.shift.push_back(shift[c] - mean[c] * s);
  }
  return affine;
}

// The values of a float constant that broadcasts along the channel axis of a conv output of rank
// `rank` alone (a scalar, or dims of 1 but for `channels` there), one per channel; nullopt for any
// other operand.
std::optional<std::vector<float>> per_channel_values(const Graph& graph, ValueId id, int rank,
                                                     std::int64_t channels) {
  if (!is_float_constant(graph, id)) return std::nullopt;
  const Tensor& t = *graph.value(id).constant;
  if (t.rank() > rank) return std::nullopt;
  const int lead = rank - t.rank();  // the output axes the constant's dims start at
  for (int d = 0; d < t.rank(); ++d) {
    const bool channel_axis = lead + d == 1;
    if (t.dim(d) != 1 && !(channel_axis && t.dim(d) == channels)) return std::nullopt;
  }
  const float* v = t.data<float>();
  std::vector<float> values(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) values[static_cast<std::size_t>(c)] = v[t.numel() == 1 ? 0 : c];
  return values;
}

// The frozen batch norm's halves: `op` (the sole reader of the conv's output) a Mul by, an Add of or
// a Sub of per-channel constants.
std::optional<ChannelAffine> constant_affine(const Graph& graph, const Node& op, ValueId conv_output,
                                             int rank, std::int64_t channels) {
  if (!op.domain.empty() || op.inputs.size() != 2 || op.outputs.size() != 1) return std::nullopt;
  const bool conv_first = op.inputs[0] == conv_output;
  if (op.op_type == "Sub" && !conv_first) return std::nullopt;  // c - y would negate y
  if (op.op_type != "Mul" && op.op_type != "Add" && op.op_type != "Sub") return std::nullopt;
  const std::optional<std::vector<float>> values =
      per_channel_values(graph, op.inputs[conv_first ? 1 : 0], rank, channels);
  if (!values) return std::nullopt;
  ChannelAffine affine{std::vector<float>(values->size(), 1.0f), std::vector<float>(values->size(), 0.0f)};
  for (std::size_t c = 0; c < values->size(); ++c) {
    if (op.op_type == "Mul") affine.scale[c] = (*values)[c];
    if (op.op_type == "Add") affine.shift[c] = (*values)[c];
    if (op.op_type == "Sub") affine.shift[c] = -(*values)[c];
  }
  return affine;
}

// conv(x, W) * s + t = conv(x, W * s) + (b * s + t).
void fold(Graph& graph, Node& conv, const ChannelAffine& affine) {
  Tensor weights = graph.value(conv.inputs[1]).constant->clone();
  const std::int64_t channels = weights.dim(0);
  const std::int64_t per_channel = weights.numel() / channels;
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  Tensor bias = Tensor::allocate(DataType::kFloat32, {channels});
  for (std::int64_t c = 0; c < channels; ++c) {
    const float s = affine.scale[static_cast<std::size_t>(c)];
    float* w = weights.data<float>() + c * per_channel;
    for (std::int64_t i = 0; i < per_channel; ++i) w[i] *= s;
    const float b = has_bias ? graph.value(conv.inputs[2]).constant->data<float>()[c] : 0.0f;
    bias.data<float>()[c] = b * s + affine.shift[static_cast<std::size_t>(c)];
  }
  const std::string base = conv.name;
  conv.inputs.resize(3, kNoValue);
  conv.inputs[1] = graph.add_constant(base + ".folded_weight", std::move(weights));
  conv.inputs[2] = graph.add_constant(base + ".folded_bias", std::move(bias));
}

// What reads `conv`'s output alone and folds into it: a BatchNormalization, or a frozen one's Mul,
// Add or Sub of per-channel constants.
std::optional<ChannelAffine> foldable_reader(Graph& graph, const Node& conv, Node*& reader) {
  const Tensor& weights = *graph.value(conv.inputs[1]).constant;
  if (Node* bn = foldable_batchnorm(graph, conv)) {
    reader = bn;
    return batchnorm_affine(graph, *bn, weights.dim(0));
  }
  reader = sole_consumer(graph, conv.outputs[0]);
  if (reader == nullptr) return std::nullopt;
  return constant_affine(graph, *reader, conv.outputs[0], weights.rank(), weights.dim(0));
}

}  // namespace

Status fold_batchnorm_into_conv(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (removed[n] || !foldable_conv(graph, graph.nodes[n])) continue;
    Node* reader = nullptr;
    // A frozen batch norm is two readers in a row (Mul, then Add): each folds in turn.
    while (const std::optional<ChannelAffine> affine = foldable_reader(graph, graph.nodes[n], reader)) {
      Node& conv = graph.nodes[n];
      fold(graph, conv, *affine);
      const ValueId result = reader->outputs[0];
      removed[static_cast<std::size_t>(reader - graph.nodes.data())] = true;
      reader->inputs.clear();
      reader->outputs.clear();
      conv.outputs[0] = result;  // erase_nodes reindexes the producers
    }
  }
  erase_nodes(graph, removed);
  return Status::ok();
}

}  // namespace fovea::runtime
