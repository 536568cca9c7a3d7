// Resize (opsets 10-19) and Upsample (7-9: deprecated, still in old exports). Nearest mode is a
// gather of input elements, so it serves every dtype; linear and cubic interpolate in float32 or
// float64, one separable pass per resized axis, with the taps (input indices and weights) of each
// output index computed once per axis as the ONNX reference implementation defines them.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "runtime/ops/movement_util.h"
#include "runtime/ops/resize_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

Status infer_resize(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ResizeAttributes attributes, resize_attributes(ctx));
  if (attributes.mode != Interpolation::kNearest) {
    FOVEA_TRY(ctx.require_dtype(0, {DataType::kFloat32, DataType::kFloat64}));
  }
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const ResizePlan plan, resize_plan(ctx, *in));
  Dims out;
  for (const AxisResize& axis : plan.axes) out.push_back(axis.out);
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

// ---- Kernels ----

void run_nearest(const Tensor& in, Tensor& out, const ResizePlan& plan) {
  const Shape strides = contiguous_strides(in.shape());
  std::vector<AxisOffsets> offsets;
  for (std::size_t d = 0; d < plan.axes.size(); ++d) {
    const AxisResize& axis = plan.axes[d];
    if (!needs_pass(axis, plan.attributes)) {
      offsets.push_back(identity_offsets(axis.out.value, strides[d]));
      continue;
    }
    const AxisTaps taps = axis_taps(axis, plan.attributes);
    AxisOffsets axis_offsets(static_cast<std::size_t>(axis.out.value));
    for (std::size_t j = 0; j < axis_offsets.size(); ++j) {
      axis_offsets[j] = taps.outside[j] ? kFillOffset : taps.index[j] * strides[d];
    }
    offsets.push_back(std::move(axis_offsets));
  }
  const std::array<std::byte, 8> fill = element_bytes(in.dtype(), plan.attributes.extrapolation_value);
  gather_by_axis_offsets(in, out, offsets, fill.data());
}

// Along the last axis (inner == 1) each output element is a short dot product over its line.
template <typename T>
void interpolate_last_axis(const T* in, T* out, std::int64_t lines, std::int64_t n_in, std::int64_t n_out,
                           const AxisTaps& taps, const std::vector<T>& weights, T extrapolation) {
  parallel_for(lines, rows_per_chunk(n_out), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t o = begin; o < end; ++o) {
      const T* line = in + o * n_in;
      T* dst = out + o * n_out;
      for (std::int64_t j = 0; j < n_out; ++j) {
        T sum = 0;
        for (std::int64_t k = j * taps.width; k < (j + 1) * taps.width; ++k) {
          sum += weights[static_cast<std::size_t>(k)] * line[taps.index[static_cast<std::size_t>(k)]];
        }
        dst[j] = taps.outside[static_cast<std::size_t>(j)] ? extrapolation : sum;
      }
    }
  });
}

// One separable pass: `in` seen as [outer, n_in, inner] becomes [outer, n_out, inner].
template <typename T>
std::vector<T> interpolate_axis(const T* in, const Shape& shape, std::size_t axis, const AxisTaps& taps,
                                std::int64_t n_out, T extrapolation) {
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) outer *= shape[d];
    if (d > axis) inner *= shape[d];
  }
  const std::int64_t n_in = shape[axis];
  const std::vector<T> weights(taps.weight.begin(), taps.weight.end());
  std::vector<T> out(static_cast<std::size_t>(outer * n_out * inner));
  if (inner == 1) {
    interpolate_last_axis(in, out.data(), outer, n_in, n_out, taps, weights, extrapolation);
    return out;
  }
  parallel_for(outer * n_out, rows_per_chunk(inner), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t o = r / n_out;
      const std::int64_t j = r % n_out;
      T* dst = out.data() + r * inner;
      if (taps.outside[static_cast<std::size_t>(j)]) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      std::fill(dst, dst + inner, T{0});
      for (std::int64_t k = j * taps.width; k < (j + 1) * taps.width; ++k) {
        const T w = weights[static_cast<std::size_t>(k)];
        const T* src = in + (o * n_in + taps.index[static_cast<std::size_t>(k)]) * inner;
        for (std::int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
      }
    }
  });
  return out;
}

template <typename T>
void run_interpolation(const Tensor& in, Tensor& out, const ResizePlan& plan) {
  const T* src = in.data<T>();
  std::vector<T> buffer;
  Shape shape = in.shape();
  for (std::size_t d = 0; d < plan.axes.size(); ++d) {
    const AxisResize& axis = plan.axes[d];
    if (!needs_pass(axis, plan.attributes)) continue;
    buffer = interpolate_axis(src, shape, d, axis_taps(axis, plan.attributes), axis.out.value,
                              static_cast<T>(plan.attributes.extrapolation_value));
    shape[d] = axis.out.value;
    src = buffer.data();
  }
  if (out.numel() > 0) std::memcpy(out.raw(), src, out.bytes());
}

Status run_resize(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  FOVEA_ASSIGN_OR_RETURN(const ResizePlan plan, resize_plan(ctx.inference(), dims_of(in.shape())));
  if (plan.attributes.mode == Interpolation::kNearest) {
    run_nearest(in, out, plan);
    return Status::ok();
  }
  dispatch<FOVEA_FLOAT_TYPES>(
      in.dtype(), [&](auto tag) { run_interpolation<typename decltype(tag)::type>(in, out, plan); });
  return Status::ok();
}

// Taps per output element: the work of linear and cubic; nearest only moves data.
double resize_flops(const Node& node, const std::vector<Shape>&, const std::vector<Shape>& outputs) {
  const auto mode = node.attr_string("mode", "nearest");
  const double taps_per_axis =
      !mode.is_ok() || mode.value() == "nearest" ? 0 : (mode.value() == "cubic" ? 4 : 2);
  return 2 * taps_per_axis * static_cast<double>(element_count(outputs[0]));
}

}  // namespace

// scales (Resize input 2, Upsample input 1) are float32 whatever X is.
FOVEA_REGISTER_OP({.op_type = "Resize",
                   .max_inputs = 4,
                   .infer = infer_resize,
                   .run = run_resize,
                   .float32_inputs = 1u << 2,
                   .flops = resize_flops});
FOVEA_REGISTER_OP({.op_type = "Upsample",
                   .max_inputs = 2,
                   .infer = infer_resize,
                   .run = run_resize,
                   .float32_inputs = 1u << 1,
                   .flops = resize_flops});

}  // namespace fovea::runtime::ops
