// fovea.FusedConv: Conv + bias + residual Add + activation in one kernel, made by the fusion pass.
// Inputs X, W, B (optional), Z (optional residual with the output's shape); every Conv attribute, plus
// "activation" ("" | Relu | LeakyRelu | Clip | Sigmoid | HardSwish) with activation_alpha (LeakyRelu,
// default 0.01) and activation_min / activation_max (Clip). Output = act(conv(X, W) + B + Z): the
// Conv kernel itself, with the activation applied in its epilogue.
#include <fmt/format.h>

#include "runtime/ops/conv_util.h"

namespace fovea::runtime::ops {
namespace {

Status infer_fused_conv(InferContext& ctx) {
  FOVEA_TRY(read_activation(ctx).status());
  return infer_conv(ctx);
}

Status run_fused_conv(KernelContext& ctx) {
  const InferContext concrete = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(Activation activation, read_activation(concrete));
  return run_conv(ctx, activation);
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
