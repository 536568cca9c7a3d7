// Quantized convolutions become fovea.Int8Conv (ops/int8_conv_util.h), the CUDA executor's int8
// tensor-core kernel. See passes.h.
#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "runtime/ops/int8_conv_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

constexpr std::int64_t kOnnxFloat = 1, kOnnxFloat16 = 10;

bool all_zero_int8(const Graph& graph, ValueId id) {
  if (!graph.is_constant(id)) return false;
  const Tensor& t = *graph.value(id).constant;
  if (t.dtype() != DataType::kInt8) return false;
  const std::int8_t* v = t.data<std::int8_t>();
  return std::all_of(v, v + t.numel(), [](std::int8_t z) { return z == 0; });
}

bool float_constant(const Graph& graph, ValueId id) {
  if (!graph.is_constant(id)) return false;
  const DataType dtype = graph.value(id).constant->dtype();
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat16;
}

// A symmetric DequantizeLinear (zero point absent or 0) of an int8 value with a constant float
// scale of `scale_rank`: the producer of a quantized layer's input (rank 0, per tensor) or weights
// (rank 1, per output channel along axis 0).
const Node* symmetric_dequantize(Graph& graph, ValueId value, int scale_rank) {
  const Node* node = producer_of(graph, value);
  if (node == nullptr || !is_op(*node, "DequantizeLinear") || node->inputs.size() < 2) return nullptr;
  if (graph.value(node->inputs[0]).type.dtype != DataType::kInt8 || !float_constant(graph, node->inputs[1]))
    return nullptr;
  if (graph.value(node->inputs[1]).constant->rank() != scale_rank) return nullptr;
  if (node->inputs.size() > 2 && node->inputs[2] != kNoValue && !all_zero_int8(graph, node->inputs[2]))
    return nullptr;
  const Result<std::int64_t> axis = node->attr_int("axis", 1);
  return scale_rank == 0 || (axis.is_ok() && *axis == 0) ? node : nullptr;
}

// A channels_last FusedConv of one group whose input and weights are read through symmetric
// DequantizeLinears, in a geometry the kernel takes.
struct Candidate {
  const Node* x = nullptr;  // DequantizeLinear of the input
  const Node* w = nullptr;  // DequantizeLinear of the weights
};

std::optional<Candidate> candidate(Graph& graph, const Node& node) {
  if (node.domain != "fovea" || node.op_type != "FusedConv" || node.inputs.size() < 2) return std::nullopt;
  const Result<std::int64_t> nhwc = node.attr_int("channels_last", 0);
  const Result<std::int64_t> group = node.attr_int("group", 1);
  if (!nhwc.is_ok() || *nhwc == 0 || !group.is_ok() || *group != 1) return std::nullopt;
  const Candidate c{symmetric_dequantize(graph, node.inputs[0], 0),
                    symmetric_dequantize(graph, node.inputs[1], 1)};
  if (c.x == nullptr || c.w == nullptr || !graph.is_constant(c.w->inputs[0])) return std::nullopt;
  const std::optional<Shape> x = known_shape(graph, c.x->inputs[0]);
  const Shape& w = graph.value(c.w->inputs[0]).constant->shape();
  if (!x || x->size() != 4 || w.size() != 4 || !ops::int8_conv_unsupported(*x, w).empty())
    return std::nullopt;
  return c;
}

// `id` as a float32 constant: itself, or its exact widening when a float16 plan narrowed it (the
// kernel's epilogue reads float32 parameters), made once however many layers read it (an input's
// scale is read by every layer it feeds).
class Float32Constants {
 public:
  explicit Float32Constants(Graph& graph) : graph_(graph) {}

  ValueId operator()(ValueId id) {
    if (graph_.value(id).constant->dtype() == DataType::kFloat32) return id;
    auto [it, inserted] = widened_.try_emplace(id, kNoValue);
    if (inserted) {
      const Tensor& t = *graph_.value(id).constant;
      Tensor wide = Tensor::allocate(DataType::kFloat32, t.shape());
      for (std::int64_t i = 0; i < t.numel(); ++i) wide.data<float>()[i] = half_to_float(t.data<Half>()[i]);
      it->second = graph_.add_constant(graph_.value(id).name + "/fp32", std::move(wide));
    }
    return it->second;
  }

 private:
  Graph& graph_;
  std::map<ValueId, ValueId> widened_;
};

// A QuantizeLinear of `y` to int8 at a constant float32 scale with zero point 0: a next layer's
// input, which the convolution can write itself.
bool quantizes_symmetrically(const Graph& graph, const Node& q, ValueId y) {
  return is_op(q, "QuantizeLinear") && q.inputs.size() >= 3 && q.inputs[0] == y &&
         scalar_of(graph, q.inputs[1]) && graph.value(q.inputs[1]).constant->rank() == 0 &&
         all_zero_int8(graph, q.inputs[2]);
}

// The QuantizeLinear that is the only reader of `y`, quantizing it symmetrically.
Node* output_quantize(Graph& graph, ValueId y) {
  Node* q = sole_consumer(graph, y);
  return q != nullptr && quantizes_symmetrically(graph, *q, y) ? q : nullptr;
}

// Rewrites FusedConv `conv` in place as fovea.Int8Conv; returns the QuantizeLinear it absorbed.
Node* to_int8_conv(Graph& graph, Node& conv, const Candidate& c, Float32Constants& float32_constant) {
  const ValueId y = conv.outputs[0];
  const ValueId bias = conv.inputs.size() > 2 ? conv.inputs[2] : kNoValue;
  const ValueId residual = conv.inputs.size() > 3 ? conv.inputs[3] : kNoValue;
  std::vector<ValueId> inputs = {c.x->inputs[0],
                                 float32_constant(c.x->inputs[1]),
                                 c.w->inputs[0],
                                 float32_constant(c.w->inputs[1]),
                                 bias == kNoValue ? kNoValue : float32_constant(bias),
                                 residual};
  Node* q = output_quantize(graph, y);
  conv.attributes.erase("channels_last");
  conv.attributes.erase("group");
  if (q != nullptr) {
    inputs.push_back(q->inputs[1]);
    conv.outputs[0] = q->outputs[0];
  } else {
    Attribute to;
    to.i = graph.value(y).type.dtype == DataType::kFloat16 ? kOnnxFloat16 : kOnnxFloat;
    conv.attributes["to"] = to;
  }
  while (!inputs.empty() && inputs.back() == kNoValue) inputs.pop_back();
  conv.op_type = "Int8Conv";
  conv.inputs = std::move(inputs);
  return q;
}

bool is_int8_conv(const Node& node) {
  return node.domain == "fovea" && node.op_type == "Int8Conv";
}

bool writes_float(const Node& node) {
  return is_int8_conv(node) &&
         (node.inputs.size() <= ops::kInt8ConvYScale || node.inputs[ops::kInt8ConvYScale] == kNoValue);
}

// An Int8Conv that reads `y` as its residual Z and nowhere else.
bool reads_as_residual_only(const Node& node, ValueId y) {
  const auto z = static_cast<std::size_t>(ops::kInt8ConvZ);
  return is_int8_conv(node) && node.inputs.size() > z && node.inputs[z] == y &&
         std::count(node.inputs.begin(), node.inputs.end(), y) == 1;
}

// The residual stream of `y`, an Int8Conv's float output: its one symmetric QuantizeLinear (the
// next layers' input) when every other reader is an Int8Conv reading y as its residual Z alone.
struct ResidualStream {
  Node* quantize = nullptr;
  std::vector<Node*> residual_readers;
};

std::optional<ResidualStream> residual_stream(Graph& graph, ValueId y) {
  if (graph.is_graph_output(y)) return std::nullopt;
  ResidualStream stream;
  for (Node* reader : readers(graph, y)) {
    if (stream.quantize == nullptr && quantizes_symmetrically(graph, *reader, y)) {
      stream.quantize = reader;
      continue;
    }
    if (!reads_as_residual_only(*reader, y)) return std::nullopt;
    stream.residual_readers.push_back(reader);
  }
  if (stream.quantize == nullptr || stream.residual_readers.empty()) return std::nullopt;
  return stream;
}

// `node`'s input `index`, growing its inputs (with absent ones) as far as needed.
void set_input(Node& node, int index, ValueId value) {
  if (node.inputs.size() <= static_cast<std::size_t>(index))
    node.inputs.resize(static_cast<std::size_t>(index) + 1, kNoValue);
  node.inputs[static_cast<std::size_t>(index)] = value;
}

// ResNet's block outputs: an Int8Conv writes float for its residual readers and a QuantizeLinear
// makes the next block's int8 input of it. The convolution writes the int8 tensor itself and the
// residual readers read it at its scale (Z_scale), as TensorRT's int8 plans keep the residual
// stream: the quantize pass and the float tensor are gone, and residuals move one byte an element
// instead of two. The residual then carries the int8 rounding of the value, half a step of the
// scale calibrated for the next block's input. Returns the QuantizeLinears it absorbed.
std::vector<const Node*> keep_residual_streams_int8(Graph& graph) {
  std::vector<const Node*> absorbed;
  for (Node& node : graph.nodes) {
    if (!writes_float(node)) continue;
    const std::optional<ResidualStream> stream = residual_stream(graph, node.outputs[0]);
    if (!stream) continue;
    const ValueId int8_y = stream->quantize->outputs[0];
    const ValueId scale = stream->quantize->inputs[1];
    set_input(node, ops::kInt8ConvYScale, scale);
    node.attributes.erase("to");
    node.outputs[0] = int8_y;
    for (Node* reader : stream->residual_readers) {
      set_input(*reader, ops::kInt8ConvZ, int8_y);
      set_input(*reader, ops::kInt8ConvZScale, scale);
    }
    absorbed.push_back(stream->quantize);
  }
  return absorbed;
}

}  // namespace

void fuse_int8_convolutions(Graph& graph, Int8Residuals residuals) {
  std::vector<bool> removed(graph.nodes.size(), false);
  Float32Constants float32_constants(graph);
  for (Node& node : graph.nodes) {
    const std::optional<Candidate> c = candidate(graph, node);
    if (!c) continue;
    if (const Node* q = to_int8_conv(graph, node, *c, float32_constants); q != nullptr) {
      removed[static_cast<std::size_t>(q - graph.nodes.data())] = true;
    }
  }
  if (residuals == Int8Residuals::kInt8) {
    for (const Node* q : keep_residual_streams_int8(graph)) {
      removed[static_cast<std::size_t>(q - graph.nodes.data())] = true;
    }
  }
  erase_nodes(graph, removed);
  eliminate_dead_nodes(graph);  // the DequantizeLinears the fused layers read through
}

}  // namespace fovea::runtime
