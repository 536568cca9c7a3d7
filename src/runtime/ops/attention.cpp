// fovea.Attention: scaled dot-product attention in one node, made by fuse_attention from the
// MatMul -> scale -> (Add bias) -> Softmax -> MatMul chain exporters write (passes.h).
//
//   Y = Softmax(scale * (Q KT) + B, last axis) V
//
// Inputs Q [..., Tq, D], KT [..., D, Tk] (the keys as the first MatMul reads them), V [..., Tk, Dv]
// with the same leading dims, and B (optional) broadcastable to [..., Tq, Tk]; attribute scale
// (default 1). Y is [..., Tq, Dv]. The CPU reference evaluates the chain's own ops in the pass's
// order, so it gives what the unfused graph gives, up to where the scale is applied.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/evaluate.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {
namespace {

constexpr int kQ = 0, kKt = 1, kV = 2, kBias = 3;

Status infer_attention(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(kQ, {DataType::kFloat32, DataType::kFloat64}));
  FOVEA_TRY(ctx.require_same_dtype(kQ, kKt));
  FOVEA_TRY(ctx.require_same_dtype(kQ, kV));
  if (ctx.has_input(kBias)) FOVEA_TRY(ctx.require_same_dtype(kQ, kBias));
  FOVEA_TRY(ctx.node().attr_float("scale", 1.0f).status());
  FOVEA_TRY(ctx.require_rank(kQ, 2, 8));
  const Dims& q = *ctx.input_dims(kQ);
  const std::size_t rank = q.size();
  FOVEA_TRY(ctx.require_rank(kKt, static_cast<int>(rank), static_cast<int>(rank)));
  FOVEA_TRY(ctx.require_rank(kV, static_cast<int>(rank), static_cast<int>(rank)));
  const Dims& kt = *ctx.input_dims(kKt);
  const Dims& v = *ctx.input_dims(kV);
  const auto differ = [](const Dim& a, const Dim& b) { return a.known() && b.known() && a.value != b.value; };
  for (std::size_t d = 0; d + 2 < rank; ++d) {
    if (differ(q[d], kt[d]) || differ(q[d], v[d])) {
      return ctx.error(StatusCode::kInvalidArgument, "Q, KT and V must have the same leading dims, got ",
                       dims_string(q), ", ", dims_string(kt), ", ", dims_string(v));
    }
  }
  if (differ(q[rank - 1], kt[rank - 2]) || differ(kt[rank - 1], v[rank - 2])) {
    return ctx.error(StatusCode::kInvalidArgument, "Q ", dims_string(q), ", KT ", dims_string(kt), " and V ",
                     dims_string(v), " do not chain: Q [.., Tq, D], KT [.., D, Tk], V [.., Tk, Dv]");
  }
  if (ctx.has_input(kBias)) {
    const Dims* bias = ctx.input_dims(kBias);
    if (bias != nullptr && bias->size() > rank) {
      return ctx.error(StatusCode::kInvalidArgument, "the bias ", dims_string(*bias),
                       " has more dims than the scores");
    }
  }
  Dims out = q;
  out[rank - 1] = v[rank - 1];
  ctx.set_output(0, ctx.input_dtype(kQ), out);
  return Status::ok();
}

// One node of the chain on concrete tensors.
Result<Tensor> apply(std::string_view op_type, std::vector<Tensor> inputs, const Node& attention,
                     const decltype(Node::attributes)& attributes = {}) {
  Node node;
  node.name = attention.name + "/" + std::string(op_type);
  node.op_type = std::string(op_type);
  node.opset = 13;
  node.attributes = attributes;
  // Present inputs (evaluate_node reads kNoValue as omitted); the ids are not looked up.
  for (std::size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(static_cast<ValueId>(i));
  node.outputs = {static_cast<ValueId>(inputs.size())};
  FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, evaluate_node(nullptr, node, inputs, heap_allocator()));
  return std::move(outputs[0]);
}

Status run_attention(KernelContext& ctx) {
  const Node& node = ctx.node();
  FOVEA_ASSIGN_OR_RETURN(const float scale, node.attr_float("scale", 1.0f));
  const DataType dtype = ctx.input(kQ).dtype();
  Tensor factor = Tensor::allocate(dtype, {});
  if (dtype == DataType::kFloat64) {
    factor.data<double>()[0] = scale;
  } else {
    factor.data<float>()[0] = scale;
  }
  FOVEA_ASSIGN_OR_RETURN(Tensor scores, apply("MatMul", {ctx.input(kQ), ctx.input(kKt)}, node));
  FOVEA_ASSIGN_OR_RETURN(scores, apply("Mul", {scores, factor}, node));
  if (ctx.has_input(kBias)) {
    FOVEA_ASSIGN_OR_RETURN(scores, apply("Add", {scores, ctx.input(kBias)}, node));
  }
  Attribute last_axis;
  last_axis.kind = Attribute::Kind::kInt;
  last_axis.i = -1;
  FOVEA_ASSIGN_OR_RETURN(Tensor weights, apply("Softmax", {scores}, node, {{"axis", last_axis}}));
  FOVEA_ASSIGN_OR_RETURN(Tensor y, apply("MatMul", {weights, ctx.input(kV)}, node));
  std::memcpy(ctx.output(0).raw(), y.raw(), y.bytes());
  return Status::ok();
}

// Two products of 2 * Tq * Tk * D and 2 * Tq * Tk * Dv per matrix, and the softmax's ~5 per score.
double attention_flops(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  const Shape& q = inputs[kQ];
  const Shape& v = inputs[kV];
  const std::size_t rank = q.size();
  double matrices = 1;
  for (std::size_t d = 0; d + 2 < rank; ++d) matrices *= static_cast<double>(q[d]);
  const auto tq = static_cast<double>(q[rank - 2]), d = static_cast<double>(q[rank - 1]);
  const auto tk = static_cast<double>(v[rank - 2]), dv = static_cast<double>(v[rank - 1]);
  return matrices * tq * tk * (2 * d + 2 * dv + 5);
}

}  // namespace

FOVEA_REGISTER_OP({.domain = "fovea",
                   .op_type = "Attention",
                   .min_inputs = 3,
                   .max_inputs = 4,
                   .infer = infer_attention,
                   .run = run_attention,
                   .flops = attention_flops});

}  // namespace fovea::runtime::ops
