// fovea.Int8Conv's shape inference and CPU reference (the arithmetic is in int8_conv_util.h): the
// int32 sums are exact, so the CUDA tensor-core kernel must match it bit for bit wherever the
// activation is exact (none, Relu, LeakyRelu, Clip).
#include <limits>

#include <fmt/format.h>

#include "runtime/ops/int8_conv_util.h"

namespace fovea::runtime::ops {
namespace {

constexpr std::int64_t kToFloat32 = 1;   // ONNX TensorProto.FLOAT
constexpr std::int64_t kToFloat16 = 10;  // ONNX TensorProto.FLOAT16

// The float type Y has without Y_scale.
Result<DataType> float_output_type(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t to, ctx.node().attr_int("to", kToFloat32));
  if (to == kToFloat32) return DataType::kFloat32;
  if (to == kToFloat16) return DataType::kFloat16;
  return ctx.error(StatusCode::kInvalidArgument, fmt::format("to={} is not 1 (float32) or 10 (float16)", to));
}

Status check_operand_types(const InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(kInt8ConvX, {DataType::kInt8}));
  FOVEA_TRY(ctx.require_dtype(kInt8ConvW, {DataType::kInt8}));
  for (int scale : {kInt8ConvXScale, kInt8ConvWScale, kInt8ConvB, kInt8ConvYScale, kInt8ConvZScale}) {
    if (ctx.has_input(scale)) FOVEA_TRY(ctx.require_dtype(scale, {DataType::kFloat32}));
  }
  FOVEA_TRY(ctx.require_rank(kInt8ConvX, 4, 4));
  FOVEA_TRY(ctx.require_rank(kInt8ConvW, 4, 4));
  FOVEA_TRY(ctx.require_rank(kInt8ConvXScale, 0, 0));
  FOVEA_TRY(ctx.require_rank(kInt8ConvWScale, 1, 1));
  if (ctx.has_input(kInt8ConvB)) FOVEA_TRY(ctx.require_rank(kInt8ConvB, 1, 1));
  if (ctx.has_input(kInt8ConvYScale)) FOVEA_TRY(ctx.require_rank(kInt8ConvYScale, 0, 0));
  if (ctx.has_input(kInt8ConvZScale)) FOVEA_TRY(ctx.require_rank(kInt8ConvZScale, 0, 0));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t group, ctx.node().attr_int("group", 1));
  if (group != 1)
    return ctx.error(StatusCode::kUnsupported, fmt::format("group={}: only 1 is supported", group));
  return Status::ok();
}

// Known dims of inputs that must all equal W's first (M): W_scale, B, Z's last.
Status check_output_channels(const InferContext& ctx, const Dims& w) {
  if (!w[0].known()) return Status::ok();
  const auto check = [&](int input, std::size_t axis) -> Status {
    const Dims* dims = ctx.has_input(input) ? ctx.input_dims(input) : nullptr;
    if (dims == nullptr || !(*dims)[axis].known() || (*dims)[axis].value == w[0].value) return Status::ok();
    return ctx.error(StatusCode::kInvalidArgument, fmt::format("input {} has {} channels where W has {}",
                                                               input, (*dims)[axis].value, w[0].value));
  };
  FOVEA_TRY(check(kInt8ConvWScale, 0));
  FOVEA_TRY(check(kInt8ConvB, 0));
  return check(kInt8ConvZ, 3);
}

// Z is float, or int8 with its scale; Z_scale comes with an int8 Z only.
Status check_residual_type(const InferContext& ctx) {
  if (!ctx.has_input(kInt8ConvZ)) {
    if (ctx.has_input(kInt8ConvZScale)) return ctx.error(StatusCode::kInvalidArgument, "Z_scale without Z");
    return Status::ok();
  }
  FOVEA_TRY(ctx.require_dtype(kInt8ConvZ, {DataType::kFloat32, DataType::kFloat16, DataType::kInt8}));
  const bool int8_residual = ctx.input_type(kInt8ConvZ).dtype == DataType::kInt8;
  if (int8_residual != ctx.has_input(kInt8ConvZScale)) {
    return ctx.error(StatusCode::kInvalidArgument, int8_residual
                                                       ? "an int8 Z needs Z_scale"
                                                       : "Z_scale with a float Z (it scales an int8 Z)");
  }
  return Status::ok();
}

Status infer_int8_conv(InferContext& ctx) {
  FOVEA_TRY(check_operand_types(ctx));
  FOVEA_TRY(read_activation(ctx).status());
  DataType out_type = DataType::kInt8;
  if (!ctx.has_input(kInt8ConvYScale)) {
    FOVEA_ASSIGN_OR_RETURN(out_type, float_output_type(ctx));
  }
  FOVEA_TRY(check_residual_type(ctx));
  const Dims* x = ctx.input_dims(kInt8ConvX);
  const Dims* w = ctx.input_dims(kInt8ConvW);
  if (x == nullptr || w == nullptr) {
    ctx.set_output(0, out_type, std::nullopt);
    return Status::ok();
  }
  if ((*x)[3].known() && (*w)[3].known() && (*x)[3].value != (*w)[3].value) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("X has {} channels where W takes {}", (*x)[3].value, (*w)[3].value));
  }
  FOVEA_TRY(check_output_channels(ctx, *w));
  std::optional<std::vector<std::int64_t>> kernel;
  if ((*w)[1].known() && (*w)[2].known()) kernel = std::vector<std::int64_t>{(*w)[1].value, (*w)[2].value};
  FOVEA_ASSIGN_OR_RETURN(WindowAttributes window, read_window_attributes(ctx, 2, kernel));
  FOVEA_ASSIGN_OR_RETURN(Dims spatial,
                         window_output_spatial_dims(ctx, window, permute_dims(*x, kNhwcToNchw)));
  Dims out{(*x)[0], spatial[0], spatial[1], (*w)[0]};
  if (const Dims* z = ctx.has_input(kInt8ConvZ) ? ctx.input_dims(kInt8ConvZ) : nullptr; z != nullptr) {
    for (std::size_t d = 0; d < 4; ++d) {
      if ((*z)[d].known() && out[d].known() && (*z)[d].value != out[d].value) {
        return ctx.error(StatusCode::kInvalidArgument, "the residual Z ", dims_string(*z),
                         " does not have the output's shape ", dims_string(out));
      }
    }
  }
  ctx.set_output(0, out_type, std::move(out));
  return Status::ok();
}

// The exact int32 sum over the window of output pixel (n, p, q) and channel m.
std::int32_t window_sum(const std::int8_t* x, const std::int8_t* w, const Int8ConvGeometry& g, int n, int p,
                        int q, int m) {
  std::int32_t acc = 0;
  for (int r = 0; r < g.kernel_h; ++r) {
    const int h = p * g.stride_h - g.pad_top + r * g.dilation_h;
    if (h < 0 || h >= g.in_h) continue;
    for (int s = 0; s < g.kernel_w; ++s) {
      const int col = q * g.stride_w - g.pad_left + s * g.dilation_w;
      if (col < 0 || col >= g.in_w) continue;
      const std::int8_t* xp = x + ((static_cast<std::int64_t>(n) * g.in_h + h) * g.in_w + col) * g.channels;
      const std::int8_t* wp =
          w + ((static_cast<std::int64_t>(m) * g.kernel_h + r) * g.kernel_w + s) * g.channels;
      for (int c = 0; c < g.channels; ++c) acc += static_cast<std::int32_t>(xp[c]) * wp[c];
    }
  }
  return acc;
}

float residual_at(const Tensor& z, float z_scale, std::int64_t i) {
  switch (z.dtype()) {
    case DataType::kInt8: return int8_residual(z.data<std::int8_t>()[i], z_scale);
    case DataType::kFloat16: return half_to_float(z.data<Half>()[i]);
    default: return z.data<float>()[i];
  }
}

Status run_int8_conv(KernelContext& ctx) {
  const InferContext concrete = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(const Activation activation, read_activation(concrete));
  FOVEA_ASSIGN_OR_RETURN(const Int8ConvGeometry g, int8_conv_geometry(concrete, ctx.input(kInt8ConvX).shape(),
                                                                      ctx.input(kInt8ConvW).shape()));
  const std::int8_t* x = ctx.input(kInt8ConvX).data<std::int8_t>();
  const std::int8_t* w = ctx.input(kInt8ConvW).data<std::int8_t>();
  const float x_scale = ctx.input(kInt8ConvXScale).data<float>()[0];
  const float* w_scale = ctx.input(kInt8ConvWScale).data<float>();
  const float* bias = ctx.has_input(kInt8ConvB) ? ctx.input(kInt8ConvB).data<float>() : nullptr;
  const Tensor* residual = ctx.has_input(kInt8ConvZ) ? &ctx.input(kInt8ConvZ) : nullptr;
  const float z_scale = ctx.has_input(kInt8ConvZScale) ? ctx.input(kInt8ConvZScale).data<float>()[0] : 0.0f;
  const float* y_scale = ctx.has_input(kInt8ConvYScale) ? ctx.input(kInt8ConvYScale).data<float>() : nullptr;
  const float inverse_y_scale = y_scale != nullptr ? div_rn(1.0f, *y_scale) : 0.0f;
  Tensor& y = ctx.output(0);
  std::int64_t i = 0;  // output element, NHWC order
  for (int n = 0; n < g.batch; ++n) {
    for (int p = 0; p < g.out_h; ++p) {
      for (int q = 0; q < g.out_w; ++q) {
        for (int m = 0; m < g.out_channels; ++m, ++i) {
          float v = int8_conv_value(window_sum(x, w, g, n, p, q, m), int8_conv_scale(x_scale, w_scale[m]),
                                    bias ? bias[m] : 0.0f);
          if (residual != nullptr) v = add_rn(v, residual_at(*residual, z_scale, i));
          v = activation.apply(v);
          if (y_scale != nullptr) {
            y.data<std::int8_t>()[i] = requantize(v, inverse_y_scale);
          } else if (y.dtype() == DataType::kFloat16) {
            y.data<Half>()[i] = float_to_half(v);
          } else {
            y.data<float>()[i] = v;
          }
        }
      }
    }
  }
  return Status::ok();
}

double int8_conv_flops(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) {
  const Shape& w = inputs[kInt8ConvW];
  return 2.0 * static_cast<double>(element_count(outputs[0])) * static_cast<double>(w[1] * w[2] * w[3]);
}

}  // namespace

Result<Int8ConvGeometry> int8_conv_geometry(const InferContext& ctx, const Shape& x, const Shape& w) {
  FOVEA_ASSIGN_OR_RETURN(const WindowAttributes window,
                         read_window_attributes(ctx, 2, std::vector{w[1], w[2]}));
  FOVEA_ASSIGN_OR_RETURN(const std::vector<WindowDim> dims,
                         resolve_window(ctx, window, permute_tensor_shape(x, kNhwcToNchw)));
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  return Int8ConvGeometry{.batch = i(x[0]),
                          .in_h = i(x[1]),
                          .in_w = i(x[2]),
                          .channels = i(x[3]),
                          .out_h = i(dims[0].out),
                          .out_w = i(dims[1].out),
                          .out_channels = i(w[0]),
                          .kernel_h = i(w[1]),
                          .kernel_w = i(w[2]),
                          .stride_h = i(dims[0].stride),
                          .stride_w = i(dims[1].stride),
                          .dilation_h = i(dims[0].dilation),
                          .dilation_w = i(dims[1].dilation),
                          .pad_top = i(dims[0].pad_begin),
                          .pad_left = i(dims[1].pad_begin)};
}

std::string int8_conv_unsupported(const Int8ConvGeometry& g) {
  constexpr int kVector = 16;  // channels in one 16-byte load
  if (g.channels % kVector != 0) {
    return fmt::format("{} input channels (the int8 kernel takes multiples of {})", g.channels, kVector);
  }
  if (g.out_channels % 2 != 0) {
    return fmt::format("{} output channels (the int8 kernel takes even counts)", g.out_channels);
  }
  constexpr std::int64_t kInt32 = std::numeric_limits<std::int32_t>::max();
  if (static_cast<std::int64_t>(g.in_h) * g.in_w * g.channels > kInt32 || g.reduction() > kInt32) {
    return "an image or a filter over 2^31 bytes";
  }
  if (g.pixels() > kInt32) return "over 2^31 output pixels";
  return {};
}

std::string int8_conv_unsupported(const Shape& x, const Shape& w) {
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  return int8_conv_unsupported(Int8ConvGeometry{.in_h = i(x[1]),
                                                .in_w = i(x[2]),
                                                .channels = i(x[3]),
                                                .out_channels = i(w[0]),
                                                .kernel_h = i(w[1]),
                                                .kernel_w = i(w[2])});
}

FOVEA_REGISTER_OP({.domain = "fovea",
                   .op_type = "Int8Conv",
                   .min_inputs = 4,
                   .max_inputs = 8,
                   .infer = infer_int8_conv,
                   .run = run_int8_conv,
                   .flops = int8_conv_flops});

}  // namespace fovea::runtime::ops
