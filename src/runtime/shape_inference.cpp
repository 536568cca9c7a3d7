#include "runtime/shape_inference.h"

#include <deque>
#include <iterator>

#include <fmt/format.h>

#include "runtime/control_flow.h"
#include "runtime/evaluate.h"

namespace fovea::runtime {

namespace {

// Keeps what the model declared where inference knows less (a symbolic or unknown dim).
ValueType merge_declared(ValueType inferred, const ValueType& declared) {
  if (!inferred.dims) {
    inferred.dims = declared.dims;
  } else if (declared.dims && declared.dims->size() == inferred.dims->size()) {
    for (std::size_t d = 0; d < inferred.dims->size(); ++d) {
      Dim& dim = (*inferred.dims)[d];
      if (!dim.known() && ((*declared.dims)[d].known() || dim.symbol.empty())) {
        dim = (*declared.dims)[d];
      }
    }
  }
  return inferred;
}

bool shape_is_known(const ValueType& type) {
  return type.dims && all_known(*type.dims);
}

// Whether the node's outputs can be computed now, without the graph's inputs.
bool foldable(const Graph& graph, const Node& node, const std::vector<ValueType>& outputs) {
  if (node.domain == "fovea") {
    return false;  // fused ops only exist after folding
  }
  std::size_t bytes = 0;
  for (const ValueType& out : outputs) {
    if (!shape_is_known(out)) return false;
    bytes += static_cast<std::size_t>(element_count(shape_of(*out.dims))) * data_type_size(out.dtype);
  }
  if (bytes > kMaxFoldedBytes) return false;
  const bool reads_only_shape = node.op_type == "Shape" || node.op_type == "Size";
  for (ValueId in : node.inputs) {
    if (in == kNoValue || graph.is_constant(in)) continue;
    if (reads_only_shape && shape_is_known(graph.value(in).type)) continue;
    return false;
  }
  return true;
}

// Evaluates a foldable node; Shape and Size see a tensor with the right shape and no data.
Result<std::vector<Tensor>> fold(const Graph& graph, const Node& node) {
  static std::byte no_data[1];
  std::vector<Tensor> inputs;
  for (ValueId in : node.inputs) {
    if (in == kNoValue) {
      inputs.emplace_back();
    } else if (graph.is_constant(in)) {
      inputs.push_back(*graph.value(in).constant);
    } else {
      const ValueType& type = graph.value(in).type;
      inputs.push_back(Tensor::borrow(type.dtype, shape_of(*type.dims), no_data));
    }
  }
  return evaluate_node(&graph, node, inputs, heap_allocator());
}

// A control-flow node that stays (run by the CPU executor), its outputs typed as given.
Status keep_typed(Graph& graph, Node node, const std::vector<ValueType>& types, std::vector<Node>& kept) {
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] != kNoValue)
      graph.value(node.outputs[i]).type = merge_declared(types[i], graph.value(node.outputs[i]).type);
  }
  kept.push_back(std::move(node));
  return Status::ok();
}

// An If whose condition is constant gives way to its branch's nodes, which are inferred (and
// folded) next; one whose condition only the run knows stays, typed from its branches.
// `pending` holds the nodes still to infer, in order.
Status infer_if(Graph& graph, Node& node, std::deque<Node>& pending, std::vector<Node>& kept) {
  if (node.inputs.empty() || node.inputs[0] == kNoValue || node.outputs.empty()) {
    return make_error(StatusCode::kInvalidArgument, graph.where(), node.describe(),
                      ": an If needs a condition and at least one output");
  }
  if (graph.is_constant(node.inputs[0])) {
    FOVEA_ASSIGN_OR_RETURN(std::vector<Node> branch, inline_if(graph, node));
    pending.insert(pending.begin(), std::make_move_iterator(branch.begin()),
                   std::make_move_iterator(branch.end()));
    return Status::ok();
  }
  const std::vector<ValueType> types = if_output_types(node);
  return keep_typed(graph, std::move(node), types, kept);
}

}  // namespace

Status infer_shapes(Graph& graph, FoldConstants fold_constants) {
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  std::deque<Node> pending(std::make_move_iterator(graph.nodes.begin()),
                           std::make_move_iterator(graph.nodes.end()));
  graph.nodes.clear();
  while (!pending.empty()) {
    Node node = std::move(pending.front());
    pending.pop_front();
    if (is_if(node)) {
      FOVEA_TRY(infer_if(graph, node, pending, kept));
      continue;
    }
    if (is_loop(node) || is_scan(node)) {
      FOVEA_ASSIGN_OR_RETURN(const std::vector<ValueType> types,
                             is_loop(node) ? loop_output_types(graph, node) : scan_output_types(graph, node));
      FOVEA_TRY(keep_typed(graph, std::move(node), types, kept));
      continue;
    }
    std::vector<ValueType> types;
    std::vector<const Tensor*> values;
    for (ValueId in : node.inputs) {
      types.push_back(in == kNoValue ? ValueType{} : graph.value(in).type);
      values.push_back(graph.is_constant(in) ? &*graph.value(in).constant : nullptr);
    }
    FOVEA_ASSIGN_OR_RETURN(std::vector<ValueType> outputs, infer_node(&graph, node, types, values));
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] == kNoValue) continue;
      Value& value = graph.value(node.outputs[i]);
      if (graph.is_graph_output(node.outputs[i]) && value.type.dims.has_value() &&
          value.type.dtype != outputs[i].dtype) {
        return make_error(StatusCode::kInvalidArgument, graph.where(), node.describe(),
                          ": type mismatch: output '", value.name, "' is declared ",
                          std::string(data_type_name(value.type.dtype)), " but the op produces ",
                          std::string(data_type_name(outputs[i].dtype)));
      }
      value.type = merge_declared(outputs[i], value.type);
    }
    if (fold_constants == FoldConstants::kYes && foldable(graph, node, outputs)) {
      FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> results, fold(graph, node));
      for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] == kNoValue) continue;
        Value& value = graph.value(node.outputs[i]);
        value.constant = std::move(results[i]);
        value.type = ValueType{value.constant->dtype(), dims_of(value.constant->shape())};
      }
      continue;  // the node is gone; its outputs are constants now
    }
    kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
  graph.index_producers();
  return Status::ok();
}

}  // namespace fovea::runtime
