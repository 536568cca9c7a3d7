// The pointwise math ops of pointwise_math.h on the CPU, through the shared elementwise kernel.
//
//   op                                          dtypes
//   Cos Sin Tan Acos Asin Atan Sinh Cosh        float32/64
//   Asinh Acosh Atanh Round
//   Celu Selu ThresholdedRelu Shrink Softplus Softsign
//   IsNaN IsInf                                 float32/64 in, bool out
//   Sign                                        float32/64, int64/32/8, uint8
//   Mod                                         float32/64 (fmod = 1), int64/32/8, uint8
//   PRelu                                       float32/64, int64/32
#include <string>

#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/pointwise_math.h"

namespace fovea::runtime::ops {

Shape prelu_slope_shape(int opset, const Shape& x, const Shape& slope) {
  if (opset < 7 && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1] && slope[0] != 1) {
    Shape per_channel(x.size() - 1, 1);
    per_channel[0] = slope[0];
    return per_channel;
  }
  return slope;
}

namespace {

using PReluTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32>;

// Ops that test each element (IsNaN, IsInf): a bool of x's shape.
template <typename Types, typename Op>
Status infer_predicate(InferContext& ctx) {
  FOVEA_TRY(Types::require(ctx, 0));
  FOVEA_TRY(make_op<Op>(ctx.node()).status());
  ctx.set_output(0, DataType::kBool, ctx.input_type(0).dims);
  return Status::ok();
}

template <typename Types, typename Op>
Status run_predicate(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const Op op, make_op<Op>(ctx.node()));
  Types::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<bool, T>(ctx.output(0), op, ctx.input(0));
  });
  return Status::ok();
}

Status infer_mod(InferContext& ctx) {
  FOVEA_TRY(NumericTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  FOVEA_ASSIGN_OR_RETURN(const ModOp op, ModOp::make(ctx.node()));
  const DataType dtype = ctx.input_dtype(0);
  if (!op.fmod && (dtype == DataType::kFloat32 || dtype == DataType::kFloat64)) {
    return ctx.error(StatusCode::kInvalidArgument, "floating-point inputs need fmod = 1");
  }
  return infer_broadcast_output(ctx, dtype);
}

Status run_mod(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ModOp op, ModOp::make(ctx.node()));
  NumericTypes::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T, T>(ctx.output(0), op, ctx.input(0), ctx.input(1));
  });
  return Status::ok();
}

Status infer_prelu(InferContext& ctx) {
  FOVEA_TRY(PReluTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  const Dims* x = ctx.input_dims(0);
  const Dims* slope = ctx.input_dims(1);
  if (x != nullptr && slope != nullptr && all_known(*x) && all_known(*slope)) {
    const Dims effective = dims_of(prelu_slope_shape(ctx.opset(), shape_of(*x), shape_of(*slope)));
    FOVEA_ASSIGN_OR_RETURN(const std::optional<Dims> out, broadcast_dims(ctx, {x, &effective}));
    if (!out.has_value() || *out != *x) {
      return ctx.error(StatusCode::kInvalidArgument, "slope of shape ", dims_string(*slope),
                       " does not broadcast to x of shape ", dims_string(*x));
    }
    ctx.set_output(0, ctx.input_dtype(0), *x);
    return Status::ok();
  }
  return infer_broadcast_output(ctx, ctx.input_dtype(0));
}

Status run_prelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor slope = ctx.input(1).reshaped(prelu_slope_shape(ctx.opset(), x.shape(), ctx.input(1).shape()));
  PReluTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T, T>(ctx.output(0), PReluOp{}, x, slope);
  });
  return Status::ok();
}

}  // namespace

#define FOVEA_REGISTER_UNARY(op_name, Types, Op) \
  FOVEA_REGISTER_OP({.op_type = op_name, .infer = infer_unary<Types, Op>, .run = run_unary<Types, Op>})

FOVEA_REGISTER_UNARY("Cos", FloatTypes, CosOp);
FOVEA_REGISTER_UNARY("Sin", FloatTypes, SinOp);
FOVEA_REGISTER_UNARY("Tan", FloatTypes, TanOp);
FOVEA_REGISTER_UNARY("Acos", FloatTypes, AcosOp);
FOVEA_REGISTER_UNARY("Asin", FloatTypes, AsinOp);
FOVEA_REGISTER_UNARY("Atan", FloatTypes, AtanOp);
FOVEA_REGISTER_UNARY("Sinh", FloatTypes, SinhOp);
FOVEA_REGISTER_UNARY("Cosh", FloatTypes, CoshOp);
FOVEA_REGISTER_UNARY("Asinh", FloatTypes, AsinhOp);
FOVEA_REGISTER_UNARY("Acosh", FloatTypes, AcoshOp);
FOVEA_REGISTER_UNARY("Atanh", FloatTypes, AtanhOp);
FOVEA_REGISTER_UNARY("Round", FloatTypes, RoundOp);
FOVEA_REGISTER_UNARY("Sign", NumericTypes, SignOp);
FOVEA_REGISTER_UNARY("Celu", FloatTypes, CeluOp);
FOVEA_REGISTER_UNARY("Selu", FloatTypes, SeluOp);
FOVEA_REGISTER_UNARY("ThresholdedRelu", FloatTypes, ThresholdedReluOp);
FOVEA_REGISTER_UNARY("Shrink", FloatTypes, ShrinkOp);
FOVEA_REGISTER_UNARY("Softplus", FloatTypes, SoftplusOp);
FOVEA_REGISTER_UNARY("Softsign", FloatTypes, SoftsignOp);

#undef FOVEA_REGISTER_UNARY

FOVEA_REGISTER_OP({.op_type = "IsNaN",
                   .infer = infer_predicate<FloatTypes, IsNaNOp>,
                   .run = run_predicate<FloatTypes, IsNaNOp>});
FOVEA_REGISTER_OP({.op_type = "IsInf",
                   .infer = infer_predicate<FloatTypes, IsInfOp>,
                   .run = run_predicate<FloatTypes, IsInfOp>});
FOVEA_REGISTER_OP({.op_type = "Mod", .min_inputs = 2, .max_inputs = 2, .infer = infer_mod, .run = run_mod});
FOVEA_REGISTER_OP(
    {.op_type = "PRelu", .min_inputs = 2, .max_inputs = 2, .infer = infer_prelu, .run = run_prelu});

}  // namespace fovea::runtime::ops
