// fovea.Attention: scaled dot-product attention in one node, made by fuse_attention from the
// MatMul -> scale -> (Add bias) -> Softmax -> MatMul chain exporters write (passes.h).
//
//   Y = Softmax(scale * (Q KT) + B, last axis) V
//
// Inputs Q [..., Tq, D], KT [..., D, Tk] (the keys as the first MatMul reads them), V [..., Tk, Dv]
// with the same leading dims, and B (optional) broadcastable to [..., Tq, Tk]; attribute scale
// (default 1). Y is [..., Tq, Dv]. The CPU reference evaluates the chain's own ops in the pass's
// order, so it gives what the unfused graph gives, up to where the scale is applied.
//
// Optional attributes (attention_util.h, made by fold_attention_views): q_view, kt_view, v_view read
// the operand as a strided view of its input (the head split of a packed QKV projection), and y_perm
// makes the output Transpose(Y, y_perm) (the heads merged back).
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/evaluate.h"
#include "runtime/op.h"
#include "runtime/ops/attention_util.h"

namespace fovea::runtime::ops {
namespace {

constexpr int kQ = kAttentionQ, kKt = kAttentionKt, kV = kAttentionV, kBias = kAttentionBias;

// Operand `input`'s dims: its view's sizes, or the input's own dims. A view must lie inside a
// known input.
Result<Dims> operand_dims(InferContext& ctx, int input) {
  FOVEA_ASSIGN_OR_RETURN(const std::optional<AttentionView> view, attention_view(ctx.node(), input));
  if (!view) return *ctx.input_dims(input);
  const Dims& base = *ctx.input_dims(input);
  const bool known = std::all_of(base.begin(), base.end(), [](const Dim& d) { return d.known(); });
  std::int64_t numel = 1;
  for (const Dim& d : base) numel *= d.value;
  if (known && !view_within(*view, numel)) {
    return ctx.error(StatusCode::kInvalidArgument, attention_view_attribute(input),
                     " reaches past its input ", dims_string(base));
  }
  Dims dims;
  for (std::int64_t size : view->sizes) dims.push_back(Dim{size});
  return dims;
}

Status infer_attention(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(kQ, {DataType::kFloat32, DataType::kFloat64}));
  FOVEA_TRY(ctx.require_same_dtype(kQ, kKt));
  FOVEA_TRY(ctx.require_same_dtype(kQ, kV));
  if (ctx.has_input(kBias)) FOVEA_TRY(ctx.require_same_dtype(kQ, kBias));
  FOVEA_TRY(ctx.node().attr_float("scale", 1.0f).status());
  for (int input : {kQ, kKt, kV}) {
    if (ctx.input_dims(input) == nullptr)
      return ctx.error(StatusCode::kInvalidArgument, "needs ranked inputs");
  }
  FOVEA_ASSIGN_OR_RETURN(const Dims q, operand_dims(ctx, kQ));
  FOVEA_ASSIGN_OR_RETURN(const Dims kt, operand_dims(ctx, kKt));
  FOVEA_ASSIGN_OR_RETURN(const Dims v, operand_dims(ctx, kV));
  const std::size_t rank = q.size();
  if (rank < 2 || rank > 8 || kt.size() != rank || v.size() != rank) {
    return ctx.error(StatusCode::kInvalidArgument, "Q, KT and V need one rank from 2 to 8, got ",
                     dims_string(q), ", ", dims_string(kt), ", ", dims_string(v));
  }
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
  Dims y = q;
  y[rank - 1] = v[rank - 1];
  FOVEA_ASSIGN_OR_RETURN(const std::optional<std::vector<std::int64_t>> perm,
                         attention_output_perm(ctx.node(), rank));
  Dims out = y;
  if (perm) {
    for (std::size_t i = 0; i < rank; ++i) out[i] = y[static_cast<std::size_t>((*perm)[i])];
  }
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

// Operand `input` as its own tensor: the input itself, or its view gathered.
Result<Tensor> operand(KernelContext& ctx, int input) {
  FOVEA_ASSIGN_OR_RETURN(const std::optional<AttentionView> view, attention_view(ctx.node(), input));
  return view ? gather_view(ctx.input(input), *view) : ctx.input(input);
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
  FOVEA_ASSIGN_OR_RETURN(const Tensor q, operand(ctx, kQ));
  FOVEA_ASSIGN_OR_RETURN(const Tensor kt, operand(ctx, kKt));
  FOVEA_ASSIGN_OR_RETURN(const Tensor v, operand(ctx, kV));
  FOVEA_ASSIGN_OR_RETURN(Tensor scores, apply("MatMul", {q, kt}, node));
  FOVEA_ASSIGN_OR_RETURN(scores, apply("Mul", {scores, factor}, node));
  if (ctx.has_input(kBias)) {
    FOVEA_ASSIGN_OR_RETURN(scores, apply("Add", {scores, ctx.input(kBias)}, node));
  }
  Attribute last_axis;
  last_axis.kind = Attribute::Kind::kInt;
  last_axis.i = -1;
  FOVEA_ASSIGN_OR_RETURN(Tensor weights, apply("Softmax", {scores}, node, {{"axis", last_axis}}));
  FOVEA_ASSIGN_OR_RETURN(Tensor y, apply("MatMul", {weights, v}, node));
  FOVEA_ASSIGN_OR_RETURN(const std::optional<std::vector<std::int64_t>> perm,
                         attention_output_perm(node, static_cast<std::size_t>(y.rank())));
  if (perm) {
    Attribute perm_attribute;
    perm_attribute.kind = Attribute::Kind::kInts;
    perm_attribute.ints = *perm;
    FOVEA_ASSIGN_OR_RETURN(y, apply("Transpose", {y}, node, {{"perm", perm_attribute}}));
  }
  std::memcpy(ctx.output(0).raw(), y.raw(), y.bytes());
  return Status::ok();
}

// Two products of 2 * Tq * Tk * D and 2 * Tq * Tk * Dv per matrix, and the softmax's ~5 per score.
double attention_flops(const Node& node, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  const auto logical = [&](int input) {
    const Result<std::optional<AttentionView>> view = attention_view(node, input);
    return view.is_ok() && view.value() ? view.value()->sizes : inputs[static_cast<std::size_t>(input)];
  };
  const Shape q = logical(kQ);
  const Shape v = logical(kV);
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
