// Identity and Dropout (inference mode): the output is the input. Passes remove both; these
// kernels run them when a graph output is one, and in the conformance tests.
#include <cstring>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {
namespace {

Status run_copy(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.bytes() > 0) {
    std::memcpy(ctx.output(0).raw(), in.raw(), in.bytes());
  }
  return Status::ok();
}

Status infer_dropout(InferContext& ctx) {
  // training_mode (input 2, opset 12+) must be false or absent: fovea only runs inference.
  if (ctx.has_input(2)) {
    FOVEA_TRY(ctx.require_dtype(2, {DataType::kBool}));
    const Tensor* training = ctx.input_value(2);
    if (training == nullptr) return ctx.error(StatusCode::kUnsupported, "training_mode must be a constant");
    if (training->numel() != 1) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("training_mode has {} elements, expected 1", training->numel()));
    }
    if (integer_at(*training, 0) != 0) {
      return ctx.error(StatusCode::kUnsupported, "training_mode=true is not supported (inference only)");
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_type(0).dims);
  if (ctx.output_count() > 1) {
    ctx.set_output(1, DataType::kBool, ctx.input_type(0).dims);
  }
  return Status::ok();
}

Status run_dropout(KernelContext& ctx) {
  FOVEA_TRY(run_copy(ctx));
  if (ctx.output_count() > 1) {
    Tensor& mask = ctx.output(1);  // every element kept
    std::memset(mask.raw(), 1, mask.bytes());
  }
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Identity", .infer = infer_same_as_input, .run = run_copy});
FOVEA_REGISTER_OP(
    {.op_type = "Dropout", .max_inputs = 3, .max_outputs = 2, .infer = infer_dropout, .run = run_dropout});

}  // namespace fovea::runtime::ops
