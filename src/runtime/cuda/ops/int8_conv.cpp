// fovea.Int8Conv on CUDA: fovea's int8 tensor-core kernel (cuda/int8_conv.h). Geometries it cannot
// take are refused at plan time, naming the node; the quantization pass only makes nodes it takes.
#include "runtime/cuda/int8_conv.h"

#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {
namespace {

struct Int8ConvState final : public CudaNodeState {
  ops::Int8ConvGeometry geometry;
  ops::Activation activation;
};

Result<CudaPrepared> prepare_int8_conv(CudaKernelContext& ctx) {
  auto state = std::make_unique<Int8ConvState>();
  const InferContext inference = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(state->activation, ops::read_activation(inference));
  FOVEA_ASSIGN_OR_RETURN(state->geometry,
                         ops::int8_conv_geometry(inference, ctx.input(ops::kInt8ConvX).shape(),
                                                 ctx.input(ops::kInt8ConvW).shape()));
  if (const std::string why = ops::int8_conv_unsupported(state->geometry); !why.empty()) {
    return ctx.error(StatusCode::kUnsupported, why);
  }
  return CudaPrepared{std::move(state), 0};
}

Status run_int8_conv(CudaKernelContext& ctx) {
  const auto& state = ctx.state<Int8ConvState>();
  const auto optional = [&](int i) { return ctx.has_input(i) ? ctx.input(i).raw() : nullptr; };
  const Int8ConvOperands operands{.x = ctx.input(ops::kInt8ConvX).data<std::int8_t>(),
                                  .x_scale = ctx.input(ops::kInt8ConvXScale).data<float>(),
                                  .weights = ctx.input(ops::kInt8ConvW).data<std::int8_t>(),
                                  .w_scale = ctx.input(ops::kInt8ConvWScale).data<float>(),
                                  .bias = static_cast<const float*>(optional(ops::kInt8ConvB)),
                                  .residual = optional(ops::kInt8ConvZ),
                                  .residual_dtype = ctx.has_input(ops::kInt8ConvZ)
                                                        ? ctx.input(ops::kInt8ConvZ).dtype()
                                                        : DataType::kFloat16,
                                  .residual_scale = static_cast<const float*>(optional(ops::kInt8ConvZScale)),
                                  .y_scale = static_cast<const float*>(optional(ops::kInt8ConvYScale)),
                                  .y = ctx.output(0).raw(),
                                  .y_dtype = ctx.output(0).dtype()};
  return launch_int8_conv(operands, state.geometry, state.activation, ctx.stream());
}

}  // namespace

FOVEA_REGISTER_CUDA_OP(
    {.domain = "fovea", .op_type = "Int8Conv", .prepare = prepare_int8_conv, .run = run_int8_conv});

}  // namespace fovea::runtime::cuda
