#include "runtime/quant/quantize_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "runtime/ops/int8_conv_util.h"
#include "runtime/passes/pass_util.h"

namespace fovea::runtime::quant {
namespace {

// The opset of the QuantizeLinear/DequantizeLinear nodes the rewrite adds: the first with per-axis
// scales, and before the float8 forms (19) and blocked scales (21) it has no use for.
constexpr int kQdqOpset = 13;

struct Target {
  int activation_inputs[2] = {-1, -1};  // node input slots read as activations
  int weight_input = -1;                // the constant slot quantized per channel, if any
  int weight_axis = 0;                  // its output-channel axis
};

bool is_float32(const Graph& graph, ValueId id) {
  return id != kNoValue && graph.value(id).type.dtype == DataType::kFloat32;
}

bool is_float32_constant(const Graph& graph, ValueId id) {
  return graph.is_constant(id) && graph.value(id).constant->dtype() == DataType::kFloat32;
}

// Which inputs of `node` the rewrite quantizes; nullopt for a node it leaves alone.
std::optional<Target> target_of(const Graph& graph, const Node& node) {
  if (!is_quantizable_op(node) || node.inputs.size() < 2) return std::nullopt;
  const bool gemm = node.op_type == "Gemm";
  const bool matmul = node.op_type == "MatMul";
  const ValueId a = node.inputs[0];
  const ValueId b = node.inputs[1];
  if (!is_float32(graph, a) || !is_float32(graph, b) || graph.is_constant(a)) return std::nullopt;
  Target target;
  target.activation_inputs[0] = 0;
  if (is_float32_constant(graph, b)) {
    const Tensor& weights = *graph.value(b).constant;
    target.weight_input = 1;
    if (gemm) {
      const Result<std::int64_t> trans_b = node.attr_int("transB", 0);
      if (!trans_b.is_ok()) return std::nullopt;  // planning reports the bad attribute
      target.weight_axis = *trans_b != 0 ? 0 : 1;
    } else if (matmul) {
      if (weights.rank() < 2) return std::nullopt;  // a vector product has no output channels
      target.weight_axis = weights.rank() - 1;
    }
  } else if (matmul) {
    target.activation_inputs[1] = 1;  // attention's products: both sides are activations
  } else {
    return std::nullopt;  // a convolution or Gemm with computed weights stays float
  }
  return target;
}

// By name, or by op type as the model has it: "Conv" also names the convolutions fused with their
// epilogue (fovea.FusedConv) by the time the rewrite runs.
bool kept(const Node& node, const std::vector<std::string>& keep) {
  return std::any_of(keep.begin(), keep.end(), [&](const std::string& entry) {
    return entry == node.name || entry == node.op_type || (entry == "Conv" && node.op_type == "FusedConv");
  });
}

Attribute int_attribute(std::int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

Tensor scalar(float value) {
  return Tensor::from_vector(DataType::kFloat32, {}, std::vector<float>{value});
}

Tensor int8_zeros(Shape shape) {
  Tensor zeros = Tensor::allocate(DataType::kInt8, std::move(shape));
  std::fill_n(zeros.data<std::int8_t>(), zeros.numel(), std::int8_t{0});
  return zeros;
}

// Round half to even and clamp to the symmetric range [-127, 127], as every int8 kernel reads it.
std::int8_t quantize_weight(float w, float scale) {
  const float q = std::nearbyint(w / scale);
  return static_cast<std::int8_t>(std::clamp(q, -kInt8Max, kInt8Max));
}

// Adds the nodes and values of the rewrite. New nodes are collected and appended at the end, then
// the graph is sorted again: node indices held by the caller stay valid while it works.
class Rewriter {
 public:
  Rewriter(Graph& graph, const CalibrationTable& table) : graph_(graph), table_(table) {}

  bool has_range(ValueId id) const { return activations_.count(id) != 0 || range_of(id) != nullptr; }

  // Why activation `id`'s readers stay in float by the cache's keep_float, empty when they do not.
  std::string kept_float(ValueId id) const {
    const RangeEntry* entry = range_entry(id);
    if (entry == nullptr || !entry->second.keep_float) return {};
    const TensorRange& range = entry->second;
    const std::string sqnr = range.sqnr_db ? fmt::format(" (int8 SQNR {:.1f} dB)", *range.sqnr_db) : "";
    return "the calibration keeps '" + entry->first + "' in float" + sqnr;
  }

  // The dequantized form of activation `id`, one pair per activation however many layers read it;
  // has_range(id) must hold.
  ValueId dequantized_activation(ValueId id) {
    if (auto it = activations_.find(id); it != activations_.end()) return it->second;
    // Copies: adding values below moves graph_.values.
    const std::string name = graph_.value(id).name;
    const std::optional<Dims> dims = graph_.value(id).type.dims;
    const ValueId scale = graph_.add_constant(name + "/scale", scalar(range_of(id)->scale()));
    const ValueId zero = graph_.add_constant(name + "/zero_point", int8_zeros({}));
    const ValueId quantized = graph_.add_value(name + "/int8", {DataType::kInt8, dims});
    const ValueId dequantized = graph_.add_value(name + "/dequantized", {DataType::kFloat32, dims});
    add_node("QuantizeLinear", name + "/quantize", {id, scale, zero}, quantized, std::nullopt);
    add_node("DequantizeLinear", name + "/dequantize", {quantized, scale, zero}, dequantized, std::nullopt);
    activations_.emplace(id, dequantized);
    return dequantized;
  }

  // Weights stored in int8 per output channel along `axis`, read through a DequantizeLinear.
  ValueId dequantized_weights(ValueId id, int axis) {
    const Value& value = graph_.value(id);
    const Tensor& weights = *value.constant;
    const std::int64_t channels = weights.dim(axis);
    std::int64_t inner = 1;
    for (int d = axis + 1; d < weights.rank(); ++d) inner *= weights.dim(d);
    const float* w = weights.data<float>();
    std::vector<float> amax(static_cast<std::size_t>(channels), 0.0f);
    for (std::int64_t i = 0; i < weights.numel(); ++i) {
      float& channel = amax[static_cast<std::size_t>((i / inner) % channels)];
      channel = std::max(channel, std::fabs(w[i]));
    }
    std::vector<float> scales(amax.size());
    // A channel of zeros quantizes to zeros at any scale; 1 keeps the scale a positive number.
    std::transform(amax.begin(), amax.end(), scales.begin(),
                   [](float m) { return m > 0.0f ? m / kInt8Max : 1.0f; });
    Tensor quantized = Tensor::allocate(DataType::kInt8, weights.shape());
    std::int8_t* q = quantized.data<std::int8_t>();
    for (std::int64_t i = 0; i < weights.numel(); ++i) {
      q[i] = quantize_weight(w[i], scales[static_cast<std::size_t>((i / inner) % channels)]);
    }
    const std::string name = value.name;
    const std::optional<Dims> dims = value.type.dims;
    const ValueId stored = graph_.add_constant(name + "/int8", std::move(quantized));
    const ValueId scale =
        graph_.add_constant(name + "/scale", Tensor::from_vector(DataType::kFloat32, {channels}, scales));
    const ValueId zero = graph_.add_constant(name + "/zero_point", int8_zeros({channels}));
    const ValueId dequantized = graph_.add_value(name + "/dequantized", {DataType::kFloat32, dims});
    add_node("DequantizeLinear", name + "/dequantize", {stored, scale, zero}, dequantized, axis);
    return dequantized;
  }

  // The calibrated range of activation `id`: its own, or that of the value it is a view of (the
  // Reshapes fuse_matmul_bias puts around a linear layer, a Flatten, a Transpose: the same values,
  // so the same range and SQNR), which calibration may not have seen as a tensor of its own.
  const TensorRange* range_of(ValueId id) const {
    const RangeEntry* entry = range_entry(id);
    return entry == nullptr ? nullptr : &entry->second;
  }

  Status finish() {
    for (Node& node : added_) graph_.nodes.push_back(std::move(node));
    added_.clear();
    graph_.index_producers();
    return graph_.sort_topologically();
  }

 private:
  using RangeEntry = std::pair<const std::string, TensorRange>;

  // range_of's entry of the cache, with the name it holds the range under.
  const RangeEntry* range_entry(ValueId id) const {
    static const std::set<std::string_view> kViews = {"Reshape",   "Flatten",   "Squeeze",
                                                      "Unsqueeze", "Transpose", "Identity"};
    for (ValueId at = id;;) {
      if (const RangeEntry* entry = entry_of_name(graph_.value(at).name)) return entry;
      const int producer = graph_.value(at).producer;
      if (producer < 0) return nullptr;
      const Node& node = graph_.nodes[static_cast<std::size_t>(producer)];
      if (!node.domain.empty() || !kViews.count(node.op_type) || node.inputs.empty()) return nullptr;
      at = node.inputs[0];
    }
  }

  // The cache's entry for activation `name`, or for the NCHW value a "<name>/nhwc" holds.
  const RangeEntry* entry_of_name(const std::string& name) const {
    if (auto it = table_.tensors.find(name); it != table_.tensors.end()) return &*it;
    constexpr std::string_view kNhwc = "/nhwc";
    if (name.size() > kNhwc.size() && name.ends_with(kNhwc)) {
      auto it = table_.tensors.find(name.substr(0, name.size() - kNhwc.size()));
      if (it != table_.tensors.end()) return &*it;
    }
    return nullptr;
  }

  void add_node(std::string op_type, std::string name, std::vector<ValueId> inputs, ValueId output,
                std::optional<int> axis) {
    Node node;
    node.name = std::move(name);
    node.op_type = std::move(op_type);
    node.opset = kQdqOpset;
    node.inputs = std::move(inputs);
    node.outputs = {output};
    if (axis) node.attributes.emplace("axis", int_attribute(*axis));
    added_.push_back(std::move(node));
  }

  Graph& graph_;
  const CalibrationTable& table_;
  std::map<ValueId, ValueId> activations_;
  std::vector<Node> added_;
};

// Quantizes node `index` as `target` says, or says why it stays float.
QuantizedNode quantize_node(Graph& graph, Rewriter& rewriter, std::size_t index, const Target& target) {
  QuantizedNode result{.node = graph.nodes[index].name, .op_type = graph.nodes[index].op_type};
  // Every range first, so that a node missing one is left untouched.
  for (int slot : target.activation_inputs) {
    const ValueId input = slot < 0 ? kNoValue : graph.nodes[index].inputs[static_cast<std::size_t>(slot)];
    if (input != kNoValue && !rewriter.has_range(input)) {
      result.reason = "no calibrated range for '" + graph.value(input).name + "'";
      return result;
    }
    if (input != kNoValue) result.reason = rewriter.kept_float(input);
    if (!result.reason.empty()) return result;
  }
  for (int slot : target.activation_inputs) {
    if (slot < 0) continue;
    ValueId& input = graph.nodes[index].inputs[static_cast<std::size_t>(slot)];
    input = rewriter.dequantized_activation(input);
  }
  if (target.weight_input >= 0) {
    const ValueId weights = graph.nodes[index].inputs[static_cast<std::size_t>(target.weight_input)];
    graph.nodes[index].inputs[static_cast<std::size_t>(target.weight_input)] =
        rewriter.dequantized_weights(weights, target.weight_axis);
  }
  result.int8 = true;
  return result;
}

// An integer attribute, or `fallback` when it is absent or malformed (planning reports the latter).
std::int64_t int_or(const Node& node, std::string_view key, std::int64_t fallback) {
  const Result<std::int64_t> value = node.attr_int(key, fallback);
  return value.is_ok() ? *value : fallback;
}

// Why the int8 tensor-core kernel cannot run `node` (a quantizable node with a Target), empty when
// it can.
std::string tensor_core_refusal(const Graph& graph, const Node& node) {
  if (node.op_type != "FusedConv" || int_or(node, "channels_last", 0) == 0) {
    return "the CUDA int8 kernels take channels_last convolutions only; " + node.op_type + " stays float16";
  }
  if (int_or(node, "group", 1) != 1) return "grouped convolution (the int8 kernel takes group 1)";
  const std::optional<Shape> x = known_shape(graph, node.inputs[0]);
  const Shape& w = graph.value(node.inputs[1]).constant->shape();
  if (!x || x->size() != 4 || w.size() != 4) return "not a 2-D convolution of known shape";
  return ops::int8_conv_unsupported(*x, w);
}

}  // namespace

Result<std::vector<QuantizedNode>> quantize_graph(Graph& graph, const CalibrationTable& table,
                                                  const std::vector<std::string>& keep, Int8Layers layers) {
  Rewriter rewriter(graph, table);
  std::vector<QuantizedNode> report;
  const std::size_t count = graph.nodes.size();
  for (std::size_t i = 0; i < count; ++i) {
    const std::optional<Target> target = target_of(graph, graph.nodes[i]);
    if (!target) continue;
    const Node& node = graph.nodes[i];
    std::string reason = kept(node, keep) ? "asked to stay unquantized" : "";
    if (reason.empty() && layers == Int8Layers::kTensorCoreConvolutions)
      reason = tensor_core_refusal(graph, node);
    if (!reason.empty()) {
      report.push_back({.node = node.name, .op_type = node.op_type, .reason = std::move(reason)});
      continue;
    }
    report.push_back(quantize_node(graph, rewriter, i, *target));
  }
  FOVEA_TRY(rewriter.finish());
  return report;
}

bool is_quantizable_op(const Node& node) {
  // fovea.Gemm: a linear layer with its residual Add (fuse_gemm_residual).
  if (node.domain == "fovea") return node.op_type == "FusedConv" || node.op_type == "Gemm";
  return node.domain.empty() &&
         (node.op_type == "Conv" || node.op_type == "Gemm" || node.op_type == "MatMul");
}

std::string node_precision(const Graph& graph, const Node& node) {
  if (node.inputs.empty() || node.inputs[0] == kNoValue) return "-";
  const Value& input = graph.value(node.inputs[0]);
  if (input.producer >= 0) {
    const Node& producer = graph.nodes[static_cast<std::size_t>(input.producer)];
    if (producer.op_type == "DequantizeLinear" && producer.domain.empty()) return "int8";
  }
  return std::string(data_type_name(input.type.dtype));
}

}  // namespace fovea::runtime::quant
