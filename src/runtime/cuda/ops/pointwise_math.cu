// The pointwise math ops on CUDA (trigonometric and hyperbolic functions, Round, Sign, IsNaN,
// IsInf, Mod, PRelu, Celu, Selu, ThresholdedRelu, Shrink, Softplus, Softsign) through the shared
// elementwise kernel, with the CPU reference's functors (ops/pointwise_math.h). float16 computes in
// float.
#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/pointwise_math.h"

namespace fovea::runtime::cuda {
namespace {

#define FOVEA_CUDA_PRELU_TYPES FOVEA_CUDA_FLOAT_TYPES, ::fovea::DataType::kInt64, ::fovea::DataType::kInt32

// Ops that test each element: a bool of x's shape.
template <typename Op>
Status run_predicate(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const Op op, make_device_op<Op>(ctx.node()));
  return dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<bool, T>(ctx, op, ctx.output(0), ctx.input(0));
  });
}

Status run_mod(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ops::ModOp op, ops::ModOp::make(ctx.node()));
  return dispatch_elementwise<FOVEA_CUDA_NUMERIC_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<T, T, T>(ctx, op, ctx.output(0), ctx.input(0), ctx.input(1));
  });
}

Status run_prelu(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor slope =
      ctx.input(1).reshaped(ops::prelu_slope_shape(ctx.opset(), x.shape(), ctx.input(1).shape()));
  return dispatch_elementwise<FOVEA_CUDA_PRELU_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<T, T, T>(ctx, ops::PReluOp{}, ctx.output(0), x, slope);
  });
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Cos", .run = run_unary<ops::CosOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sin", .run = run_unary<ops::SinOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Tan", .run = run_unary<ops::TanOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Acos", .run = run_unary<ops::AcosOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Asin", .run = run_unary<ops::AsinOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Atan", .run = run_unary<ops::AtanOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sinh", .run = run_unary<ops::SinhOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Cosh", .run = run_unary<ops::CoshOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Asinh", .run = run_unary<ops::AsinhOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Acosh", .run = run_unary<ops::AcoshOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Atanh", .run = run_unary<ops::AtanhOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Round", .run = run_unary<ops::RoundOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Sign", .run = run_unary<ops::SignOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Celu", .run = run_unary<ops::CeluOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Selu", .run = run_unary<ops::SeluOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ThresholdedRelu",
                        .run = run_unary<ops::ThresholdedReluOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Shrink", .run = run_unary<ops::ShrinkOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Softplus", .run = run_unary<ops::SoftplusOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Softsign", .run = run_unary<ops::SoftsignOp, FOVEA_CUDA_FLOAT_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "IsNaN", .run = run_predicate<ops::IsNaNOp>});
FOVEA_REGISTER_CUDA_OP({.op_type = "IsInf", .run = run_predicate<ops::IsInfOp>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Mod", .run = run_mod});
FOVEA_REGISTER_CUDA_OP({.op_type = "PRelu", .run = run_prelu});

}  // namespace fovea::runtime::cuda
