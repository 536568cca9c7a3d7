// y = scale * (conv(x, W) + b - mean) / sqrt(var + eps) + B
//   = conv(x, W * s) + (b - mean) * s + B,   with s = scale / sqrt(var + eps) per output channel.
#include <algorithm>
#include <cmath>

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

void fold(Graph& graph, Node& conv, const Node& bn) {
  const float epsilon = bn.attr_float("epsilon", 1e-5f).is_ok() ? *bn.attr_float("epsilon", 1e-5f) : 1e-5f;
  const float* scale = graph.value(bn.inputs[1]).constant->data<float>();
  const float* shift = graph.value(bn.inputs[2]).constant->data<float>();
  const float* mean = graph.value(bn.inputs[3]).constant->data<float>();
  const float* variance = graph.value(bn.inputs[4]).constant->data<float>();

  Tensor weights = graph.value(conv.inputs[1]).constant->clone();
  const std::int64_t channels = weights.dim(0);
  const std::int64_t per_channel = weights.numel() / channels;
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  Tensor bias = Tensor::allocate(DataType::kFloat32, {channels});
  for (std::int64_t c = 0; c < channels; ++c) {
    const float s = scale[c] / std::sqrt(variance[c] + epsilon);
    float* w = weights.data<float>() + c * per_channel;
    for (std::int64_t i = 0; i < per_channel; ++i) w[i] *= s;
    const float b = has_bias ? graph.value(conv.inputs[2]).constant->data<float>()[c] : 0.0f;
    bias.data<float>()[c] = (b - mean[c]) * s + shift[c];
  }
  const std::string base = conv.name;
  conv.inputs.resize(3, kNoValue);
  conv.inputs[1] = graph.add_constant(base + ".folded_weight", std::move(weights));
  conv.inputs[2] = graph.add_constant(base + ".folded_bias", std::move(bias));
}

}  // namespace

Status fold_batchnorm_into_conv(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    Node& conv = graph.nodes[n];
    if (removed[n] || !foldable_conv(graph, conv)) continue;
    Node* bn = foldable_batchnorm(graph, conv);
    if (bn == nullptr) continue;
    fold(graph, conv, *bn);
    const ValueId result = bn->outputs[0];
    removed[static_cast<std::size_t>(bn - graph.nodes.data())] = true;
    bn->inputs.clear();
    bn->outputs.clear();
    conv.outputs[0] = result;
  }
  erase_nodes(graph, removed);
  return Status::ok();
}

}  // namespace fovea::runtime
