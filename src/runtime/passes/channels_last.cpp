// Convolution stacks in NHWC: tensor cores read channels-last tiles directly, where NCHW makes
// cuDNN transpose every input and output. Each 2-D fovea.FusedConv becomes a channels_last one
// (X, Z and Y in [N, H, W, C], W in [M, kH, kW, C/group]) between Transposes; a Transpose back to
// NCHW followed by one to NHWC cancels, so a chain of convolutions (a ResNet body, where every
// residual Add and ReLU is fused) keeps NHWC throughout and transposes only at its ends.
//
// The model's own Transposes meet these too: one to NHWC (perm 0,2,3,1) of a converted output is
// that output's NHWC original (ConvNeXt's Permute after each depthwise convolution), and a
// converted convolution reading a value the model transposed to NCHW (perm 0,3,1,2) reads the
// Transpose's input instead.
//
// An elementwise Add, Sub, Mul or Div of two same-shaped rank-4 values that both exist in NHWC
// runs in NHWC too (the layout does not matter to it), so a residual Add between two converted
// stages keeps the chain in NHWC: ConvNeXt's block adds its input to the model's Permute back to
// NCHW, which left two Transposes per block.
//
// A Resize of the two spatial axes that does not shrink its input, and a Concat, run in NHWC when
// every reader of their output takes NHWC (a converted convolution, or another such Resize or
// Concat): a decoder's upsampling and concatenation of stages in front of a convolution (SegFormer's
// head, FPN and YOLO necks, DeepLab's ASPP). Their inputs are then transposed instead of the output,
// which is free where a converted convolution produced them and removed by fold_layout_round_trips
// where the model's own Transposes from tokens made them; either way no more elements move than
// before (a Concat's inputs add up to its output, an upsampling Resize's input is smaller). They
// are decided from the last node back, so a Resize read only by such a Concat counts as taking NHWC.
//
// An inference BatchNormalization with constant parameters (a pre-activation one: fold_batchnorm has
// folded those after a convolution) runs in NHWC as fovea.BatchNormalization when its input exists
// in NHWC, with the Relu that is its only reader in the same pass, and counts as an NHWC reader for
// the Concats above: DenseNet's layers concatenate NHWC convolution outputs, normalize, ReLU and
// convolve, which NCHW normalization made two Transposes, a BatchNorm and a ReLU pass a layer.
//
// A 2-D MaxPool that reads a value produced in NHWC (a converted convolution's or pool's output)
// becomes fovea.MaxPool (channels_last=1) the same way, so the pools of ResNet's stem and of VGG and
// SSD keep their chains in NHWC. A pool of any other value stays NCHW: converting it would only move
// a Transpose, not remove one.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "runtime/ops/conv_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

// A 2-D FusedConv with constant weights and symmetric explicit pads (the NHWC kernels pad nothing
// themselves), not yet converted.
bool convertible(const Graph& graph, const Node& node) {
  if (node.domain != "fovea" || node.op_type != "FusedConv" || node.has_attribute("channels_last"))
    return false;
  const auto& dims = graph.value(node.inputs[0]).type.dims;
  if (!dims || dims->size() != 4 || !graph.is_constant(node.inputs[1])) return false;
  const Result<std::string> auto_pad = node.attr_string("auto_pad", "NOTSET");
  const Result<std::vector<std::int64_t>> pads = node.attr_ints("pads", std::vector<std::int64_t>(4, 0));
  if (!auto_pad.is_ok() || !pads.is_ok() || (*auto_pad != "NOTSET" && !auto_pad->empty())) return false;
  return pads->size() == 4 && (*pads)[0] == (*pads)[2] && (*pads)[1] == (*pads)[3];
}

// An ONNX MaxPool with a rank-4 output and no Indices read (`uses` counts each value's readers).
bool two_d_max_pool(const Graph& graph, const Node& node, const std::vector<int>& uses) {
  if (!node.domain.empty() || node.op_type != "MaxPool") return false;
  const auto& dims = graph.value(node.outputs[0]).type.dims;
  const bool indices_read = node.outputs.size() > 1 && node.outputs[1] != kNoValue &&
                            uses[static_cast<std::size_t>(node.outputs[1])] > 0;
  return dims && dims->size() == 4 && !indices_read;
}

// A default-domain Add, Sub, Mul or Div whose two inputs and output have the same rank-4 dims (no
// broadcasting), so the same elementwise operation on the NHWC forms gives the NHWC output.
bool same_shape_elementwise(const Graph& graph, const Node& node) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Div"};
  if (!node.domain.empty() || !kOps.count(node.op_type) || node.inputs.size() != 2 ||
      node.outputs.size() != 1)
    return false;
  const auto& out = graph.value(node.outputs[0]).type.dims;
  if (!out || out->size() != 4) return false;
  return std::all_of(node.inputs.begin(), node.inputs.end(),
                     [&](ValueId input) { return graph.value(input).type.dims == out; });
}

// An ONNX inference BatchNormalization of a rank-4 value with constant scale, B, mean and var.
bool nhwc_batch_norm_candidate(const Graph& graph, const Node& node) {
  if (!is_op(node, "BatchNormalization") || node.inputs.size() != 5) return false;
  const Result<std::int64_t> training = node.attr_int("training_mode", 0);
  const auto& dims = graph.value(node.inputs[0]).type.dims;
  if (!training.is_ok() || *training != 0 || !dims || dims->size() != 4) return false;
  return std::all_of(node.inputs.begin() + 1, node.inputs.end(),
                     [&](ValueId id) { return id != kNoValue && graph.is_constant(id); });
}

// The position each NCHW axis takes in NHWC (the inverse of kNchwToNhwc).
constexpr std::array<std::int64_t, 4> kNhwcPosition = {0, 3, 1, 2};

// An axis attribute's values, each within [-4, 4).
bool rank4_axes(const Node& node, std::string_view key) {
  const Result<std::vector<std::int64_t>> axes = node.attr_ints(key, std::vector<std::int64_t>{});
  return axes.is_ok() &&
         std::all_of(axes->begin(), axes->end(), [](std::int64_t a) { return a >= -4 && a < 4; });
}

// An optional input that is absent or empty.
bool omitted(const Graph& graph, const Node& node, std::size_t slot) {
  if (slot >= node.inputs.size() || node.inputs[slot] == kNoValue) return true;
  const auto& constant = graph.value(node.inputs[slot]).constant;
  return constant && constant->numel() == 0;
}

bool constant_of(const Graph& graph, const Node& node, std::size_t slot, std::int64_t numel) {
  const auto& constant = graph.value(node.inputs[slot]).constant;
  return constant && constant->numel() == numel;
}

// A Resize (opset 11+) of a rank-4 value's H and W only, to at least its input's size, with constant
// scales or sizes and a roi that is absent or constant: the same Resize of the NHWC form, with those
// inputs reordered, gives the NHWC output.
bool spatial_upsample(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || node.op_type != "Resize" || node.opset < 11 || node.inputs.size() < 3)
    return false;
  const std::optional<Shape> in = known_shape(graph, node.inputs[0]);
  const std::optional<Shape> out = known_shape(graph, node.outputs[0]);
  if (!in || !out || in->size() != 4 || out->size() != 4 || (*in)[0] != (*out)[0] || (*in)[1] != (*out)[1] ||
      element_count(*out) < element_count(*in))
    return false;
  if (node.has_attribute("axes") && !rank4_axes(node, "axes")) return false;
  const bool roi_ok = omitted(graph, node, 1) || constant_of(graph, node, 1, 8) || node.has_attribute("axes");
  const std::int64_t sized = node.has_attribute("axes") ? -1 : 4;  // with axes: whatever length they give
  const auto resize_input_ok = [&](std::size_t slot) {
    return omitted(graph, node, slot) ||
           (graph.value(node.inputs[slot]).constant && (sized < 0 || constant_of(graph, node, slot, sized)));
  };
  return roi_ok && resize_input_ok(2) && resize_input_ok(3) &&
         (!omitted(graph, node, 2) || !omitted(graph, node, 3));
}

// A Concat of rank-4 values.
bool rank4_concat(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || node.op_type != "Concat" || node.outputs.size() != 1) return false;
  const Result<std::int64_t> axis = node.attr_int("axis");
  if (!axis.is_ok() || *axis < -4 || *axis >= 4) return false;
  const auto rank4 = [&](ValueId id) {
    const std::optional<Shape> shape = known_shape(graph, id);
    return shape && shape->size() == 4;
  };
  return rank4(node.outputs[0]) && std::all_of(node.inputs.begin(), node.inputs.end(), rank4);
}

// A 1-D constant's elements in the order `order` names: out[d] = in[order[d]], repeated per block of
// order.size() elements (a roi's starts, then its ends).
Tensor reordered(const Tensor& values, const std::vector<std::int64_t>& order) {
  Tensor out = values.clone();
  const std::size_t size = data_type_size(values.dtype());
  const auto* from = static_cast<const std::byte*>(values.raw());
  auto* to = static_cast<std::byte*>(out.raw());
  const auto block = static_cast<std::int64_t>(order.size());
  for (std::int64_t e = 0; e < values.numel(); ++e) {
    const std::int64_t source = e / block * block + order[static_cast<std::size_t>(e % block)];
    std::memcpy(to + static_cast<std::size_t>(e) * size, from + static_cast<std::size_t>(source) * size,
                size);
  }
  return out;
}

class ChannelsLast {
 public:
  explicit ChannelsLast(Graph& graph) : graph_(graph) {}

  void run() {
    const std::vector<int> uses = graph_.use_counts();
    choose_resamplers();
    find_sole_relus(uses);
    std::vector<Node> nodes;
    std::map<ValueId, ValueId> aliases;  // a model Transpose's output -> the NHWC value it equals
    for (std::size_t index = 0; index < graph_.nodes.size(); ++index) {
      if (fused_relus_.count(index)) continue;
      Node& node = graph_.nodes[index];
      if (convertible(graph_, node)) {
        convert_conv(node, nodes);
      } else if (resamplers_.count(index)) {
        if (node.op_type == "Resize") {
          convert_resize(node, nodes);
        } else {
          convert_concat(node, nodes);
        }
      } else if (nhwc_batch_norm_candidate(graph_, node) && back_to_nhwc_.count(node.inputs[0])) {
        convert_batch_norm(node, nodes);
      } else if (two_d_max_pool(graph_, node, uses) && produced_in_nhwc_.count(node.inputs[0])) {
        convert_pool(node, nodes);
      } else if (same_shape_elementwise(graph_, node) && back_to_nhwc_.count(node.inputs[0]) &&
                 back_to_nhwc_.count(node.inputs[1])) {
        for (ValueId& input : node.inputs) input = back_to_nhwc_.at(input);
        write_nhwc(std::move(node), nodes);
      } else if (is_transpose(node, ops::kNchwToNhwc) && back_to_nhwc_.count(node.inputs[0]) &&
                 !graph_.is_graph_output(node.outputs[0])) {
        aliases[node.outputs[0]] = back_to_nhwc_.at(node.inputs[0]);
      } else {
        if (is_transpose(node, ops::kNhwcToNchw)) back_to_nhwc_.emplace(node.outputs[0], node.inputs[0]);
        nodes.push_back(std::move(node));
      }
    }
    graph_.nodes = std::move(nodes);
    for (const auto& [from, to] : aliases) replace_uses(graph_, from, to);
    graph_.index_producers();
  }

 private:
  // The Resizes and Concats to run in NHWC (indices into graph_.nodes): those whose output only
  // converted convolutions and other chosen ones read, from the last node back.
  void choose_resamplers() {
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> readers(graph_.values.size());
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      const std::vector<ValueId>& inputs = graph_.nodes[i].inputs;
      for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
        if (inputs[slot] != kNoValue) readers[static_cast<std::size_t>(inputs[slot])].emplace_back(i, slot);
      }
    }
    const auto reads_nhwc = [&](const std::pair<std::size_t, std::size_t>& reader) {
      const auto [i, slot] = reader;
      const Node& node = graph_.nodes[i];
      if (convertible(graph_, node)) return slot == 0 || slot == 3;
      if (nhwc_batch_norm_candidate(graph_, node)) return slot == 0;
      return resamplers_.count(i) > 0 && (node.op_type == "Concat" || slot == 0);
    };
    for (std::size_t i = graph_.nodes.size(); i-- > 0;) {
      const Node& node = graph_.nodes[i];
      if (!spatial_upsample(graph_, node) && !rank4_concat(graph_, node)) continue;
      const ValueId out = node.outputs[0];
      const auto& out_readers = readers[static_cast<std::size_t>(out)];
      if (!graph_.is_graph_output(out) && !out_readers.empty() &&
          std::all_of(out_readers.begin(), out_readers.end(), reads_nhwc))
        resamplers_.insert(i);
    }
  }

  // The Resize reads the NHWC form: its roi, scales and sizes reordered to NHWC's axes, or with an
  // `axes` attribute, the axes renamed.
  void convert_resize(Node& node, std::vector<Node>& nodes) {
    node.inputs[0] = transposed(node.inputs[0], ops::kNchwToNhwc, nodes);
    if (node.has_attribute("axes")) {
      for (std::int64_t& axis : node.attributes["axes"].ints)
        axis = kNhwcPosition[static_cast<std::size_t>(axis < 0 ? axis + 4 : axis)];
    } else {
      for (std::size_t slot = 1; slot < node.inputs.size(); ++slot) {
        if (omitted(graph_, node, slot)) continue;
        const Value& value = graph_.value(node.inputs[slot]);
        node.inputs[slot] =
            graph_.add_constant(value.name + "/nhwc", reordered(*value.constant, ops::kNchwToNhwc));
      }
    }
    write_nhwc(std::move(node), nodes);
  }

  void convert_concat(Node& node, std::vector<Node>& nodes) {
    for (ValueId& input : node.inputs) input = transposed(input, ops::kNchwToNhwc, nodes);
    const std::int64_t axis = *node.attr_int("axis");  // rank4_concat checked it
    node.attributes["axis"].i = kNhwcPosition[static_cast<std::size_t>(axis < 0 ? axis + 4 : axis)];
    write_nhwc(std::move(node), nodes);
  }

  void convert_conv(Node& node, std::vector<Node>& nodes) {
    node.inputs[0] = transposed(node.inputs[0], ops::kNchwToNhwc, nodes);
    node.inputs[1] =
        graph_.add_constant(graph_.value(node.inputs[1]).name + "/nhwc",
                            ops::permute_tensor(*graph_.value(node.inputs[1]).constant, ops::kNchwToNhwc));
    if (node.inputs.size() > 3 && node.inputs[3] != kNoValue)
      node.inputs[3] = transposed(node.inputs[3], ops::kNchwToNhwc, nodes);
    produce_nhwc(std::move(node), nodes);
  }

  // Each value whose only reader is a Relu, with that Relu's index.
  void find_sole_relus(const std::vector<int>& uses) {
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      const Node& node = graph_.nodes[i];
      if (is_op(node, "Relu") && node.inputs.size() == 1 &&
          uses[static_cast<std::size_t>(node.inputs[0])] == 1)
        sole_relu_[node.inputs[0]] = i;
    }
  }

  // fovea.BatchNormalization on the NHWC original of its input; a Relu that is the normalization's
  // only reader runs in the same pass and its output is the node's.
  void convert_batch_norm(Node& node, std::vector<Node>& nodes) {
    node.domain = "fovea";
    node.inputs[0] = back_to_nhwc_.at(node.inputs[0]);
    const ValueId out = node.outputs[0];
    if (auto relu = sole_relu_.find(out); relu != sole_relu_.end() && !graph_.is_graph_output(out)) {
      Attribute activation;
      activation.kind = Attribute::Kind::kString;
      activation.s = "Relu";
      node.attributes["activation"] = activation;
      node.outputs[0] = graph_.nodes[relu->second].outputs[0];
      fused_relus_.insert(relu->second);
    }
    produce_nhwc(std::move(node), nodes);
  }

  // The pool reads the NHWC original of its input; Indices, which nothing reads, are dropped.
  void convert_pool(Node& node, std::vector<Node>& nodes) {
    node.domain = "fovea";
    node.inputs[0] = back_to_nhwc_.at(node.inputs[0]);
    node.outputs.resize(1);
    produce_nhwc(std::move(node), nodes);
  }

  // Marks `node` channels_last and makes it write its output in NHWC (write_nhwc).
  void produce_nhwc(Node node, std::vector<Node>& nodes) {
    Attribute flag;
    flag.i = 1;
    node.attributes["channels_last"] = flag;
    write_nhwc(std::move(node), nodes);
  }

  // Makes `node` write its output in NHWC, followed by a Transpose to the original NCHW value, which
  // eliminate_dead_nodes removes when only converted nodes read it.
  void write_nhwc(Node node, std::vector<Node>& nodes) {
    const ValueId nchw = node.outputs[0];
    ValueType type = graph_.value(nchw).type;
    type.dims = ops::permute_dims(*type.dims, ops::kNchwToNhwc);
    const ValueId nhwc = graph_.add_value(graph_.value(nchw).name + "/nhwc", type);
    node.outputs[0] = nhwc;
    nodes.push_back(std::move(node));
    nodes.push_back(transpose_node(nhwc, nchw, ops::kNhwcToNchw));
    back_to_nhwc_[nchw] = nhwc;
    produced_in_nhwc_.insert(nchw);
  }

  // `value` in NHWC: the NHWC original when `value` is a converted conv's output transposed back
  // (the two Transposes cancel), else a new Transpose (one per value).
  ValueId transposed(ValueId value, const std::vector<std::int64_t>& perm, std::vector<Node>& nodes) {
    if (auto it = back_to_nhwc_.find(value); it != back_to_nhwc_.end()) return it->second;
    ValueType type = graph_.value(value).type;
    type.dims = ops::permute_dims(*type.dims, perm);
    const ValueId out = graph_.add_value(graph_.value(value).name + "/nhwc", type);
    nodes.push_back(transpose_node(value, out, perm));
    back_to_nhwc_[value] = out;
    return out;
  }

  // An ONNX Transpose of a rank-4 value by `perm`.
  bool is_transpose(const Node& node, const std::vector<std::int64_t>& perm) const {
    if (!node.domain.empty() || node.op_type != "Transpose" || node.inputs.size() != 1) return false;
    const auto& dims = graph_.value(node.inputs[0]).type.dims;
    const Result<std::vector<std::int64_t>> node_perm = node.attr_ints("perm", std::vector<std::int64_t>{});
    return dims && dims->size() == 4 && node_perm.is_ok() && *node_perm == perm;
  }

  Node transpose_node(ValueId from, ValueId to, const std::vector<std::int64_t>& perm) const {
    Node node;
    node.name = graph_.value(to).name + "/transpose";
    node.op_type = "Transpose";
    node.opset = graph_.opsets.count("") ? graph_.opsets.at("") : 13;
    node.inputs = {from};
    node.outputs = {to};
    Attribute attribute;
    attribute.kind = Attribute::Kind::kInts;
    attribute.ints = perm;
    node.attributes["perm"] = attribute;
    return node;
  }

  Graph& graph_;
  std::set<std::size_t> resamplers_;          // from choose_resamplers
  std::map<ValueId, ValueId> back_to_nhwc_;   // NCHW value -> the same data in NHWC
  std::set<ValueId> produced_in_nhwc_;        // NCHW values that are Transposes of a converted output
  std::map<ValueId, std::size_t> sole_relu_;  // a value -> the Relu that is its only reader
  std::set<std::size_t> fused_relus_;         // Relus a converted BatchNormalization applies
};

}  // namespace

void convert_to_channels_last(Graph& graph) {
  ChannelsLast(graph).run();
  eliminate_dead_nodes(graph);  // the Transposes back to NCHW that only fed converted nodes
  fold_layout_round_trips(graph);
}

}  // namespace fovea::runtime
