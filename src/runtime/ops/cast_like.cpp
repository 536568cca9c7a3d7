// CastLike: Cast to the dtype of a second input (whose values are not read), with Cast's kernel
// and rules (cast_util.h). Every dtype the runtime has, float16 included.
#include "runtime/ops/cast_util.h"
#include "runtime/ops/elementwise_util.h"

namespace fovea::runtime::ops {
namespace {

using CastTypes = DTypes<FOVEA_ALL_TYPES>;

Status infer_cast_like(InferContext& ctx) {
  FOVEA_TRY(CastTypes::require(ctx, 0));
  FOVEA_TRY(CastTypes::require(ctx, 1));
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_type(0).dims);
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "CastLike",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_cast_like,
                   .run = run_cast,
                   .float16 = OpDef::Float16::kNative});

}  // namespace fovea::runtime::ops
