#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "runtime/op.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

constexpr std::int64_t kOnnxFloat = 1;
constexpr std::int64_t kOnnxFloat16 = 10;

// Inputs the op declares float32 whatever its data type (OpDef::float32_inputs): never narrowed.
bool float32_parameter(const Node& node, std::size_t input) {
  const OpDef* def = find_op(node.domain, node.op_type);
  return def != nullptr && input < 32 && ((def->float32_inputs >> input) & 1u) != 0;
}

bool kept_in_float32(const Node& node, const Float16Options& options) {
  const auto& keep = options.keep_float32;
  return std::find(keep.begin(), keep.end(), node.name) != keep.end() ||
         std::find(keep.begin(), keep.end(), node.op_type) != keep.end();
}

Tensor narrowed(const Tensor& from) {
  Tensor out = Tensor::allocate(DataType::kFloat16, from.shape());
  for (std::int64_t i = 0; i < from.numel(); ++i) out.data<Half>()[i] = float_to_half(from.data<float>()[i]);
  return out;
}

class Float16Converter {
 public:
  Float16Converter(Graph& graph, const Float16Options& options) : graph_(graph), options_(options) {}

  void run() {
    std::vector<Node> nodes;
    nodes.reserve(graph_.nodes.size());
    narrow_intermediates();
    for (Node& node : graph_.nodes) {
      const bool half = !kept_in_float32(node, options_);
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        node.inputs[i] = input_for(node.inputs[i], half && !float32_parameter(node, i), nodes);
      }
      // A Cast to float inside the float16 region now produces float16.
      if (node.op_type == "Cast" && node.domain.empty() &&
          graph_.value(node.outputs[0]).type.dtype == DataType::kFloat16) {
        node.attributes["to"].i = kOnnxFloat16;
      }
      std::vector<Node> widening = widen_outputs(node);
      nodes.push_back(std::move(node));
      std::move(widening.begin(), widening.end(), std::back_inserter(nodes));
    }
    graph_.nodes = std::move(nodes);
    graph_.index_producers();
  }

 private:
  // Every float32 value a node produces becomes float16, unless a kept node produces it or it is a
  // graph output (the interface stays float32; widen_outputs adds the Cast). With a float16
  // interface, graph outputs and float32 graph inputs become float16 too.
  void narrow_intermediates() {
    const bool interface = options_.float16_interface;
    for (const Node& node : graph_.nodes) {
      if (kept_in_float32(node, options_)) continue;
      for (ValueId out : node.outputs) {
        if (out != kNoValue && (interface || !graph_.is_graph_output(out)) &&
            graph_.value(out).type.dtype == DataType::kFloat32) {
          graph_.value(out).type.dtype = DataType::kFloat16;
        }
      }
    }
    if (!interface) return;
    for (ValueId in : graph_.inputs) {
      if (!graph_.is_constant(in) && graph_.value(in).type.dtype == DataType::kFloat32) {
        graph_.value(in).type.dtype = DataType::kFloat16;
      }
    }
  }

  // The value a node input should read: `value` itself, or a converted copy (a narrowed constant,
  // or the output of a Cast added once per value and direction).
  ValueId input_for(ValueId value, bool wants_half, std::vector<Node>& nodes) {
    if (value == kNoValue) return value;
    const DataType dtype = graph_.value(value).type.dtype;
    if (dtype == DataType::kFloat32 && wants_half) {
      if (graph_.is_constant(value)) return narrowed_constant(value);
      return cast_of(value, DataType::kFloat16, nodes);
    }
    if (dtype == DataType::kFloat16 && !wants_half && !graph_.is_constant(value)) {
      return cast_of(value, DataType::kFloat32, nodes);
    }
    return value;
  }

  ValueId narrowed_constant(ValueId value) {
    auto [it, inserted] = narrowed_constants_.try_emplace(value, kNoValue);
    if (inserted) {
      const Value& source = graph_.value(value);
      it->second = graph_.add_constant(source.name + "/fp16", narrowed(*source.constant));
    }
    return it->second;
  }

  ValueId cast_of(ValueId value, DataType to, std::vector<Node>& nodes) {
    auto [it, inserted] = casts_.try_emplace({value, to}, kNoValue);
    if (!inserted) return it->second;
    const std::string name = graph_.value(value).name + (to == DataType::kFloat16 ? "/to_fp16" : "/to_fp32");
    ValueType type = graph_.value(value).type;
    type.dtype = to;
    it->second = graph_.add_value(name, type);
    nodes.push_back(cast_node(name, value, it->second, to));
    return it->second;
  }

  Node cast_node(const std::string& name, ValueId from, ValueId to_value, DataType to) const {
    Node cast;
    cast.name = name;
    cast.op_type = "Cast";
    cast.opset = graph_.opsets.count("") ? graph_.opsets.at("") : 13;
    cast.inputs = {from};
    cast.outputs = {to_value};
    Attribute attribute;
    attribute.i = to == DataType::kFloat16 ? kOnnxFloat16 : kOnnxFloat;
    cast.attributes["to"] = attribute;
    return cast;
  }

  // A graph output computed in float16 gets a float16 twin, widened into the output by the Casts
  // this returns.
  std::vector<Node> widen_outputs(Node& node) {
    std::vector<Node> casts;
    for (ValueId& out : node.outputs) {
      if (out == kNoValue || !graph_.is_graph_output(out) || kept_in_float32(node, options_) ||
          graph_.value(out).type.dtype != DataType::kFloat32) {
        continue;
      }
      ValueType type = graph_.value(out).type;
      type.dtype = DataType::kFloat16;
      const ValueId half = graph_.add_value(graph_.value(out).name + "/fp16", type);
      const ValueId graph_output = out;
      out = half;
      casts.push_back(
          cast_node(graph_.value(graph_output).name + "/to_fp32", half, graph_output, DataType::kFloat32));
    }
    return casts;
  }

  Graph& graph_;
  const Float16Options& options_;
  std::map<ValueId, ValueId> narrowed_constants_;
  std::map<std::pair<ValueId, DataType>, ValueId> casts_;
};

}  // namespace

void convert_to_float16(Graph& graph, const Float16Options& options) {
  Float16Converter(graph, options).run();
}

}  // namespace fovea::runtime
