#include "runtime/control_flow.h"

#include <fmt/format.h>

namespace fovea::runtime {
namespace {

const Graph* branch_of(const Node& node, std::string_view key) {
  const auto it = node.attributes.find(key);
  return it != node.attributes.end() ? it->second.g.get() : nullptr;
}

// `name`, or `name` after the node's name when the graph has it already (two Ifs whose branches
// name their values alike).
std::string unused_name(const Graph& graph, const std::string& name, const Node& node) {
  if (graph.find_value(name) == kNoValue) return name;
  for (int n = 1;; ++n) {
    std::string candidate = fmt::format("{}/{}/{}", node.name, name, n);
    if (graph.find_value(candidate) == kNoValue) return candidate;
  }
}

// A nested subgraph reads the branch's values by name: where a value was renamed on the way out,
// the copy of the subgraph reads the new name.
std::shared_ptr<const Graph> renamed_captures(const std::shared_ptr<const Graph>& subgraph,
                                              const Graph& branch, const std::vector<ValueId>& to_outer,
                                              const Graph& graph) {
  std::shared_ptr<Graph> copy;
  for (const ValueId captured : subgraph->captured) {
    const ValueId in_branch = branch.find_value(subgraph->value(captured).name);
    if (in_branch == kNoValue || to_outer[static_cast<std::size_t>(in_branch)] == kNoValue) continue;
    const std::string& outer_name = graph.value(to_outer[static_cast<std::size_t>(in_branch)]).name;
    if (outer_name == subgraph->value(captured).name) continue;
    if (!copy) copy = std::make_shared<Graph>(*subgraph);
    copy->value(captured).name = outer_name;
  }
  return copy ? std::shared_ptr<const Graph>(std::move(copy)) : subgraph;
}

Result<bool> condition_of(const Graph& graph, const Node& node) {
  const Tensor& cond = *graph.value(node.inputs[0]).constant;
  if (cond.dtype() != DataType::kBool || cond.numel() != 1) {
    return make_error(StatusCode::kInvalidArgument, graph.where(), node.describe(), ": its condition '",
                      graph.value(node.inputs[0]).name, "' is ", std::string(data_type_name(cond.dtype())),
                      " ", shape_string(cond.shape()), ", not one bool");
  }
  return cond.data<std::uint8_t>()[0] != 0;
}

}  // namespace

bool is_if(const Node& node) {
  return node.op_type == "If" && node.domain.empty();
}

Result<std::vector<Node>> inline_if(Graph& graph, const Node& node) {
  const auto fail = [&](const std::string& why) {
    return make_error(StatusCode::kInvalidArgument, graph.where(), node.describe(), ": ", why);
  };
  FOVEA_ASSIGN_OR_RETURN(const bool taken, condition_of(graph, node));
  const char* key = taken ? "then_branch" : "else_branch";
  const Graph* branch = branch_of(node, key);
  if (branch == nullptr) return fail(fmt::format("it has no {} graph", key));
  if (!branch->inputs.empty()) return fail(fmt::format("its {} takes inputs; an If branch takes none", key));
  if (branch->outputs.size() != node.outputs.size()) {
    return fail(fmt::format("its {} gives {} outputs for the node's {}", key, branch->outputs.size(),
                            node.outputs.size()));
  }
  // Each branch value's id in `graph`.
  std::vector<ValueId> to_outer(branch->values.size(), kNoValue);
  for (const ValueId captured : branch->captured) {
    const std::string& name = branch->value(captured).name;
    const ValueId outer = graph.find_value(name);
    if (outer == kNoValue)
      return fail(fmt::format("its {} reads '{}', which no enclosing graph has", key, name));
    to_outer[static_cast<std::size_t>(captured)] = outer;
  }
  for (std::size_t v = 0; v < branch->values.size(); ++v) {
    const Value& value = branch->values[v];
    if (value.constant)
      to_outer[v] = graph.add_constant(unused_name(graph, value.name, node), *value.constant);
  }
  // A branch node that makes a branch output writes the If's output itself; an output the branch
  // only passes on (an outer value, a constant, one listed twice) goes through an Identity.
  std::vector<std::pair<ValueId, ValueId>> passed_on;  // branch value -> If output
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueId made = branch->outputs[i];
    if (node.outputs[i] == kNoValue) continue;
    const bool made_here = branch->value(made).producer >= 0;
    if (made_here && to_outer[static_cast<std::size_t>(made)] == kNoValue) {
      to_outer[static_cast<std::size_t>(made)] = node.outputs[i];
    } else {
      passed_on.emplace_back(made, node.outputs[i]);
    }
  }
  std::vector<Node> nodes;
  nodes.reserve(branch->nodes.size() + passed_on.size());
  for (const Node& inner : branch->nodes) {
    Node copy = inner;
    copy.name = node.name + "/" + inner.name;
    for (ValueId& in : copy.inputs) {
      if (in != kNoValue) in = to_outer[static_cast<std::size_t>(in)];
    }
    for (ValueId& out : copy.outputs) {
      if (out == kNoValue) continue;
      ValueId& outer = to_outer[static_cast<std::size_t>(out)];
      if (outer == kNoValue) {
        const Value& value = branch->value(out);
        outer = graph.add_value(unused_name(graph, value.name, node), value.type);
      }
      out = outer;
    }
    for (auto& [name, attribute] : copy.attributes) {
      if (attribute.g) attribute.g = renamed_captures(attribute.g, *branch, to_outer, graph);
    }
    nodes.push_back(std::move(copy));
  }
  for (const auto& [made, output] : passed_on) {
    Node identity;
    identity.name = fmt::format("{}/{}_output_{}", node.name, key, graph.value(output).name);
    identity.op_type = "Identity";
    identity.opset = node.opset;
    identity.inputs = {to_outer[static_cast<std::size_t>(made)]};
    identity.outputs = {output};
    nodes.push_back(std::move(identity));
  }
  return nodes;
}

std::vector<ValueType> if_output_types(const Node& node) {
  std::vector<ValueType> types(node.outputs.size());
  const Graph* then_branch = branch_of(node, "then_branch");
  const Graph* else_branch = branch_of(node, "else_branch");
  if (then_branch == nullptr || else_branch == nullptr) return types;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i >= then_branch->outputs.size() || i >= else_branch->outputs.size()) break;
    const ValueType& a = then_branch->value(then_branch->outputs[i]).type;
    const ValueType& b = else_branch->value(else_branch->outputs[i]).type;
    if (a.dtype != b.dtype) continue;
    types[i].dtype = a.dtype;
    if (a.dims && b.dims && a.dims->size() == b.dims->size()) {
      Dims dims;
      for (std::size_t d = 0; d < a.dims->size(); ++d) {
        const Dim& x = (*a.dims)[d];
        const bool same = x.known() && (*b.dims)[d].known() && x.value == (*b.dims)[d].value;
        dims.push_back(same ? x : Dim::unknown());
      }
      types[i].dims = std::move(dims);
    }
  }
  return types;
}

Status refuse_run_time_if(const Graph& graph, const Node& node) {
  return make_error(
      StatusCode::kUnsupported, graph.where(), node.describe(), ": its condition '",
      graph.value(node.inputs[0]).name,
      "' is known only at run time; fovea runs an If whose condition is known when the model "
      "is planned (a constant, or computed from constants and input shapes), keeping the branch "
      "it picks");
}

}  // namespace fovea::runtime
