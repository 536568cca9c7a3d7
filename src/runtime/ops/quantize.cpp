// QuantizeLinear (opsets 10, 13, 19, 21), DequantizeLinear (10, 13, 19, 21) and
// DynamicQuantizeLinear (11) on the CPU; quantize_util.h states the arithmetic, which the CUDA
// kernels share.
//
//   op                     x                       scale              zero point        y
//   QuantizeLinear         float32 (float16 too)   float32 (float16)  int8 / uint8      the zero point's type
//                                                                     (absent: uint8 0) (or output_dtype)
//   DequantizeLinear       int8 / uint8 / int32    float32 (float16)  x's type          the scale's type
//   DynamicQuantizeLinear  float32 (float16)       -                  -                 uint8, scale, zero
//   point
//
// Scales per tensor, per axis or per block (quantize_util.h). A scale known at load or plan time
// must be positive and finite. Float8, 4-bit and 16-bit quantized types are refused (fovea has no
// such dtypes); `saturate` only concerns float8, so it is accepted and has nothing to change.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "runtime/onnx_loader.h"
#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/quantize_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {

namespace {

constexpr int kScaleInput = 1;
constexpr int kZeroPointInput = 2;

// The inputs' ONNX names, for messages: y_scale and y_zero_point of QuantizeLinear, x_scale and
// x_zero_point of DequantizeLinear.
std::string_view scale_name(const InferContext& ctx) {
  return ctx.node().op_type == "QuantizeLinear" ? "y_scale" : "x_scale";
}

std::string_view zero_point_name(const InferContext& ctx) {
  return ctx.node().op_type == "QuantizeLinear" ? "y_zero_point" : "x_zero_point";
}

// Known to hold one element (a scalar, or any shape of ones).
bool single_element(const Dims& dims) {
  for (const Dim& d : dims) {
    if (!d.known() || d.value != 1) return false;
  }
  return true;
}

// Same rank and the same size wherever both dims are known.
bool same_dims(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t d = 0; d < a.size(); ++d) {
    if (a[d].known() && b[d].known() && a[d].value != b[d].value) return false;
  }
  return true;
}

Status check_zero_point_shape(const InferContext& ctx) {
  const Dims* scale = ctx.input_dims(kScaleInput);
  const Dims* zero_point = ctx.input_dims(kZeroPointInput);
  if (scale == nullptr || zero_point == nullptr || same_dims(*scale, *zero_point) ||
      (single_element(*scale) && single_element(*zero_point))) {
    return Status::ok();
  }
  return ctx.error(StatusCode::kInvalidArgument,
                   fmt::format("{} is {} but {} is {}: they must have the same shape", zero_point_name(ctx),
                               dims_string(*zero_point), scale_name(ctx), dims_string(*scale)));
}

// x's dims after `axis`, multiplied; 1 while one of them is unknown (the layout is only used with
// every dim known).
std::int64_t inner_size(const Dims& x, int axis) {
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < x.size(); ++d) {
    if (!x[d].known()) return 1;
    inner *= x[d].value;
  }
  return inner;
}

// Whether every dim of x is known and they multiply to fewer than 2^32 elements.
bool fits_32_bits(const Dims& x) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 32;
  std::int64_t count = 1;
  for (const Dim& d : x) {
    if (!d.known()) return false;
    if (d.value == 0) return true;
    if (d.value >= kLimit) return false;
    count *= d.value;  // both factors are below 2^32 here: no overflow
    if (count >= kLimit) return false;
  }
  return true;
}

// A 1-D scale along the axis: as many elements as x has along it.
Status check_per_axis(const InferContext& ctx, const Dims& x, const Dims& scale, int axis) {
  const Dim& along = x[static_cast<std::size_t>(axis)];
  if (!along.known() || !scale[0].known() || along.value == scale[0].value) return Status::ok();
  return ctx.error(StatusCode::kInvalidArgument,
                   fmt::format("{} has {} elements but x is {}, with {} along axis {}", scale_name(ctx),
                               scale[0].value, dims_string(x), along.value, axis));
}

// A blocked scale: x's shape, except ceil(x_axis / block_size) along the axis.
Status check_blocked(const InferContext& ctx, const Dims& x, const Dims& scale, int axis,
                     std::int64_t block) {
  Dims expected = x;
  Dim& along = expected[static_cast<std::size_t>(axis)];
  if (along.known()) along.value = (along.value + block - 1) / block;
  if (same_dims(scale, expected)) return Status::ok();
  return ctx.error(
      StatusCode::kInvalidArgument,
      fmt::format("{} is {} but x is {}: with block_size {} along axis {} it must be {}", scale_name(ctx),
                  dims_string(scale), dims_string(x), block, axis, dims_string(expected)));
}

// Every element of a scale known now (a constant, or any input at run time) is positive and finite:
// a zero scale divides by zero, and a negative, NaN or infinite one is a broken model.
Status check_scale_values(const InferContext& ctx) {
  const Tensor* scale = ctx.input_value(kScaleInput);
  if (scale == nullptr) return Status::ok();
  const float* values = scale->data<float>();
  for (std::int64_t i = 0; i < scale->numel(); ++i) {
    if (std::isfinite(values[i]) && values[i] > 0.0f) continue;
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} holds {} at element {}; a scale must be positive and finite",
                                 scale_name(ctx), values[i], i));
  }
  return Status::ok();
}

// QuantizeLinear's output type: the zero point's, else the output_dtype attribute's (opset 21),
// else uint8; int8 or uint8 only.
Result<DataType> quantized_dtype(const InferContext& ctx) {
  std::optional<DataType> requested;
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t code, ctx.node().attr_int("output_dtype", 0));
  if (code != 0) {  // 0 is ONNX's UNDEFINED: not set
    auto dtype = data_type_from_onnx(code);
    if (!dtype.is_ok()) {
      return ctx.error(StatusCode::kUnsupported, "output_dtype: ", dtype.status().message(),
                       " (fovea quantizes to int8 and uint8)");
    }
    requested = *dtype;
  }
  const DataType out = ctx.has_input(kZeroPointInput) ? ctx.input_dtype(kZeroPointInput)
                                                      : requested.value_or(DataType::kUInt8);
  if (requested && *requested != out) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("output_dtype is {} but y_zero_point is {}", data_type_name(*requested),
                                 data_type_name(out)));
  }
  if (out != DataType::kInt8 && out != DataType::kUInt8) {
    return ctx.error(StatusCode::kUnsupported,
                     fmt::format("quantizing to {} is not supported (fovea quantizes to int8 and uint8)",
                                 data_type_name(out)));
  }
  return out;
}

}  // namespace

Result<QuantLayout> quant_layout(const InferContext& ctx) {
  if (ctx.has_input(kZeroPointInput)) FOVEA_TRY(check_zero_point_shape(ctx));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t block, ctx.node().attr_int("block_size", 0));
  if (block < 0) {
    return ctx.error(StatusCode::kInvalidArgument, fmt::format("block_size {} is negative", block));
  }
  const Dims* scale = ctx.input_dims(kScaleInput);
  const Dims* x = ctx.input_dims(0);
  if (scale == nullptr) return QuantLayout{};  // checked once its rank is known
  if (block == 0 && scale->size() > 1) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} is {}: without block_size a scale is a scalar (per tensor) or 1-D "
                                 "(per axis)",
                                 scale_name(ctx), dims_string(*scale)));
  }
  // One element is per tensor whatever the scale's shape (ONNX's reference reads it so).
  if (single_element(*scale) || x == nullptr) return QuantLayout{};
  if (x->empty()) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} is {} but x is a scalar: scales per axis or block need x of rank >= 1",
                                 scale_name(ctx), dims_string(*scale)));
  }
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis", 1));
  FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, static_cast<int>(x->size())));
  QuantLayout layout;
  layout.inner = inner_size(*x, axis);
  layout.axis_dim = (*x)[static_cast<std::size_t>(axis)].value;
  layout.narrow = fits_32_bits(*x);
  if (block == 0) {
    FOVEA_TRY(check_per_axis(ctx, *x, *scale, axis));
    layout.mode = QuantMode::kPerAxis;
  } else {
    FOVEA_TRY(check_blocked(ctx, *x, *scale, axis, block));
    layout.mode = QuantMode::kBlocked;
    layout.block = block;
    layout.blocks = (*scale)[static_cast<std::size_t>(axis)].value;
  }
  return layout;
}

namespace {

// y[i] = quantize_value(x[i]) with the scale and zero point of element i (zero point 0 where
// `zero_point` is nullptr).
template <typename Q>
void quantize_elements(const float* x, std::int64_t count, const float* scale, const Q* zero_point,
                       const QuantLayout& layout, Q* y) {
  parallel_for(count, kElementwiseMinChunk, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t s = layout.scale_index(i);
      y[i] = quantize_value(x[i], scale[s], zero_point != nullptr ? zero_point[s] : Q{0});
    }
  });
}

// float16 x and scales arrive widened to float32 (OpDef::Float16::kViaFloat32).
Status infer_quantize(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {DataType::kFloat32}));
  FOVEA_TRY(ctx.require_dtype(kScaleInput, {DataType::kFloat32}));
  FOVEA_ASSIGN_OR_RETURN(const DataType out, quantized_dtype(ctx));
  FOVEA_TRY(quant_layout(ctx).status());
  FOVEA_TRY(check_scale_values(ctx));
  ctx.set_output(0, out, ctx.input_type(0).dims);
  return Status::ok();
}

Status run_quantize(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const QuantLayout layout, quant_layout(ctx.inference()));
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  dispatch<DataType::kInt8, DataType::kUInt8>(y.dtype(), [&](auto tag) {
    using Q = typename decltype(tag)::type;
    const Q* zero_point = ctx.has_input(kZeroPointInput) ? ctx.input(kZeroPointInput).data<Q>() : nullptr;
    quantize_elements(x.data<float>(), x.numel(), ctx.input(kScaleInput).data<float>(), zero_point, layout,
                      y.data<Q>());
  });
  return Status::ok();
}

Status infer_dequantize(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {DataType::kInt8, DataType::kUInt8, DataType::kInt32}));
  FOVEA_TRY(ctx.require_dtype(kScaleInput, {DataType::kFloat32}));
  if (ctx.has_input(kZeroPointInput)) FOVEA_TRY(ctx.require_same_dtype(kZeroPointInput, 0));
  FOVEA_TRY(quant_layout(ctx).status());
  FOVEA_TRY(check_scale_values(ctx));
  ctx.set_output(0, DataType::kFloat32, ctx.input_type(0).dims);
  return Status::ok();
}

Status run_dequantize(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const QuantLayout layout, quant_layout(ctx.inference()));
  const Tensor& x = ctx.input(0);
  const float* scale = ctx.input(kScaleInput).data<float>();
  float* y = ctx.output(0).data<float>();
  dispatch<DataType::kInt8, DataType::kUInt8, DataType::kInt32>(x.dtype(), [&](auto tag) {
    using X = typename decltype(tag)::type;
    const X* values = x.data<X>();
    const X* zero_point = ctx.has_input(kZeroPointInput) ? ctx.input(kZeroPointInput).data<X>() : nullptr;
    parallel_for(x.numel(), kElementwiseMinChunk, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const std::int64_t s = layout.scale_index(i);
        y[i] = dequantize_value(values[i], zero_point != nullptr ? zero_point[s] : X{0}, scale[s]);
      }
    });
  });
  return Status::ok();
}

Status infer_dynamic_quantize(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {DataType::kFloat32}));
  ctx.set_output(0, DataType::kUInt8, ctx.input_type(0).dims);
  ctx.set_output(1, DataType::kFloat32, Dims{});
  ctx.set_output(2, DataType::kUInt8, Dims{});
  return Status::ok();
}

Status run_dynamic_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* values = x.data<float>();
  QuantRange range = zero_range();
  for (std::int64_t i = 0; i < x.numel(); ++i) range = widen_range(range, values[i]);
  const DynamicQuantParams params = dynamic_quant_params(range);
  ctx.output(1).data<float>()[0] = params.scale;
  ctx.output(2).data<std::uint8_t>()[0] = params.zero_point;
  quantize_elements(values, x.numel(), &params.scale, &params.zero_point, QuantLayout{},
                    ctx.output(0).data<std::uint8_t>());
  return Status::ok();
}

}  // namespace

// QuantizeLinear's scale stays float32 in a float16 plan (float32_inputs): x is divided by the
// calibrated scale itself rather than its float16 rounding, so the integers are the float32 plan's
// wherever x survives the rounding to float16. DequantizeLinear's output has its scale's type, so
// that scale follows the plan's precision.
FOVEA_REGISTER_OP({.op_type = "QuantizeLinear",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_quantize,
                   .run = run_quantize,
                   .float32_inputs = 1u << kScaleInput});
FOVEA_REGISTER_OP({.op_type = "DequantizeLinear",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_dequantize,
                   .run = run_dequantize});
FOVEA_REGISTER_OP({.op_type = "DynamicQuantizeLinear",
                   .min_outputs = 3,
                   .max_outputs = 3,
                   .infer = infer_dynamic_quantize,
                   .run = run_dynamic_quantize});

}  // namespace fovea::runtime::ops
