// Token-major models switch between a convolution's image layout and a sequence of tokens with
// Transposes and Reshapes: SegFormer's encoder and Mix-FFN, DETR's and Swin's patch embeddings
// flatten a feature map [N, C, H, W] to [N, C, HW] and transpose it to tokens [N, HW, C], and turn
// tokens back into a map for the next convolution the other way round. Once convert_to_channels_last
// has put the convolutions in NHWC, each such trip runs three copies to arrive where it started: the
// NHWC output transposed to NCHW, flattened, transposed to [N, HW, C], which is the NHWC output's
// own memory. A chain of layout ops whose composite keeps every element at its place in memory is
// one Reshape, a view (passes.h).
//
// Whether it does is decided on the chain's input split into atoms: runs of consecutive elements
// along one input axis (an axis, or a factor of it where a Reshape splits it). Transposes permute
// the current axes, each a list of atoms; Reshapes regroup the atoms into new axes, splitting an
// atom where a new dim ends inside it (or give up where the sizes do not divide). The chain keeps
// the memory order exactly when its output's atoms, read major to minor, are in the input's order.
#include <optional>
#include <vector>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

// The view ops that keep every element (a Gather picks some).
bool is_layout_op(const Node& node) {
  return is_view_op(node) && node.op_type != "Gather";
}

class AtomOrder {
 public:
  explicit AtomOrder(const Shape& shape) {
    for (std::size_t d = 0; d < shape.size(); ++d) {
      axes_.emplace_back();
      if (shape[d] != 1) axes_.back().push_back({static_cast<std::int64_t>(d), 1, shape[d]});
    }
  }

  bool transpose(const std::vector<std::int64_t>& perm) {
    if (perm.size() != axes_.size()) return false;
    std::vector<std::vector<Atom>> permuted;
    for (std::int64_t p : perm) {
      if (p < 0 || p >= static_cast<std::int64_t>(axes_.size())) return false;
      permuted.push_back(axes_[static_cast<std::size_t>(p)]);
    }
    axes_ = std::move(permuted);
    return true;
  }

  // The same elements as `shape`: false when a new dim ends inside an atom that its size does not
  // split evenly.
  bool reshape(const Shape& shape) {
    std::vector<Atom> atoms;
    for (const std::vector<Atom>& axis : axes_) atoms.insert(atoms.end(), axis.begin(), axis.end());
    std::vector<std::vector<Atom>> regrouped;
    std::size_t next = 0;
    for (std::int64_t dim : shape) {
      regrouped.emplace_back();
      std::int64_t filled = 1;
      while (filled < dim) {
        if (next == atoms.size() || dim % filled != 0) return false;
        Atom& atom = atoms[next];
        const std::int64_t wanted = dim / filled;
        if (atom.size <= wanted) {
          if (wanted % atom.size != 0) return false;
          regrouped.back().push_back(atom);
          filled *= atom.size;
          ++next;
          continue;
        }
        if (atom.size % wanted != 0) return false;
        // The atom's major part completes this dim; its minor part starts the next.
        const std::int64_t minor = atom.size / wanted;
        regrouped.back().push_back({atom.axis, atom.stride * minor, wanted});
        atom = {atom.axis, atom.stride, minor};
        filled = dim;
      }
    }
    if (next != atoms.size()) return false;
    axes_ = std::move(regrouped);
    return true;
  }

  // Atoms read major to minor are the input's: by axis, and within an axis from the largest stride.
  bool in_input_order() const {
    const Atom* previous = nullptr;
    for (const std::vector<Atom>& axis : axes_) {
      for (const Atom& atom : axis) {
        if (previous != nullptr && (previous->axis > atom.axis ||
                                    (previous->axis == atom.axis && previous->stride <= atom.stride))) {
          return false;
        }
        previous = &atom;
      }
    }
    return true;
  }

 private:
  // Index i along input axis `axis` contributes digit (i / stride) % size to this atom.
  struct Atom {
    std::int64_t axis = 0, stride = 1, size = 1;
  };
  std::vector<std::vector<Atom>> axes_;
};

// Applies layout op `node` to `order`; false when it cannot be followed (unknown shapes or perm, a
// Reshape that does not regroup).
bool follow(const Graph& graph, const Node& node, AtomOrder& order) {
  const std::optional<Shape> in = known_shape(graph, node.inputs[0]);
  const std::optional<Shape> out = known_shape(graph, node.outputs[0]);
  if (!in || !out) return false;
  if (node.op_type != "Transpose") return order.reshape(*out);
  const std::optional<std::vector<std::int64_t>> perm = transpose_perm(node, in->size());
  return perm && order.transpose(*perm);
}

// The longest chain of layout ops from graph.nodes[start], each intermediate read by the next op
// alone, that holds a Transpose and keeps the memory order: the node indices, empty if none.
std::vector<std::size_t> order_keeping_chain(Graph& graph, std::size_t start,
                                             const std::vector<bool>& removed) {
  const std::optional<Shape> input = known_shape(graph, graph.nodes[start].inputs[0]);
  if (!input) return {};
  AtomOrder order(*input);
  std::vector<std::size_t> chain;
  std::size_t kept = 0;
  bool transposes = false;
  for (const Node* node = &graph.nodes[start]; node != nullptr && is_layout_op(*node);
       node = sole_consumer(graph, node->outputs[0])) {
    const auto index = static_cast<std::size_t>(node - graph.nodes.data());
    if (removed[index] || !follow(graph, *node, order)) break;
    chain.push_back(index);
    transposes = transposes || node->op_type == "Transpose";
    if (transposes && order.in_input_order()) kept = chain.size();
  }
  chain.resize(kept);
  return chain;
}

}  // namespace

void fold_layout_round_trips(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  std::vector<std::vector<Node>> inserted(graph.nodes.size());
  bool changed = false;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (removed[n] || !is_layout_op(graph.nodes[n])) continue;
    const std::vector<std::size_t> chain = order_keeping_chain(graph, n, removed);
    if (chain.empty()) continue;
    const Node& last = graph.nodes[chain.back()];
    inserted[chain.back()].push_back(reshape_node(graph, last.name + "/as_reshape", graph.nodes[n].inputs[0],
                                                  *known_shape(graph, last.outputs[0]), last.outputs[0]));
    for (std::size_t index : chain) removed[index] = true;
    changed = true;
  }
  if (changed) splice_nodes(graph, std::move(inserted), removed);
}

}  // namespace fovea::runtime
