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
// A 2-D MaxPool that reads a value produced in NHWC (a converted convolution's or pool's output)
// becomes fovea.MaxPool (channels_last=1) the same way, so the pools of ResNet's stem and of VGG and
// SSD keep their chains in NHWC. A pool of any other value stays NCHW: converting it would only move
// a Transpose, not remove one.
#include <algorithm>
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

class ChannelsLast {
 public:
  explicit ChannelsLast(Graph& graph) : graph_(graph) {}

  void run() {
    const std::vector<int> uses = graph_.use_counts();
    std::vector<Node> nodes;
    std::map<ValueId, ValueId> aliases;  // a model Transpose's output -> the NHWC value it equals
    for (Node& node : graph_.nodes) {
      if (convertible(graph_, node)) {
        convert_conv(node, nodes);
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
  void convert_conv(Node& node, std::vector<Node>& nodes) {
    node.inputs[0] = transposed(node.inputs[0], ops::kNchwToNhwc, nodes);
    node.inputs[1] =
        graph_.add_constant(graph_.value(node.inputs[1]).name + "/nhwc",
                            ops::permute_tensor(*graph_.value(node.inputs[1]).constant, ops::kNchwToNhwc));
    if (node.inputs.size() > 3 && node.inputs[3] != kNoValue)
      node.inputs[3] = transposed(node.inputs[3], ops::kNchwToNhwc, nodes);
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
  std::map<ValueId, ValueId> back_to_nhwc_;  // NCHW value -> the same data in NHWC
  std::set<ValueId> produced_in_nhwc_;       // NCHW values that are Transposes of a converted output
};

}  // namespace

void convert_to_channels_last(Graph& graph) {
  ChannelsLast(graph).run();
  eliminate_dead_nodes(graph);  // the Transposes back to NCHW that only fed converted nodes
  fold_layout_round_trips(graph);
}

}  // namespace fovea::runtime
