#include <cmath>

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
    }
    if (conv.inputs[3] == kNoValue) {
      conv.inputs.resize(3, kNoValue);
    }
  }
  erase_nodes(graph, removed);
}

}  // namespace fovea::runtime
