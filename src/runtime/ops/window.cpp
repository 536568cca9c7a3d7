// HannWindow, HammingWindow and BlackmanWindow on the CPU (opset 17): window_util.h states the
// formula, which the CUDA kernel shares. The size input is an int32 or int64 scalar; the output is
// [size] of output_datatype (float32, float16 or float64).
#include <fmt/format.h>

#include "runtime/onnx_loader.h"
#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/window_util.h"

namespace fovea::runtime::ops {

namespace {

using SizeTypes = DTypes<DataType::kInt64, DataType::kInt32>;
using WindowTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kFloat16>;

struct Coefficients {
  double a0;
  double a1;
  double a2;
};

// ONNX's coefficients: Hann 0.5 / 0.5, Hamming 25/46 / 21/46, Blackman 0.42 / 0.5 / 0.08.
Coefficients coefficients_of(std::string_view op_type) {
  if (op_type == "HannWindow") return {0.5, 0.5, 0};
  if (op_type == "HammingWindow") return {25.0 / 46.0, 21.0 / 46.0, 0};
  return {0.42, 0.5, 0.08};
}

}  // namespace

Result<WindowParams> window_params(const InferContext& ctx, const Tensor& size) {
  if (size.numel() != 1) {
    return ctx.error(StatusCode::kInvalidArgument, "size must be a scalar, got shape ",
                     shape_string(size.shape()));
  }
  WindowParams params;
  params.size = integer_at(size, 0);
  if (params.size < 0) {
    return ctx.error(StatusCode::kInvalidArgument, fmt::format("size {} is negative", params.size));
  }
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t periodic, ctx.node().attr_int("periodic", 1));
  const Coefficients c = coefficients_of(ctx.node().op_type);
  params.a0 = c.a0;
  params.a1 = c.a1;
  params.a2 = c.a2;
  params.period = static_cast<double>(periodic != 0 ? params.size : params.size - 1);
  return params;
}

Result<DataType> window_dtype(const InferContext& ctx) {
  constexpr std::int64_t kOnnxFloat = 1;
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t code, ctx.node().attr_int("output_datatype", kOnnxFloat));
  auto dtype = data_type_from_onnx(code);
  if (!dtype.is_ok()) return ctx.error(StatusCode::kUnsupported, dtype.status().message());
  if (*dtype != DataType::kFloat32 && *dtype != DataType::kFloat16 && *dtype != DataType::kFloat64) {
    return ctx.error(StatusCode::kUnsupported, "output_datatype ", data_type_name(*dtype),
                     " (windows are float32, float16 or float64)");
  }
  return *dtype;
}

namespace {

Status infer_window(InferContext& ctx) {
  FOVEA_TRY(SizeTypes::require(ctx, 0));
  FOVEA_ASSIGN_OR_RETURN(const DataType dtype, window_dtype(ctx));
  Dim length = Dim::unknown();
  if (const Tensor* size = ctx.input_value(0)) {
    FOVEA_ASSIGN_OR_RETURN(const WindowParams params, window_params(ctx, *size));
    length = Dim::known_size(params.size);
  }
  ctx.set_output(0, dtype, Dims{length});
  return Status::ok();
}

Status run_window(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const WindowParams params, window_params(ctx.inference(), ctx.input(0)));
  Tensor& out = ctx.output(0);
  WindowTypes::dispatch(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (std::int64_t n = 0; n < params.size; ++n) o[n] = convert_value<T>(window_value(params, n));
  });
  return Status::ok();
}

}  // namespace

// The output's dtype is an attribute, so float16 is native: nothing to widen (the input is an
// integer).
FOVEA_REGISTER_OP(
    {.op_type = "HannWindow", .infer = infer_window, .run = run_window, .float16 = OpDef::Float16::kNative});
FOVEA_REGISTER_OP({.op_type = "HammingWindow",
                   .infer = infer_window,
                   .run = run_window,
                   .float16 = OpDef::Float16::kNative});
FOVEA_REGISTER_OP({.op_type = "BlackmanWindow",
                   .infer = infer_window,
                   .run = run_window,
                   .float16 = OpDef::Float16::kNative});

}  // namespace fovea::runtime::ops
