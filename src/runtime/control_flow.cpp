#include "runtime/control_flow.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "runtime/evaluate.h"

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

// Loops end on their trip count or their condition; one with neither would never end.
constexpr std::int64_t kNoTripCount = -1;

template <typename... Parts>
Status node_error(const Graph* graph, const Node& node, Parts&&... parts) {
  return make_error(StatusCode::kInvalidArgument, graph == nullptr ? std::string() : graph->where(),
                    node.describe(), ": ", std::forward<Parts>(parts)...);
}

Result<bool> bool_scalar(const Graph* graph, const Node& node, const Tensor& value, std::string_view what) {
  if (value.dtype() != DataType::kBool || value.numel() != 1) {
    return node_error(graph, node, what, " is ", std::string(data_type_name(value.dtype())), " ",
                      shape_string(value.shape()), ", not one bool");
  }
  return value.data<std::uint8_t>()[0] != 0;
}

// The plan-time condition of an If being inlined.
Result<bool> condition_of(const Graph& graph, const Node& node) {
  return bool_scalar(&graph, node, *graph.value(node.inputs[0]).constant,
                     "its condition '" + graph.value(node.inputs[0]).name + "'");
}

// The outer values a node's subgraphs read, by name: the inputs after its own `explicit_count`,
// in the order the loader listed them (each subgraph in attribute order, each name once).
Result<std::map<std::string, Tensor, std::less<>>> outer_values(const Graph* graph, const Node& node,
                                                                std::size_t explicit_count,
                                                                const std::vector<Tensor>& inputs) {
  std::vector<std::string> names;
  for (const auto& [key, attribute] : node.attributes) {
    if (!attribute.g) continue;
    for (const ValueId captured : attribute.g->captured) {
      const std::string& name = attribute.g->value(captured).name;
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  if (inputs.size() != explicit_count + names.size()) {
    return node_error(graph, node,
                      fmt::format("has {} inputs; its own {} and the {} outer values its "
                                  "subgraphs read were expected",
                                  inputs.size(), explicit_count, names.size()));
  }
  std::map<std::string, Tensor, std::less<>> outer;
  for (std::size_t i = 0; i < names.size(); ++i) outer.emplace(names[i], inputs[explicit_count + i]);
  return outer;
}

// A tensor the caller owns: `value` itself where the subgraph made it, a copy where it is one of
// the node's inputs or a constant passed on (the enclosing executor may reuse their memory).
Tensor detached(const Tensor& value, const std::vector<Tensor>& inputs) {
  const bool shared = value.numel() > 0 && std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& in) {
                        return in.numel() > 0 && in.raw() == value.raw();
                      });
  return shared ? value.clone() : value;
}

// "m.onnx: node 'paste' (Loop), body, iteration 3": the context of an error inside a subgraph,
// whose own nodes name no model.
std::string where_in(const Graph* graph, const Node& node, const std::string& part) {
  return (graph == nullptr ? std::string() : graph->where()) + node.describe() + ", " + part;
}

// Runs `subgraph` node by node with the CPU kernels: `inputs` bound to its graph inputs, the outer
// values it reads from `outer`. Gives its outputs.
// Nodes marked in `skip` do not run (their outputs stay empty); the values in `also` are given after
// the outputs.
Result<std::vector<Tensor>> run_subgraph(const Graph& subgraph, const std::vector<Tensor>& inputs,
                                         const std::map<std::string, Tensor, std::less<>>& outer,
                                         const std::vector<bool>& skip = {},
                                         const std::vector<ValueId>& also = {}) {
  std::vector<Tensor> values(subgraph.values.size());
  for (std::size_t v = 0; v < subgraph.values.size(); ++v) {
    if (subgraph.values[v].constant) values[v] = *subgraph.values[v].constant;
  }
  for (std::size_t i = 0; i < subgraph.inputs.size(); ++i) {
    values[static_cast<std::size_t>(subgraph.inputs[i])] = inputs[i];
  }
  for (const ValueId captured : subgraph.captured) {
    const auto found = outer.find(subgraph.value(captured).name);
    if (found == outer.end()) {
      return make_error(StatusCode::kInvalidArgument, "the subgraph reads '", subgraph.value(captured).name,
                        "', which its node was not given");
    }
    values[static_cast<std::size_t>(captured)] = found->second;
  }
  for (std::size_t n = 0; n < subgraph.nodes.size(); ++n) {
    if (n < skip.size() && skip[n]) continue;
    FOVEA_TRY(evaluate_into(&subgraph, subgraph.nodes[n], values, heap_allocator()));
  }
  std::vector<Tensor> outputs;
  for (const ValueId out : subgraph.outputs) outputs.push_back(values[static_cast<std::size_t>(out)]);
  for (const ValueId id : also) outputs.push_back(values[static_cast<std::size_t>(id)]);
  return outputs;
}

Result<std::vector<Tensor>> run_if(const Graph* graph, const Node& node, const std::vector<Tensor>& inputs) {
  if (inputs.empty() || inputs[0].empty_storage()) return node_error(graph, node, "an If needs a condition");
  FOVEA_ASSIGN_OR_RETURN(const bool taken, bool_scalar(graph, node, inputs[0], "its condition"));
  const char* key = taken ? "then_branch" : "else_branch";
  const Graph* branch = branch_of(node, key);
  if (branch == nullptr) return node_error(graph, node, "it has no ", key, " graph");
  if (!branch->inputs.empty() || branch->outputs.size() != node.outputs.size()) {
    return node_error(graph, node,
                      fmt::format("its {} takes {} inputs and gives {} outputs; an If branch "
                                  "takes none and gives the node's {}",
                                  key, branch->inputs.size(), branch->outputs.size(), node.outputs.size()));
  }
  FOVEA_ASSIGN_OR_RETURN(const auto outer, outer_values(graph, node, 1, inputs));
  Result<std::vector<Tensor>> outputs = run_subgraph(*branch, {}, outer);
  if (!outputs.is_ok()) return outputs.status().with_context(where_in(graph, node, key));
  for (Tensor& out : *outputs) out = detached(out, inputs);
  return outputs;
}

// Where a Loop's inputs and outputs are: [M, cond, carried...] in, [carried..., scans...] out; the
// body takes [iteration, cond, carried...] and gives [cond, carried..., scans...].
struct LoopLayout {
  const Graph* body = nullptr;
  std::size_t carried = 0;
  std::size_t scans = 0;
};

Result<LoopLayout> loop_layout(const Graph* graph, const Node& node) {
  LoopLayout layout;
  layout.body = branch_of(node, "body");
  if (layout.body == nullptr) return node_error(graph, node, "a Loop needs a body graph");
  const std::size_t body_inputs = layout.body->inputs.size();
  const std::size_t body_outputs = layout.body->outputs.size();
  if (body_inputs < 2 || body_outputs < body_inputs - 1) {
    return node_error(graph, node,
                      fmt::format("its body takes {} inputs and gives {} outputs; a Loop body "
                                  "takes (iteration, condition, carried...) and gives "
                                  "(condition, carried..., scan outputs...)",
                                  body_inputs, body_outputs));
  }
  layout.carried = body_inputs - 2;
  layout.scans = body_outputs - 1 - layout.carried;
  if (node.outputs.size() != layout.carried + layout.scans) {
    return node_error(graph, node,
                      fmt::format("has {} outputs; its body carries {} values and scans {}",
                                  node.outputs.size(), layout.carried, layout.scans));
  }
  return layout;
}

// Bytes of the dims before `axis` (as a count of rows) and from after it (one row), for copies.
struct AxisCut {
  std::int64_t outer = 1;
  std::size_t inner_bytes = 0;
};

AxisCut cut_at(const Shape& shape, std::size_t axis, std::size_t element_bytes, bool keep_axis) {
  AxisCut cut{1, element_bytes};
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) cut.outer *= shape[d];
    if (d > axis || (keep_axis && d == axis)) cut.inner_bytes *= static_cast<std::size_t>(shape[d]);
  }
  return cut;
}

// Slice `index` of `in` along `axis`, the axis removed.
Tensor slice_along(const Tensor& in, std::size_t axis, std::int64_t index) {
  Shape shape = in.shape();
  const std::int64_t length = shape[axis];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  Tensor out = Tensor::allocate(in.dtype(), shape);
  const AxisCut cut = cut_at(in.shape(), axis, data_type_size(in.dtype()), false);
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (std::int64_t o = 0; o < cut.outer; ++o) {
    std::copy_n(src + static_cast<std::size_t>(o * length + index) * cut.inner_bytes, cut.inner_bytes,
                dst + static_cast<std::size_t>(o) * cut.inner_bytes);
  }
  return out;
}

// Each iteration's element stacked along `axis` of the result (reversed: the last iteration first).
// With no iteration the element has the body's declared shape where it is known (else none) and
// its declared type.
Result<Tensor> stacked_along(const Graph* graph, const Node& node, std::size_t output,
                             const std::vector<Tensor>& parts, std::int64_t axis_attr, bool reversed,
                             const ValueType& declared) {
  Shape element = parts.empty() ? Shape() : parts[0].shape();
  if (parts.empty() && declared.dims && all_known(*declared.dims)) element = shape_of(*declared.dims);
  const auto rank = static_cast<std::int64_t>(element.size()) + 1;
  const std::int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 0 || axis >= rank) {
    return node_error(graph, node, fmt::format("scan output axis {} is outside rank {}", axis_attr, rank));
  }
  Shape shape = element;
  shape.insert(shape.begin() + axis, static_cast<std::int64_t>(parts.size()));
  std::int64_t elements = 1;
  for (const std::int64_t d : shape) {
    if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxTensorElements) {
      return node_error(
          graph, node,
          fmt::format("scan output {} would be {}: more than 2^60 elements", output, shape_string(shape)));
    }
  }
  Tensor out = Tensor::allocate(parts.empty() ? declared.dtype : parts[0].dtype(), shape);
  const AxisCut cut = cut_at(element, static_cast<std::size_t>(axis), data_type_size(out.dtype()), true);
  const auto count = static_cast<std::int64_t>(parts.size());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (std::int64_t t = 0; t < count; ++t) {
    const Tensor& part = parts[static_cast<std::size_t>(t)];
    if (part.shape() != element || part.dtype() != out.dtype()) {
      return node_error(graph, node,
                        fmt::format("scan output {} is {} in iteration {} but {} in the first", output,
                                    shape_string(part.shape()), t, shape_string(element)));
    }
    const std::int64_t position = reversed ? count - 1 - t : t;
    const auto* src = static_cast<const std::byte*>(part.raw());
    for (std::int64_t o = 0; o < cut.outer; ++o) {
      std::copy_n(src + static_cast<std::size_t>(o) * cut.inner_bytes, cut.inner_bytes,
                  dst + static_cast<std::size_t>(o * count + position) * cut.inner_bytes);
    }
  }
  return out;
}

// A carried value the body only appends to: carried_out = Concat(carried_in, piece) on axis 0, and
// nothing else reads carried_in or carried_out. PyTorch writes `res = torch.cat((res, x))` in a
// scripted loop so (Mask R-CNN pastes its masks that way); run as written, each iteration copies
// the whole value, a cost that grows with the square of the iterations. The loop instead skips that
// Concat, keeps each iteration's piece and joins them once at the end, with the same Concat.
struct Append {
  int concat = -1;  // the Concat's index in the body
  ValueId piece = kNoValue;
};

std::optional<Append> append_of(const Graph& body, std::size_t carried) {
  const ValueId in = body.inputs[2 + carried];
  const ValueId out = body.outputs[1 + carried];
  const auto made = std::find_if(body.nodes.begin(), body.nodes.end(), [&](const Node& n) {
    return std::find(n.outputs.begin(), n.outputs.end(), out) != n.outputs.end();
  });
  if (made == body.nodes.end()) return std::nullopt;
  const Node& concat = *made;
  const auto producer = static_cast<int>(made - body.nodes.begin());
  if (concat.op_type != "Concat" || !concat.domain.empty() || concat.inputs.size() != 2 ||
      concat.inputs[0] != in || concat.inputs[1] == in) {
    return std::nullopt;
  }
  const Result<std::int64_t> axis = concat.attr_int("axis");
  const std::vector<int> uses = body.use_counts();
  if (!axis.is_ok() || *axis != 0 || uses[static_cast<std::size_t>(in)] != 1 ||
      uses[static_cast<std::size_t>(out)] != 1) {
    return std::nullopt;
  }
  return Append{producer, concat.inputs[1]};
}

// The initial value and every piece, joined by the body's Concat itself (its checks, its copy).
Result<Tensor> joined(const Graph& body, const Append& append, const Tensor& initial,
                      std::vector<Tensor> pieces) {
  if (pieces.empty()) return initial.clone();
  Node concat = body.nodes[static_cast<std::size_t>(append.concat)];
  concat.inputs.assign(pieces.size() + 1, append.piece);
  pieces.insert(pieces.begin(), initial);
  FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> out, evaluate_node(&body, concat, pieces, heap_allocator()));
  return std::move(out[0]);
}

Result<std::vector<Tensor>> run_loop(const Graph* graph, const Node& node,
                                     const std::vector<Tensor>& inputs) {
  FOVEA_ASSIGN_OR_RETURN(const LoopLayout layout, loop_layout(graph, node));
  FOVEA_ASSIGN_OR_RETURN(const auto outer, outer_values(graph, node, 2 + layout.carried, inputs));
  std::int64_t trip_count = kNoTripCount;
  if (!inputs[0].empty_storage()) {
    if (inputs[0].numel() != 1 || inputs[0].dtype() != DataType::kInt64) {
      return node_error(graph, node, "its trip count is ", std::string(data_type_name(inputs[0].dtype())),
                        " ", shape_string(inputs[0].shape()), ", not one int64");
    }
    trip_count = std::max<std::int64_t>(0, inputs[0].data<std::int64_t>()[0]);
  }
  const bool has_condition = !inputs[1].empty_storage();
  bool running = true;
  if (has_condition) {
    FOVEA_ASSIGN_OR_RETURN(running, bool_scalar(graph, node, inputs[1], "its condition"));
  } else if (trip_count == kNoTripCount) {
    return node_error(graph, node, "it has neither a trip count nor a condition: it would never end");
  }
  std::vector<Tensor> carried(inputs.begin() + 2,
                              inputs.begin() + 2 + static_cast<std::ptrdiff_t>(layout.carried));
  std::vector<std::vector<Tensor>> scans(layout.scans);
  std::vector<std::optional<Append>> appends(layout.carried);
  std::vector<bool> skip(layout.body->nodes.size(), false);
  std::vector<ValueId> pieces_of;  // the appended pieces, given after the body's outputs
  for (std::size_t c = 0; c < layout.carried; ++c) {
    appends[c] = append_of(*layout.body, c);
    if (!appends[c]) continue;
    skip[static_cast<std::size_t>(appends[c]->concat)] = true;
    pieces_of.push_back(appends[c]->piece);
  }
  std::vector<std::vector<Tensor>> pieces(layout.carried);
  for (std::int64_t i = 0; running && (trip_count == kNoTripCount || i < trip_count); ++i) {
    std::vector<Tensor> body_inputs{Tensor::from_vector<std::int64_t>(DataType::kInt64, {}, {i}),
                                    Tensor::from_vector<std::uint8_t>(DataType::kBool, {}, {1})};
    body_inputs.insert(body_inputs.end(), carried.begin(), carried.end());
    Result<std::vector<Tensor>> ran = run_subgraph(*layout.body, body_inputs, outer, skip, pieces_of);
    if (!ran.is_ok()) {
      return ran.status().with_context(where_in(graph, node, "body, iteration " + std::to_string(i)));
    }
    std::vector<Tensor>& outputs = *ran;
    if (has_condition) {
      FOVEA_ASSIGN_OR_RETURN(running, bool_scalar(graph, node, outputs[0], "its body's condition"));
    }
    std::size_t piece = 1 + layout.carried + layout.scans;
    for (std::size_t c = 0; c < layout.carried; ++c) {
      if (appends[c]) {
        pieces[c].push_back(std::move(outputs[piece++]));  // carried[c] stays the initial value
      } else {
        carried[c] = std::move(outputs[1 + c]);
      }
    }
    for (std::size_t s = 0; s < layout.scans; ++s)
      scans[s].push_back(std::move(outputs[1 + layout.carried + s]));
  }
  std::vector<Tensor> results;
  for (std::size_t c = 0; c < layout.carried; ++c) {
    if (!appends[c]) {
      results.push_back(detached(carried[c], inputs));
      continue;
    }
    Result<Tensor> value = joined(*layout.body, *appends[c], carried[c], std::move(pieces[c]));
    if (!value.is_ok()) return value.status().with_context(where_in(graph, node, "body"));
    results.push_back(std::move(*value));
  }
  for (std::size_t s = 0; s < layout.scans; ++s) {
    const ValueType& declared = layout.body->value(layout.body->outputs[1 + layout.carried + s]).type;
    FOVEA_ASSIGN_OR_RETURN(Tensor out, stacked_along(graph, node, s, scans[s], 0, false, declared));
    results.push_back(std::move(out));
  }
  return results;
}

// Where a Scan's inputs and outputs are: [states..., scanned...] in, [states..., scan outputs...]
// out; the body takes [states..., one slice of each scanned input] and gives [states..., one
// element of each scan output]. Opset 8's batched form (sequence_lens first) is refused.
struct ScanLayout {
  const Graph* body = nullptr;
  std::size_t states = 0;
  std::size_t scanned = 0;
  std::size_t scan_outputs = 0;
  std::vector<std::int64_t> input_axes, input_directions, output_axes, output_directions;
};

Result<ScanLayout> scan_layout(const Graph* graph, const Node& node) {
  if (node.opset < 9) {
    return make_error(StatusCode::kUnsupported, graph == nullptr ? std::string() : graph->where(),
                      node.describe(),
                      ": Scan before opset 9 (batched, with sequence_lens) is not supported; "
                      "export with opset 9 or later");
  }
  ScanLayout layout;
  layout.body = branch_of(node, "body");
  if (layout.body == nullptr) return node_error(graph, node, "a Scan needs a body graph");
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t scanned, node.attr_int("num_scan_inputs"));
  const std::size_t body_inputs = layout.body->inputs.size();
  if (scanned < 1 || static_cast<std::size_t>(scanned) > body_inputs ||
      layout.body->outputs.size() < body_inputs - static_cast<std::size_t>(scanned)) {
    return node_error(graph, node,
                      fmt::format("its body takes {} inputs and gives {} outputs for {} scanned "
                                  "inputs",
                                  body_inputs, layout.body->outputs.size(), scanned));
  }
  layout.scanned = static_cast<std::size_t>(scanned);
  layout.states = body_inputs - layout.scanned;
  layout.scan_outputs = layout.body->outputs.size() - layout.states;
  if (node.outputs.size() != layout.states + layout.scan_outputs) {
    return node_error(graph, node,
                      fmt::format("has {} outputs; its body carries {} states and gives {} scan "
                                  "outputs",
                                  node.outputs.size(), layout.states, layout.scan_outputs));
  }
  const auto per = [&](const char* key, std::size_t count) -> Result<std::vector<std::int64_t>> {
    FOVEA_ASSIGN_OR_RETURN(std::vector<std::int64_t> values,
                           node.attr_ints(key, std::vector<std::int64_t>(count, 0)));
    if (values.size() != count) {
      return node_error(graph, node, fmt::format("'{}' has {} values for {}", key, values.size(), count));
    }
    return values;
  };
  FOVEA_ASSIGN_OR_RETURN(layout.input_axes, per("scan_input_axes", layout.scanned));
  FOVEA_ASSIGN_OR_RETURN(layout.input_directions, per("scan_input_directions", layout.scanned));
  FOVEA_ASSIGN_OR_RETURN(layout.output_axes, per("scan_output_axes", layout.scan_outputs));
  FOVEA_ASSIGN_OR_RETURN(layout.output_directions, per("scan_output_directions", layout.scan_outputs));
  return layout;
}

Result<std::vector<Tensor>> run_scan(const Graph* graph, const Node& node,
                                     const std::vector<Tensor>& inputs) {
  FOVEA_ASSIGN_OR_RETURN(const ScanLayout layout, scan_layout(graph, node));
  FOVEA_ASSIGN_OR_RETURN(const auto outer, outer_values(graph, node, layout.states + layout.scanned, inputs));
  std::vector<std::size_t> axes;
  std::int64_t iterations = -1;
  for (std::size_t j = 0; j < layout.scanned; ++j) {
    const Tensor& in = inputs[layout.states + j];
    const auto rank = static_cast<std::int64_t>(in.rank());
    const std::int64_t axis = layout.input_axes[j] < 0 ? layout.input_axes[j] + rank : layout.input_axes[j];
    if (axis < 0 || axis >= rank) {
      return node_error(
          graph, node,
          fmt::format("scan input {} has rank {}; its axis {} is outside it", j, rank, layout.input_axes[j]));
    }
    if (iterations >= 0 && in.dim(static_cast<int>(axis)) != iterations) {
      return node_error(graph, node,
                        fmt::format("scan input {} has {} steps along its axis where input 0 has {}", j,
                                    in.dim(static_cast<int>(axis)), iterations));
    }
    iterations = in.dim(static_cast<int>(axis));
    axes.push_back(static_cast<std::size_t>(axis));
  }
  std::vector<Tensor> states(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(layout.states));
  std::vector<std::vector<Tensor>> elements(layout.scan_outputs);
  for (std::int64_t t = 0; t < iterations; ++t) {
    std::vector<Tensor> body_inputs = states;
    for (std::size_t j = 0; j < layout.scanned; ++j) {
      const std::int64_t index = layout.input_directions[j] != 0 ? iterations - 1 - t : t;
      body_inputs.push_back(slice_along(inputs[layout.states + j], axes[j], index));
    }
    Result<std::vector<Tensor>> ran = run_subgraph(*layout.body, body_inputs, outer);
    if (!ran.is_ok()) {
      return ran.status().with_context(where_in(graph, node, "body, iteration " + std::to_string(t)));
    }
    for (std::size_t c = 0; c < layout.states; ++c) states[c] = std::move((*ran)[c]);
    for (std::size_t k = 0; k < layout.scan_outputs; ++k)
      elements[k].push_back(std::move((*ran)[layout.states + k]));
  }
  std::vector<Tensor> results;
  for (const Tensor& state : states) results.push_back(detached(state, inputs));
  for (std::size_t k = 0; k < layout.scan_outputs; ++k) {
    if (elements[k].empty()) {
      return node_error(graph, node, "it scans no steps, so its scan outputs have no element shape");
    }
    const ValueType& declared = layout.body->value(layout.body->outputs[layout.states + k]).type;
    FOVEA_ASSIGN_OR_RETURN(Tensor out, stacked_along(graph, node, k, elements[k], layout.output_axes[k],
                                                     layout.output_directions[k] != 0, declared));
    results.push_back(std::move(out));
  }
  return results;
}
}  // namespace

bool is_if(const Node& node) {
  return node.op_type == "If" && node.domain.empty();
}

bool is_loop(const Node& node) {
  return node.op_type == "Loop" && node.domain.empty();
}

bool is_scan(const Node& node) {
  return node.op_type == "Scan" && node.domain.empty();
}

bool is_control_flow(const Node& node) {
  return is_if(node) || is_loop(node) || is_scan(node);
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

namespace {

// A value carried across iterations, typed from its initial value: it may change shape between
// iterations, so only the dims the body's declared output agrees on are kept.
ValueType common_type(ValueType type, const ValueType& each) {
  if (type.dims && (!each.dims || each.dims->size() != type.dims->size())) {
    type.dims.reset();
  } else if (type.dims) {
    for (std::size_t d = 0; d < type.dims->size(); ++d) {
      const Dim& a = (*type.dims)[d];
      const Dim& b = (*each.dims)[d];
      if (!(a.known() && b.known() && a.value == b.value)) (*type.dims)[d] = Dim::unknown();
    }
  }
  return type;
}

}  // namespace

Result<std::vector<ValueType>> loop_output_types(const Graph& graph, const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const LoopLayout layout, loop_layout(&graph, node));
  std::vector<ValueType> types;
  for (std::size_t c = 0; c < layout.carried; ++c) {
    const ValueId initial = c + 2 < node.inputs.size() ? node.inputs[c + 2] : kNoValue;
    if (initial == kNoValue)
      return node_error(&graph, node, "its loop-carried value ", std::to_string(c), " has no initial value");
    types.push_back(
        common_type(graph.value(initial).type, layout.body->value(layout.body->outputs[1 + c]).type));
  }
  for (std::size_t s = 0; s < layout.scans; ++s) {
    ValueType type = layout.body->value(layout.body->outputs[1 + layout.carried + s]).type;
    if (type.dims) type.dims->insert(type.dims->begin(), Dim::unknown());
    types.push_back(std::move(type));
  }
  return types;
}

Result<std::vector<ValueType>> scan_output_types(const Graph& graph, const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const ScanLayout layout, scan_layout(&graph, node));
  std::vector<ValueType> types;
  for (std::size_t c = 0; c < layout.states; ++c) {
    const ValueId initial = c < node.inputs.size() ? node.inputs[c] : kNoValue;
    if (initial == kNoValue)
      return node_error(&graph, node, "its state ", std::to_string(c), " has no initial value");
    types.push_back(common_type(graph.value(initial).type, layout.body->value(layout.body->outputs[c]).type));
  }
  for (std::size_t k = 0; k < layout.scan_outputs; ++k) {
    ValueType type = layout.body->value(layout.body->outputs[layout.states + k]).type;
    if (type.dims) {
      const auto rank = static_cast<std::int64_t>(type.dims->size()) + 1;
      const std::int64_t axis =
          layout.output_axes[k] < 0 ? layout.output_axes[k] + rank : layout.output_axes[k];
      if (axis >= 0 && axis < rank) {
        type.dims->insert(type.dims->begin() + axis, Dim::unknown());
      } else {
        type.dims.reset();
      }
    }
    types.push_back(std::move(type));
  }
  return types;
}

Result<std::vector<Tensor>> evaluate_control_flow(const Graph* graph, const Node& node,
                                                  const std::vector<Tensor>& inputs) {
  if (is_if(node)) return run_if(graph, node, inputs);
  if (is_loop(node)) return run_loop(graph, node, inputs);
  return run_scan(graph, node, inputs);
}
}  // namespace fovea::runtime
