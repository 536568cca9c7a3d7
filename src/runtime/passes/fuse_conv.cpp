#include <cmath>
#include <optional>
#include <utility>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

bool same_known_shape(const Graph& graph, ValueId a, ValueId b) {
  const auto& da = graph.value(a).type.dims;
  const auto& db = graph.value(b).type.dims;
  return da && db && all_known(*da) && *da == *db && graph.value(a).type.dtype == graph.value(b).type.dtype;
}

// The residual operand when `add` adds a same-shape tensor to `conv_out`; kNoValue otherwise.
ValueId residual_operand(const Graph& graph, const Node& add, ValueId conv_out) {
  if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2) return kNoValue;
  const ValueId other = add.inputs[0] == conv_out ? add.inputs[1] : add.inputs[0];
  if (other == conv_out || !same_known_shape(graph, other, conv_out)) return kNoValue;
  return other;
}

// Copies the activation's parameters into FusedConv attributes; false if it cannot be fused.
bool take_activation(const Graph& graph, const Node& act, Node& fused) {
  if (!act.domain.empty()) return false;
  auto set_string = [&](const char* value) {
    Attribute a;
    a.kind = Attribute::Kind::kString;
    a.s = value;
    fused.attributes["activation"] = a;
  };
  auto set_float = [&](const char* key, float value) {
    Attribute a;
    a.kind = Attribute::Kind::kFloat;
    a.f = value;
    fused.attributes[key] = a;
  };
  if (act.op_type == "Relu" || act.op_type == "Sigmoid" || act.op_type == "HardSwish") {
    set_string(act.op_type.c_str());
    return true;
  }
  if (act.op_type == "LeakyRelu") {
    auto alpha = act.attr_float("alpha", 0.01f);
    if (!alpha.is_ok()) return false;
    set_string("LeakyRelu");
    set_float("activation_alpha", *alpha);
    return true;
  }
  if (act.op_type == "Clip") {
    // Bounds must be known now: opset 11+ gives them as (constant) inputs.
    float bounds[2] = {-INFINITY, INFINITY};
    for (std::size_t i = 1; i < act.inputs.size() && i < 3; ++i) {
      if (act.inputs[i] == kNoValue) continue;
      if (!graph.is_constant(act.inputs[i]) ||
          graph.value(act.inputs[i]).constant->dtype() != DataType::kFloat32)
        return false;
      bounds[i - 1] = graph.value(act.inputs[i]).constant->data<float>()[0];
    }
    set_string("Clip");
    set_float("activation_min", bounds[0]);
    set_float("activation_max", bounds[1]);
    return true;
  }
  return false;
}

// SiLU written out, x * Sigmoid(x) (PyTorch's export of nn.SiLU, EfficientNet's and RegNet-Y's
// activation): when `value` is read by exactly a Sigmoid of it and a Mul of it by that Sigmoid,
// and the Sigmoid's output by that Mul alone, the two nodes; else none.
std::optional<std::pair<Node*, Node*>> silu_of(Graph& graph, ValueId value) {
  if (graph.is_graph_output(value)) return std::nullopt;
  Node* sigmoid = nullptr;
  Node* product = nullptr;
  for (Node* node : readers(graph, value)) {
    if (node->domain.empty() && node->op_type == "Sigmoid" && sigmoid == nullptr) {
      sigmoid = node;
    } else if (node->domain.empty() && node->op_type == "Mul" && product == nullptr) {
      product = node;
    } else {
      return std::nullopt;
    }
  }
  if (sigmoid == nullptr || product == nullptr || product->inputs.size() != 2) return std::nullopt;
  const ValueId gate = sigmoid->outputs[0];
  const bool pairs = (product->inputs[0] == value && product->inputs[1] == gate) ||
                     (product->inputs[1] == value && product->inputs[0] == gate);
  if (!pairs || sole_consumer(graph, gate) != product) return std::nullopt;
  return std::pair{sigmoid, product};
}

bool is_fused_conv(const Node& node) {
  return node.domain == "fovea" && node.op_type == "FusedConv";
}

// The bias constant of `conv` (float32, one value per output channel), or nullptr.
const Tensor* channel_bias(const Graph& graph, const Node& conv) {
  if (conv.inputs.size() < 3 || conv.inputs[2] == kNoValue || !graph.is_constant(conv.inputs[2]))
    return nullptr;
  const Tensor& bias = *graph.value(conv.inputs[2]).constant;
  return bias.dtype() == DataType::kFloat32 && bias.rank() == 1 ? &bias : nullptr;
}

// A FusedConv that only adds its bias (no residual, no activation) and whose output is read by
// nothing but another FusedConv's residual input: ResNet's shortcut and expansion convolutions,
// one of which absorbed the block's Add and ReLU. Its bias moves into the reader's bias
// (conv_a + b_a + (conv_b + b_b) = conv_a + (b_a + b_b) + conv_b), so it runs as a bare convolution
// with no epilogue pass over its output, the largest tensors of the network.
void move_residual_biases(Graph& graph) {
  for (Node& conv : graph.nodes) {
    const Tensor* bias = channel_bias(graph, conv);
    if (!is_fused_conv(conv) || bias == nullptr || conv.inputs.size() > 3 || conv.has_attribute("activation"))
      continue;
    Node* reader = sole_consumer(graph, conv.outputs[0]);
    if (reader == nullptr || !is_fused_conv(*reader) || reader->inputs.size() < 4 ||
        reader->inputs[3] != conv.outputs[0] || reader->inputs[0] == conv.outputs[0]) {
      continue;
    }
    Tensor sum = bias->clone();
    if (const Tensor* reader_bias = channel_bias(graph, *reader)) {
      if (reader_bias->numel() != sum.numel()) continue;
      for (std::int64_t c = 0; c < sum.numel(); ++c) sum.data<float>()[c] += reader_bias->data<float>()[c];
    } else if (reader->inputs[2] != kNoValue) {
      continue;  // a bias that is not a float32 constant
    }
    reader->inputs[2] = graph.add_constant(reader->name + ".residual_bias", std::move(sum));
    conv.inputs.resize(2);
  }
}

}  // namespace

void fuse_conv_epilogues(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    Node& conv = graph.nodes[n];
    if (removed[n] || conv.op_type != "Conv" || !conv.domain.empty() ||
        graph.value(conv.outputs[0]).type.dtype != DataType::kFloat32) {
      continue;
    }
    conv.domain = "fovea";
    conv.op_type = "FusedConv";
    conv.inputs.resize(4, kNoValue);
    // Absorb a residual Add, then an activation; each must be the sole reader of what precedes it.
    Node* next = sole_consumer(graph, conv.outputs[0]);
    if (next != nullptr) {
      const ValueId residual = residual_operand(graph, *next, conv.outputs[0]);
      if (residual != kNoValue && graph.value(residual).producer < static_cast<int>(n)) {
        conv.inputs[3] = residual;
        conv.outputs[0] = next->outputs[0];
        removed[static_cast<std::size_t>(next - graph.nodes.data())] = true;
        next->inputs.clear();
        next->outputs.clear();
        next = sole_consumer(graph, conv.outputs[0]);
      }
    }
    if (next != nullptr && next->inputs[0] == conv.outputs[0] && take_activation(graph, *next, conv)) {
      conv.outputs[0] = next->outputs[0];
      removed[static_cast<std::size_t>(next - graph.nodes.data())] = true;
      next->inputs.clear();
      next->outputs.clear();
    } else if (const auto silu = next == nullptr ? silu_of(graph, conv.outputs[0]) : std::nullopt) {
      Attribute activation;
      activation.kind = Attribute::Kind::kString;
      activation.s = "Silu";
      conv.attributes["activation"] = activation;
      conv.outputs[0] = silu->second->outputs[0];
      for (Node* gone : {silu->first, silu->second}) {
        removed[static_cast<std::size_t>(gone - graph.nodes.data())] = true;
        gone->inputs.clear();
        gone->outputs.clear();
      }
    }
    if (conv.inputs[3] == kNoValue) {
      conv.inputs.resize(3, kNoValue);
    }
  }
  erase_nodes(graph, removed);
  move_residual_biases(graph);
}

}  // namespace fovea::runtime
