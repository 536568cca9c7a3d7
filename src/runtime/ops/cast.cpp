// Cast between every dtype the runtime has: float32/64, float16, int64/32/8, uint8 and bool.
// Floating to integer truncates toward zero and saturates at the target's range (NaN gives 0,
// which ONNX leaves implementation-defined); to bool is "nonzero"; between integers it wraps.
// Opset 19's `saturate` only concerns float8 types, which fovea does not have, so it is ignored.
#include <limits>
#include <string>

#include "runtime/onnx_loader.h"
#include "runtime/ops/cast_util.h"
#include "runtime/ops/elementwise_util.h"

namespace fovea::runtime::ops {
namespace {

using CastTypes = DTypes<FOVEA_ALL_TYPES>;

// Cast's `to` holds an ONNX TensorProto data type code.
Result<DataType> cast_target(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t to, ctx.node().attr_int("to"));
  auto dtype = data_type_from_onnx(to);
  if (!dtype.is_ok()) {
    return ctx.error(StatusCode::kUnsupported, "cast: ", dtype.status().message());
  }
  return *dtype;
}

Status infer_cast(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(DataType to, cast_target(ctx));
  ctx.set_output(0, to, ctx.input_type(0).dims);
  return Status::ok();
}

}  // namespace

Status run_cast(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  CastTypes::dispatch(ctx.input(0).dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    CastTypes::dispatch(out.dtype(), [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      map_elements<To, From>(
          out, [](From x) { return convert_value<To>(x); }, ctx.input(0));
    });
  });
  return Status::ok();
}

FOVEA_REGISTER_OP(
    {.op_type = "Cast", .infer = infer_cast, .run = run_cast, .float16 = OpDef::Float16::kNative});

}  // namespace fovea::runtime::ops
