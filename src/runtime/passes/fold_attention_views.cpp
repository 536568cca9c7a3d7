// The head split and merge around fovea.Attention become strided reads and a transposed write of
// the attention kernel itself (passes.h). Exporters write multi-head attention as a packed QKV
// projection followed by Reshape, Transpose, Squeeze and a Gather per operand, then a Transpose
// and a Reshape per head group; each is a full copy of an activation (ViT-B: eight copies a layer),
// yet every one of them only moves elements that the kernel can address where they lie.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/ops/attention_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

using ops::AttentionView;

// A view under construction: each dim a row-major list of (size, stride) parts, because the view
// ops between a packed projection and an operand pass through shapes that are no strided view of
// it (torch's [T, B, E] -> [T, B * H, D] merges B with part of E) before they become one again.
struct Part {
  std::int64_t size = 1, stride = 0;
};

struct ComposedView {
  std::int64_t offset = 0;
  std::vector<std::vector<Part>> dims;  // a size-1 dim has no parts
};

ComposedView contiguous(const Shape& shape) {
  ComposedView view;
  const Shape strides = contiguous_strides(shape);
  view.dims.resize(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1) view.dims[d].push_back({shape[d], strides[d]});
  }
  return view;
}

// Reading `from` in row-major order as shape `to`: its parts regrouped, a part split where a new dim
// takes only some of it.
std::optional<ComposedView> reshaped(const ComposedView& from, const Shape& to) {
  std::vector<Part> parts;
  for (const std::vector<Part>& dim : from.dims) parts.insert(parts.end(), dim.begin(), dim.end());
  ComposedView out;
  out.offset = from.offset;
  out.dims.resize(to.size());
  for (std::size_t d = to.size(); d-- > 0;) {
    if (to[d] <= 0) return std::nullopt;
    std::int64_t needed = to[d];
    std::vector<Part> dim;  // innermost first
    while (needed > 1) {
      if (parts.empty()) return std::nullopt;
      Part& last = parts.back();
      if (needed % last.size == 0) {
        dim.push_back(last);
        needed /= last.size;
        parts.pop_back();
      } else if (last.size % needed == 0) {
        dim.push_back({needed, last.stride});
        last = {last.size / needed, last.stride * needed};
        needed = 1;
      } else {
        return std::nullopt;
      }
    }
    out.dims[d].assign(dim.rbegin(), dim.rend());
  }
  if (!parts.empty()) return std::nullopt;
  return out;
}

std::optional<ComposedView> transposed(const Node& node, const ComposedView& from) {
  const std::size_t rank = from.dims.size();
  const std::optional<std::vector<std::int64_t>> perm = transpose_perm(node, rank);
  if (!perm) return std::nullopt;
  ComposedView out;
  out.offset = from.offset;
  for (std::int64_t axis : *perm) {
    if (axis < 0 || axis >= static_cast<std::int64_t>(rank)) return std::nullopt;
    out.dims.push_back(from.dims[static_cast<std::size_t>(axis)]);
  }
  return out;
}

// Gather of one constant scalar index along an axis: that index of the axis, the axis dropped.
std::optional<ComposedView> selected(const Graph& graph, const Node& node, const ComposedView& from) {
  if (node.inputs.size() != 2 || !graph.is_constant(node.inputs[1])) return std::nullopt;
  const Tensor& index = *graph.value(node.inputs[1]).constant;
  if (index.rank() != 0) return std::nullopt;
  std::int64_t i = 0;
  if (index.dtype() == DataType::kInt64) {
    i = index.data<std::int64_t>()[0];
  } else if (index.dtype() == DataType::kInt32) {
    i = index.data<std::int32_t>()[0];
  } else {
    return std::nullopt;
  }
  const Result<std::int64_t> axis_attr = node.attr_int("axis", 0);
  const auto rank = static_cast<std::int64_t>(from.dims.size());
  if (!axis_attr.is_ok()) return std::nullopt;
  const std::int64_t axis = axis_attr.value() < 0 ? axis_attr.value() + rank : axis_attr.value();
  if (axis < 0 || axis >= rank) return std::nullopt;
  const std::vector<Part>& dim = from.dims[static_cast<std::size_t>(axis)];
  std::int64_t size = 1;
  for (const Part& part : dim) size *= part.size;
  if (i < 0) i += size;
  if (i < 0 || i >= size) return std::nullopt;
  ComposedView out = from;
  for (auto part = dim.rbegin(); part != dim.rend(); ++part) {
    out.offset += (i % part->size) * part->stride;
    i /= part->size;
  }
  out.dims.erase(out.dims.begin() + axis);
  return out;
}

// The composed view as a strided one: each dim's parts must continue one another in memory.
std::optional<AttentionView> strided(const ComposedView& view) {
  AttentionView out;
  out.offset = view.offset;
  for (const std::vector<Part>& dim : view.dims) {
    std::int64_t size = 1, stride = 1;
    if (!dim.empty()) stride = dim.back().stride;
    for (auto part = dim.rbegin(); part != dim.rend(); ++part) {
      if (part->stride != size * stride) return std::nullopt;
      size *= part->size;
    }
    out.sizes.push_back(size);
    out.strides.push_back(stride);
  }
  return out;
}

// `node`'s output as a view of what `from` views; nullopt when it is none.
std::optional<ComposedView> through(const Graph& graph, const Node& node, const ComposedView& from) {
  if (is_op(node, "Transpose")) return transposed(node, from);
  if (is_op(node, "Gather")) return selected(graph, node, from);
  const std::optional<Shape> to = known_shape(graph, node.outputs[0]);
  return to ? reshaped(from, *to) : std::nullopt;
}

// The CUDA kernels read a row of Q and V, and a row of K or of KT, as contiguous elements.
bool kernels_read(int input, const AttentionView& view) {
  const std::size_t rank = view.sizes.size();
  if (rank < 2) return false;
  if (input == ops::kAttentionKt) return view.strides[rank - 2] == 1 || view.strides[rank - 1] == 1;
  return view.strides[rank - 1] == 1;
}

struct Folded {
  ValueId base = kNoValue;
  AttentionView view;
};

// Operand `input` as a strided view the kernels read of the farthest value up its chain of view ops
// that it is one of; nullopt when there is none but the operand itself.
std::optional<Folded> fold_operand(Graph& graph, int input, ValueId operand) {
  std::vector<Node*> chain;  // from the operand's producer up
  for (Node* node = producer_of(graph, operand); node != nullptr && is_view_op(*node);
       node = producer_of(graph, node->inputs[0])) {
    chain.push_back(node);
  }
  for (std::size_t top = chain.size(); top-- > 0;) {
    const ValueId base = chain[top]->inputs[0];
    const std::optional<Shape> shape = known_shape(graph, base);
    if (!shape || std::find(shape->begin(), shape->end(), 0) != shape->end()) continue;  // nothing to read
    std::optional<ComposedView> view = contiguous(*shape);
    for (std::size_t n = top + 1; n-- > 0 && view;) view = through(graph, *chain[n], *view);
    if (!view) continue;
    std::optional<AttentionView> result = strided(*view);
    if (result && kernels_read(input, *result)) return Folded{base, std::move(*result)};
  }
  return std::nullopt;
}

void fold_inputs(Graph& graph, Node& attention) {
  for (int input : {ops::kAttentionQ, ops::kAttentionKt, ops::kAttentionV}) {
    // Folded already (the pass runs again after move_transposes_to_attention): the view is of
    // the operand, not of the operand read whole, so the chain above it cannot be composed anew.
    if (attention.has_attribute(ops::attention_view_attribute(input))) continue;
    const ValueId operand = attention.inputs[static_cast<std::size_t>(input)];
    const std::optional<Folded> folded = fold_operand(graph, input, operand);
    if (!folded) continue;
    attention.inputs[static_cast<std::size_t>(input)] = folded->base;
    Attribute view;
    view.kind = Attribute::Kind::kInts;
    view.ints = ops::encode_attention_view(folded->view);
    attention.attributes[ops::attention_view_attribute(input)] = std::move(view);
  }
}

// How a Reshape regroups the dims of `from` into `to` without splitting any: for each dim of `to`,
// the dims of `from` it merges (dims of 1 join a neighbour); nullopt when a dim is split.
std::optional<std::vector<std::vector<std::int64_t>>> merged_groups(const Shape& from, const Shape& to) {
  std::vector<std::vector<std::int64_t>> groups(to.size());
  std::size_t axis = 0;
  for (std::size_t d = 0; d < to.size(); ++d) {
    std::int64_t size = 1;
    while (axis < from.size() && size * from[axis] <= to[d] && (size < to[d] || from[axis] == 1)) {
      size *= from[axis];
      groups[d].push_back(static_cast<std::int64_t>(axis++));
    }
    if (size != to[d]) return std::nullopt;
  }
  for (; axis < from.size(); ++axis) {
    if (from[axis] != 1 || groups.empty()) return std::nullopt;
    groups.back().push_back(static_cast<std::int64_t>(axis));
  }
  return groups;
}

// An output read (through Reshapes that only merge dims, each the sole reader of the last) only by
// a Transpose that keeps the last axis: the node writes the transposed tensor itself, and a
// Reshape gives it the Transpose's shape (free: it aliases).
void fold_output(Graph& graph, Node& attention, std::vector<bool>& removed) {
  const ValueId written = attention.outputs[0];
  const std::optional<Shape> shape = known_shape(graph, written);
  if (!shape || shape->empty()) return;
  std::vector<Node*> reshapes;
  ValueId value = written;
  Node* next = sole_consumer(graph, value);
  while (next != nullptr && is_op(*next, "Reshape")) {
    reshapes.push_back(next);
    value = next->outputs[0];
    next = sole_consumer(graph, value);
  }
  Node* transpose = next;
  const std::optional<Shape> merged = known_shape(graph, value);
  if (transpose == nullptr || !is_op(*transpose, "Transpose") || !merged) return;
  const std::optional<std::vector<std::int64_t>> perm = transpose_perm(*transpose, merged->size());
  const std::optional<std::vector<std::vector<std::int64_t>>> groups = merged_groups(*shape, *merged);
  if (!perm || perm->empty() || perm->back() != static_cast<std::int64_t>(merged->size()) - 1 || !groups)
    return;
  // The written dims in their new order; the last, the product's rows, stays last.
  std::vector<std::int64_t> order;
  for (std::int64_t group : *perm) {
    const std::vector<std::int64_t>& axes = (*groups)[static_cast<std::size_t>(group)];
    order.insert(order.end(), axes.begin(), axes.end());
  }
  if (order.size() != shape->size() || order.back() != static_cast<std::int64_t>(shape->size()) - 1) return;
  const Result<std::optional<std::vector<std::int64_t>>> old_perm =
      ops::attention_output_perm(attention, shape->size());
  if (!old_perm.is_ok()) return;
  Attribute y_perm;
  y_perm.kind = Attribute::Kind::kInts;
  Shape permuted;
  for (std::int64_t axis : order) {
    y_perm.ints.push_back(*old_perm ? (**old_perm)[static_cast<std::size_t>(axis)] : axis);
    permuted.push_back((*shape)[static_cast<std::size_t>(axis)]);
  }
  attention.attributes[ops::kAttentionOutputPerm] = std::move(y_perm);
  if (reshapes.empty()) {  // the node writes the Transpose's output itself
    attention.outputs[0] = transpose->outputs[0];
    removed[static_cast<std::size_t>(transpose - graph.nodes.data())] = true;
    transpose->inputs.clear();
    transpose->outputs.clear();
    return;
  }
  ValueType type = graph.value(written).type;  // by value: adding values may move them
  type.dims = dims_of(permuted);
  const ValueId permuted_value = graph.add_value(graph.value(written).name + "/permuted", type);
  attention.outputs[0] = permuted_value;
  // The first Reshape gives the permuted output the Transpose's shape, in the Transpose's place;
  // the other Reshapes and the Transpose go.
  Node reshape = reshape_like(graph, *reshapes.front(), transpose->name, permuted_value,
                              *known_shape(graph, transpose->outputs[0]), transpose->outputs[0]);
  for (Node* node : reshapes) {
    removed[static_cast<std::size_t>(node - graph.nodes.data())] = true;
    node->inputs.clear();
    node->outputs.clear();
  }
  *transpose = std::move(reshape);
}

}  // namespace

void fold_attention_views(Graph& graph) {
  graph.index_producers();
  std::vector<bool> removed(graph.nodes.size(), false);
  for (Node& node : graph.nodes) {
    if (node.domain != "fovea" || node.op_type != "Attention") continue;
    fold_inputs(graph, node);
    fold_output(graph, node, removed);
  }
  erase_nodes(graph, removed);
}

}  // namespace fovea::runtime
