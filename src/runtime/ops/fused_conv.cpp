// fovea.FusedConv: Conv + bias + residual Add + activation in one kernel, made by the fusion pass.
// Inputs X, W, B (optional), Z (optional residual with the output's shape); every Conv attribute, plus
// "activation" ("" | Relu | LeakyRelu | Clip | Sigmoid | HardSwish) with activation_alpha (LeakyRelu,
// default 0.01) and activation_min / activation_max (Clip). Output = act(conv(X, W) + B + Z): the
// Conv kernel itself, with the activation applied in its epilogue.
//
// channels_last=1 (set by the channels-last pass for the CUDA executor's tensor cores): X, Z and Y
// are [N, H, W, C] and W is [M, kH, kW, C/group]. The CPU reference computes it through the NCHW
// kernel between transposes.
#include <cstring>

#include <fmt/format.h>

#include "runtime/evaluate.h"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::ops {
namespace {

constexpr int kX = 0, kW = 1, kZ = 3;

Result<bool> channels_last(const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t flag, node.attr_int("channels_last", 0));
  return flag != 0;
}

// The NCHW view of a channels_last node's input types (X, W and Z are permuted, B is not).
std::vector<ValueType> nchw_types(const InferContext& ctx) {
  std::vector<ValueType> types;
  for (int i = 0; i < ctx.input_count(); ++i) {
    ValueType type = ctx.has_input(i) ? ctx.input_type(i) : ValueType{};
    if (ctx.has_input(i) && type.dims && type.dims->size() == 4 && (i == kX || i == kW || i == kZ)) {
      type.dims = permute_dims(*type.dims, kNhwcToNchw);
    }
    types.push_back(std::move(type));
  }
  return types;
}

Status infer_fused_conv(InferContext& ctx) {
  FOVEA_TRY(read_activation(ctx).status());
  FOVEA_ASSIGN_OR_RETURN(bool nhwc, channels_last(ctx.node()));
  if (!nhwc) return infer_conv(ctx);
  if (const Dims* x = ctx.input_dims(kX); x != nullptr && x->size() != 4) {
    return ctx.error(StatusCode::kUnsupported, "channels_last takes 2-D convolutions only");
  }
  InferContext nchw(ctx.graph(), ctx.node(), nchw_types(ctx),
                    std::vector<const Tensor*>(ctx.input_count(), nullptr));
  FOVEA_TRY(infer_conv(nchw));
  const ValueType& out = nchw.outputs()[0];
  ctx.set_output(0, out.dtype, out.dims ? std::optional(permute_dims(*out.dims, kNchwToNhwc)) : std::nullopt);
  return Status::ok();
}

Status run_fused_conv(KernelContext& ctx) {
  const InferContext concrete = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(Activation activation, read_activation(concrete));
  FOVEA_ASSIGN_OR_RETURN(bool nhwc, channels_last(ctx.node()));
  if (!nhwc) return run_conv(ctx, activation);
  Node nchw_node = ctx.node();
  nchw_node.attributes.erase("channels_last");
  std::vector<Tensor> inputs;
  for (int i = 0; i < ctx.input_count(); ++i) {
    const bool permute = ctx.has_input(i) && (i == kX || i == kW || i == kZ);
    inputs.push_back(permute ? permute_tensor(ctx.input(i), kNhwcToNchw) : ctx.input(i));
  }
  FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                         evaluate_node(nullptr, nchw_node, inputs, heap_allocator()));
  const Tensor nhwc_out = permute_tensor(outputs[0], kNchwToNhwc);
  std::memcpy(ctx.output(0).raw(), nhwc_out.raw(), nhwc_out.bytes());
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.domain = "fovea",
                   .op_type = "FusedConv",
                   .min_inputs = 2,
                   .max_inputs = 4,
                   .infer = infer_fused_conv,
                   .run = run_fused_conv,
                   .flops = conv_flops});

}  // namespace fovea::runtime::ops
