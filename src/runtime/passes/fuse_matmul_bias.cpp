// A linear layer as exporters write it, MatMul(x, W) then Add(bias), becomes one Gemm (passes.h):
// the CUDA executor adds Gemm's bias row in cuBLASLt's epilogue, where the Add was a pass of its own
// over the layer's output (9% of ViT-B's time on the H200: docs/perf.md, "After SiLU and GELU
// fusion"). x of higher rank is seen as the matrix [rows, K] it already is in memory, through two
// Reshapes, which cost nothing (the executors alias them). A Mul of the sum by a constant row (a
// scale per output column: ConvNeXt's layer scale, once sink_transposes has moved it next to the
// layer) goes into the weights and the bias: (x W + b) * s = x (W * s) + b * s.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

constexpr int kGemmOpset = 13;

// The bias operand of `add` (the operand other than `product`) when it is a float32 constant row
// of `n` values ([n], [1, n], [1, 1, n]...), as a [n] tensor.
std::optional<Tensor> bias_row(const Graph& graph, const Node& add, ValueId product, std::int64_t n) {
  const ValueId other = add.inputs[0] == product ? add.inputs[1] : add.inputs[0];
  if (other == product || !graph.is_constant(other)) return std::nullopt;
  const Tensor& bias = *graph.value(other).constant;
  if (bias.dtype() != DataType::kFloat32 || bias.rank() < 1 || bias.numel() != n ||
      bias.dim(bias.rank() - 1) != n)
    return std::nullopt;
  return bias.clone().reshaped({n});
}

Node make_node(const Graph& graph, std::string name, std::string op_type, std::vector<ValueId> inputs,
               ValueId output) {
  Node node;
  node.name = std::move(name);
  node.op_type = std::move(op_type);
  node.opset = std::max(graph.opsets.count("") ? graph.opsets.at("") : kGemmOpset, kGemmOpset);
  node.inputs = std::move(inputs);
  node.outputs = {output};
  return node;
}

// The operand of `mul` other than `value` when it is a float32 constant row of `n` values that
// broadcasts only along the last axis, as a [n] tensor.
std::optional<Tensor> scale_row(const Graph& graph, const Node& mul, ValueId value, std::int64_t n) {
  if (!is_op(mul, "Mul") || mul.inputs.size() != 2) return std::nullopt;
  return bias_row(graph, mul, value, n);
}

// W [K, N] with column j multiplied by scale[j].
Tensor scaled_columns(const Tensor& w, const Tensor& scale) {
  Tensor out = w.clone();
  const std::int64_t k = w.dim(0), n = w.dim(1);
  float* data = out.data<float>();
  const float* s = scale.data<float>();
  for (std::int64_t row = 0; row < k; ++row) {
    for (std::int64_t col = 0; col < n; ++col) data[row * n + col] *= s[col];
  }
  return out;
}

struct Rewrite {
  std::size_t matmul = 0;         // node indices
  std::vector<std::size_t> gone;  // the Add, and the Mul folded into the weights
  std::vector<Node> nodes;        // what replaces the MatMul
};

// MatMul(x [..., K], W [K, N] constant) read only by Add(., bias [N] constant) whose sum has the
// product's shape.
std::optional<Rewrite> match_at(Graph& graph, std::size_t index) {
  const Node& matmul = graph.nodes[index];
  if (!is_op(matmul, "MatMul") || matmul.inputs.size() != 2 || !graph.is_constant(matmul.inputs[1]))
    return std::nullopt;
  const Tensor& w = *graph.value(matmul.inputs[1]).constant;
  const std::optional<Shape> x = known_shape(graph, matmul.inputs[0]);
  const std::optional<Shape> y = known_shape(graph, matmul.outputs[0]);
  if (w.rank() != 2 || w.dtype() != DataType::kFloat32 || !x || x->size() < 2 || !y) return std::nullopt;
  const std::int64_t k = w.dim(0), n = w.dim(1);
  Node* add = sole_consumer(graph, matmul.outputs[0]);
  if (add == nullptr || !is_op(*add, "Add") || add->inputs.size() != 2 ||
      known_shape(graph, add->outputs[0]) != y)
    return std::nullopt;
  std::optional<Tensor> bias = bias_row(graph, *add, matmul.outputs[0], n);
  if (!bias) return std::nullopt;

  Rewrite rewrite{.matmul = index, .gone = {static_cast<std::size_t>(add - graph.nodes.data())}};
  const std::string base = matmul.name.empty() ? graph.value(matmul.outputs[0]).name : matmul.name;
  ValueId weights = matmul.inputs[1];
  ValueId out = add->outputs[0];
  Node* mul = sole_consumer(graph, out);
  if (std::optional<Tensor> scale; mul != nullptr && known_shape(graph, mul->outputs[0]) == y &&
                                   (scale = scale_row(graph, *mul, out, n))) {
    weights = graph.add_constant(base + "/scaled_weights", scaled_columns(w, *scale));
    *bias = scaled_columns(bias->reshaped({1, n}), *scale).reshaped({n});
    rewrite.gone.push_back(static_cast<std::size_t>(mul - graph.nodes.data()));
    out = mul->outputs[0];
  }
  const ValueId bias_value = graph.add_constant(base + "/bias", std::move(*bias));
  if (x->size() == 2) {
    rewrite.nodes.push_back(
        make_node(graph, base, "Gemm", {graph.nodes[index].inputs[0], weights, bias_value}, out));
    return rewrite;
  }
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < x->size(); ++d) rows *= (*x)[d];
  const DataType dtype = graph.value(out).type.dtype;  // by value: adding values may move them
  const ValueId flat_shape =
      graph.add_constant(base + "/rows", Tensor::from_vector<std::int64_t>(DataType::kInt64, {2}, {rows, k}));
  const ValueId flat = graph.add_value(base + "/rows_x", ValueType{dtype, dims_of(Shape{rows, k})});
  const ValueId product = graph.add_value(base + "/rows_y", ValueType{dtype, dims_of(Shape{rows, n})});
  const ValueId out_shape = graph.add_constant(
      base + "/shape",
      Tensor::from_vector<std::int64_t>(DataType::kInt64, {static_cast<std::int64_t>(y->size())}, *y));
  rewrite.nodes.push_back(
      make_node(graph, base + "/flatten", "Reshape", {graph.nodes[index].inputs[0], flat_shape}, flat));
  rewrite.nodes.push_back(make_node(graph, base, "Gemm", {flat, weights, bias_value}, product));
  rewrite.nodes.push_back(make_node(graph, base + "/unflatten", "Reshape", {product, out_shape}, out));
  return rewrite;
}

}  // namespace

void fuse_matmul_bias(Graph& graph) {
  std::vector<Rewrite> rewrites;
  std::vector<bool> in_a_rewrite(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (in_a_rewrite[n]) continue;
    if (std::optional<Rewrite> rewrite = match_at(graph, n)) {
      in_a_rewrite[rewrite->matmul] = true;
      for (std::size_t gone : rewrite->gone) in_a_rewrite[gone] = true;
      rewrites.push_back(std::move(*rewrite));
    }
  }
  if (rewrites.empty()) return;
  std::vector<std::vector<Node>> replacing(graph.nodes.size());
  std::vector<bool> dropped(graph.nodes.size(), false);
  for (Rewrite& rewrite : rewrites) {
    replacing[rewrite.matmul] = std::move(rewrite.nodes);
    dropped[rewrite.matmul] = true;
    for (std::size_t gone : rewrite.gone) dropped[gone] = true;
  }
  // The new nodes read what the MatMul read and a constant, so they stand where the MatMul stood.
  splice_nodes(graph, std::move(replacing), dropped);
}

}  // namespace fovea::runtime
