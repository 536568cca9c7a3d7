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
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Coordinates {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// kLegacy is what opset < 11 (Resize-10, Upsample) did, as onnxruntime implements it: floor when
// upsampling, ceil when downsampling.
enum class NearestRounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttributes {
  Interpolation mode = Interpolation::kNearest;
  Coordinates coordinates = Coordinates::kHalfPixel;
  NearestRounding rounding = NearestRounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  bool antialias = false;
  AspectPolicy aspect = AspectPolicy::kStretch;
};

struct AxisResize {
  Dim in, out;
  double scale = 1;  // output/input, as given by scales or derived from sizes
  // in * scale before flooring to a whole output size: align_corners and tf_crop_and_resize map
  // onto this length, as the ONNX reference implementation does.
  double resized_length = 0;
  double roi_start = 0, roi_end = 1;
  bool resized = false;  // listed in `axes`
};

struct ResizePlan {
  ResizeAttributes attributes;
  std::vector<AxisResize> axes;  // one per input axis
};

template <typename E, std::size_t N>
Result<E> choice(const InferContext& ctx, std::string_view key, std::string_view fallback,
                 const std::array<std::pair<std::string_view, E>, N>& choices) {
  FOVEA_ASSIGN_OR_RETURN(const std::string value, ctx.node().attr_string(key, std::string(fallback)));
  for (const auto& [name, e] : choices) {
    if (name == value) return e;
  }
  return ctx.error(StatusCode::kInvalidArgument, fmt::format("unknown {} '{}'", key, value));
}

// Resize-10 and Upsample take only `mode`, with asymmetric coordinates.
bool legacy(const InferContext& ctx) {
  return ctx.node().op_type == "Upsample" || ctx.opset() < 11;
}

Result<ResizeAttributes> resize_attributes(const InferContext& ctx) {
  ResizeAttributes a;
  constexpr std::array kModes = {std::pair{std::string_view("nearest"), Interpolation::kNearest},
                                 std::pair{std::string_view("linear"), Interpolation::kLinear},
                                 std::pair{std::string_view("bilinear"), Interpolation::kLinear},
                                 std::pair{std::string_view("cubic"), Interpolation::kCubic}};
  FOVEA_ASSIGN_OR_RETURN(a.mode, choice(ctx, "mode", "nearest", kModes));
  if (legacy(ctx)) {
    if (a.mode == Interpolation::kCubic) {
      return ctx.error(StatusCode::kInvalidArgument, "mode 'cubic' needs Resize from opset 11");
    }
    a.coordinates = Coordinates::kAsymmetric;
    a.rounding = NearestRounding::kLegacy;
    return a;
  }
  constexpr std::array kCoordinates = {
      std::pair{std::string_view("half_pixel"), Coordinates::kHalfPixel},
      std::pair{std::string_view("half_pixel_symmetric"), Coordinates::kHalfPixelSymmetric},
      std::pair{std::string_view("pytorch_half_pixel"), Coordinates::kPytorchHalfPixel},
      std::pair{std::string_view("align_corners"), Coordinates::kAlignCorners},
      std::pair{std::string_view("asymmetric"), Coordinates::kAsymmetric},
      std::pair{std::string_view("tf_half_pixel_for_nn"), Coordinates::kTfHalfPixelForNn},
      std::pair{std::string_view("tf_crop_and_resize"), Coordinates::kTfCropAndResize}};
  FOVEA_ASSIGN_OR_RETURN(a.coordinates,
                         choice(ctx, "coordinate_transformation_mode", "half_pixel", kCoordinates));
  constexpr std::array kRoundings = {
      std::pair{std::string_view("round_prefer_floor"), NearestRounding::kRoundPreferFloor},
      std::pair{std::string_view("round_prefer_ceil"), NearestRounding::kRoundPreferCeil},
      std::pair{std::string_view("floor"), NearestRounding::kFloor},
      std::pair{std::string_view("ceil"), NearestRounding::kCeil}};
  FOVEA_ASSIGN_OR_RETURN(a.rounding, choice(ctx, "nearest_mode", "round_prefer_floor", kRoundings));
  constexpr std::array kPolicies = {std::pair{std::string_view("stretch"), AspectPolicy::kStretch},
                                    std::pair{std::string_view("not_larger"), AspectPolicy::kNotLarger},
                                    std::pair{std::string_view("not_smaller"), AspectPolicy::kNotSmaller}};
  FOVEA_ASSIGN_OR_RETURN(a.aspect, choice(ctx, "keep_aspect_ratio_policy", "stretch", kPolicies));
  FOVEA_ASSIGN_OR_RETURN(const float cubic_a, ctx.node().attr_float("cubic_coeff_a", -0.75f));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t exclude_outside, ctx.node().attr_int("exclude_outside", 0));
  FOVEA_ASSIGN_OR_RETURN(const float extrapolation, ctx.node().attr_float("extrapolation_value", 0.0f));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t antialias, ctx.node().attr_int("antialias", 0));
  a.cubic_a = cubic_a;
  a.exclude_outside = exclude_outside != 0;
  a.extrapolation_value = extrapolation;
  a.antialias = antialias != 0;
  return a;
}

// An optional float or integer input: absent when omitted or empty (opset 11 writes an empty
// tensor for the one of scales/sizes it does not use).
bool present(const InferContext& ctx, int i) {
  if (!ctx.has_input(i)) return false;
  const Dims* dims = ctx.input_dims(i);
  return dims == nullptr || dims->empty() || !(*dims)[0].known() || (*dims)[0].value > 0;
}

std::vector<double> numbers_of(const Tensor& t) {
  std::vector<double> values(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = number_at(t, static_cast<std::int64_t>(i));
  return values;
}

// Scales from wherever the node's opset keeps them; nullopt (with `given`) when not known yet.
struct FloatOperand {
  bool given = false;
  std::optional<std::vector<double>> values;
};
Result<FloatOperand> resize_scales(const InferContext& ctx) {
  FloatOperand scales;
  if (ctx.node().op_type == "Upsample" && ctx.opset() < 9) {
    FOVEA_ASSIGN_OR_RETURN(const std::vector<float> values, ctx.node().attr_floats("scales"));
    scales.given = true;
    scales.values = std::vector<double>(values.begin(), values.end());
    return scales;
  }
  const int input = legacy(ctx) ? 1 : 2;
  if (!present(ctx, input)) return scales;
  FOVEA_TRY(ctx.require_dtype(input, {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}));
  scales.given = true;
  if (const Tensor* value = ctx.input_value(input)) scales.values = numbers_of(*value);
  return scales;
}

// Fills in output sizes and scales of the resized axes from `sizes`, honouring the aspect policy.
Status apply_sizes(const InferContext& ctx, const std::vector<std::int64_t>& sizes,
                   const std::vector<int>& axes, ResizePlan& plan) {
  for (std::int64_t size : sizes) {
    if (size < 0)
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("sizes has a negative entry {}", size));
  }
  bool inputs_known = true;
  double common = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const Dim& in = plan.axes[static_cast<std::size_t>(axes[i])].in;
    inputs_known = inputs_known && in.known() && in.value > 0;
    if (!inputs_known) continue;
    const double ratio = static_cast<double>(sizes[i]) / static_cast<double>(in.value);
    common = i == 0 ? ratio
                    : (plan.attributes.aspect == AspectPolicy::kNotLarger ? std::min(common, ratio)
                                                                          : std::max(common, ratio));
  }
  for (std::size_t i = 0; i < axes.size(); ++i) {
    AxisResize& axis = plan.axes[static_cast<std::size_t>(axes[i])];
    if (plan.attributes.aspect == AspectPolicy::kStretch) {
      axis.out = Dim::known_size(sizes[i]);
      axis.resized_length = static_cast<double>(sizes[i]);
      if (axis.in.known() && axis.in.value > 0)
        axis.scale = static_cast<double>(sizes[i]) / static_cast<double>(axis.in.value);
    } else if (inputs_known) {
      axis.scale = common;
      axis.resized_length = common * static_cast<double>(axis.in.value);
      axis.out =
          Dim::known_size(static_cast<std::int64_t>(common * static_cast<double>(axis.in.value) + 0.5));
    } else {
      axis.out = Dim::unknown();
    }
  }
  return Status::ok();
}

Result<ResizePlan> resize_plan(const InferContext& ctx, const Dims& in) {
  ResizePlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.attributes, resize_attributes(ctx));
  const int rank = static_cast<int>(in.size());
  std::vector<int> axes;
  if (!legacy(ctx) && ctx.opset() >= 18 && ctx.node().has_attribute("axes")) {
    FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> list, ctx.node().attr_ints("axes"));
    FOVEA_ASSIGN_OR_RETURN(axes, normalize_axes(ctx, list, rank));
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (const Dim& dim : in) {
    plan.axes.push_back(AxisResize{.in = dim, .out = dim, .resized_length = static_cast<double>(dim.value)});
  }
  for (int axis : axes) plan.axes[static_cast<std::size_t>(axis)].resized = true;

  FOVEA_ASSIGN_OR_RETURN(const FloatOperand scales, resize_scales(ctx));
  const bool sizes_given = !legacy(ctx) && present(ctx, 3);
  if (scales.given == sizes_given) {
    return ctx.error(StatusCode::kInvalidArgument, "exactly one of scales and sizes must be given");
  }
  if (sizes_given) FOVEA_TRY(ctx.require_dtype(3, {DataType::kInt64}));
  if (!legacy(ctx) && present(ctx, 1) && plan.attributes.coordinates == Coordinates::kTfCropAndResize) {
    if (const Tensor* roi = ctx.input_value(1)) {
      const std::vector<double> values = numbers_of(*roi);
      if (values.size() != 2 * axes.size()) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("roi has {} entries, expected {}", values.size(), 2 * axes.size()));
      }
      for (std::size_t i = 0; i < axes.size(); ++i) {
        plan.axes[static_cast<std::size_t>(axes[i])].roi_start = values[i];
        plan.axes[static_cast<std::size_t>(axes[i])].roi_end = values[i + axes.size()];
      }
    }
  }

  const Tensor* sizes = sizes_given ? ctx.input_value(3) : nullptr;
  if ((scales.given && !scales.values) || (sizes_given && sizes == nullptr)) {
    for (int axis : axes) plan.axes[static_cast<std::size_t>(axis)].out = Dim::unknown();
    return plan;
  }
  const std::size_t count = scales.given ? scales.values->size() : static_cast<std::size_t>(sizes->numel());
  if (count != axes.size()) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} has {} entries for {} resized axes", scales.given ? "scales" : "sizes",
                                 count, axes.size()));
  }
  if (sizes_given) {
    FOVEA_TRY(apply_sizes(ctx, integers_of(*sizes), axes, plan));
  } else {
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const double scale = (*scales.values)[i];
      if (!(scale > 0)) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("scale {} of axis {} is not positive", scale, axes[i]));
      }
      AxisResize& axis = plan.axes[static_cast<std::size_t>(axes[i])];
      // 2^40 elements along one axis is far beyond any real tensor: a corrupt or hostile scale.
      if (axis.in.known() && static_cast<double>(axis.in.value) * scale > 0x1p40) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("scale {} of axis {} is too large", scale, axes[i]));
      }
      axis.scale = scale;
      axis.resized_length = static_cast<double>(axis.in.value) * scale;
      axis.out = axis.in.known() ? Dim::known_size(static_cast<std::int64_t>(
                                       std::floor(static_cast<double>(axis.in.value) * scale)))
                                 : Dim::unknown();
    }
  }
  for (std::size_t d = 0; d < plan.axes.size(); ++d) {
    const AxisResize& axis = plan.axes[d];
    if (axis.in.known() && axis.in.value == 0 && axis.out.known() && axis.out.value > 0) {
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("cannot resize the empty axis {}", d));
    }
  }
  return plan;
}

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

// The input coordinate that output index x maps to, by the spec's formula for each mode.
double original_coordinate(double x, const AxisResize& axis, Coordinates mode) {
  const auto in = static_cast<double>(axis.in.value);
  const double out = axis.resized_length;
  switch (mode) {
    case Coordinates::kHalfPixel: return (x + 0.5) / axis.scale - 0.5;
    case Coordinates::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(axis.out.value) / out;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / axis.scale - 0.5;
    }
    case Coordinates::kPytorchHalfPixel: return out > 1 ? (x + 0.5) / axis.scale - 0.5 : 0;
    case Coordinates::kAlignCorners: return out == 1 ? 0 : x * (in - 1) / (out - 1);
    case Coordinates::kAsymmetric: return x / axis.scale;
    case Coordinates::kTfHalfPixelForNn: return (x + 0.5) / axis.scale;
    case Coordinates::kTfCropAndResize:
      return out > 1 ? axis.roi_start * (in - 1) + x * (axis.roi_end - axis.roi_start) * (in - 1) / (out - 1)
                     : 0.5 * (axis.roi_start + axis.roi_end) * (in - 1);
  }
  return x;
}

double nearest_index(double x, NearestRounding rounding, double scale) {
  switch (rounding) {
    case NearestRounding::kRoundPreferFloor: return x - std::floor(x) == 0.5 ? std::floor(x) : std::round(x);
    case NearestRounding::kRoundPreferCeil: return x - std::floor(x) == 0.5 ? std::ceil(x) : std::round(x);
    case NearestRounding::kFloor: return std::floor(x);
    case NearestRounding::kCeil: return std::ceil(x);
    case NearestRounding::kLegacy: return scale < 1 ? std::ceil(x) : std::floor(x);
  }
  return x;
}

// Keys' cubic convolution kernel with parameter a.
double cubic_kernel(double u, double a) {
  u = std::abs(u);
  if (u <= 1) return ((a + 2) * u - (a + 3)) * u * u + 1;
  if (u < 2) return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  return 0;
}

// How each output index along one axis reads the input: `width` weighted input indices, or the
// extrapolation value where tf_crop_and_resize maps it outside the input.
struct AxisTaps {
  std::int64_t width = 1;
  std::vector<std::int64_t> index;  // out * width, clamped into the input (edge padding)
  std::vector<double> weight;
  std::vector<bool> outside;
};

AxisTaps axis_taps(const AxisResize& axis, const ResizeAttributes& a) {
  const std::int64_t n_in = axis.in.value;
  const std::int64_t n_out = axis.out.value;
  AxisTaps taps;
  taps.outside.assign(static_cast<std::size_t>(n_out), false);
  // Antialiasing widens the kernel by 1/scale when downsampling.
  const double support = a.antialias ? std::min(axis.scale, 1.0) : 1.0;
  const double reach = a.mode == Interpolation::kCubic ? 2 : 1;
  const auto start = static_cast<std::int64_t>(std::floor(-reach / support)) + 1;
  if (a.mode != Interpolation::kNearest) taps.width = 2 - 2 * start;
  std::vector<double> weights(static_cast<std::size_t>(taps.width));
  for (std::int64_t j = 0; j < n_out; ++j) {
    const double x = original_coordinate(static_cast<double>(j), axis, a.coordinates);
    if (a.coordinates == Coordinates::kTfCropAndResize && (x < 0 || x > static_cast<double>(n_in - 1))) {
      taps.outside[static_cast<std::size_t>(j)] = true;
    }
    if (a.mode == Interpolation::kNearest) {
      taps.index.push_back(std::clamp<std::int64_t>(
          static_cast<std::int64_t>(nearest_index(x, a.rounding, axis.scale)), 0, n_in - 1));
      taps.weight.push_back(1);
      continue;
    }
    // The reference prefers the left neighbour: an integer coordinate has ratio 1 to the point
    // before it, which matters where exclude_outside or antialias reweights the taps.
    auto base = static_cast<std::int64_t>(std::floor(x));
    double ratio = x - static_cast<double>(base);
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    double sum = 0;
    for (std::int64_t i = 0; i < taps.width; ++i) {
      const double u = support * (static_cast<double>(i + start) - ratio);
      double w =
          a.mode == Interpolation::kCubic ? cubic_kernel(u, a.cubic_a) : std::max(0.0, 1 - std::abs(u));
      const std::int64_t index = base + start + i;
      if (a.exclude_outside && (index < 0 || index >= n_in)) w = 0;
      weights[static_cast<std::size_t>(i)] = w;
      sum += w;
    }
    const bool normalize = (a.antialias || a.exclude_outside) && sum != 0;
    for (std::int64_t i = 0; i < taps.width; ++i) {
      taps.index.push_back(std::clamp<std::int64_t>(base + start + i, 0, n_in - 1));
      taps.weight.push_back(normalize ? weights[static_cast<std::size_t>(i)] / sum
                                      : weights[static_cast<std::size_t>(i)]);
    }
  }
  return taps;
}

// Whether an axis changes at all: others are skipped (scale 1 maps every index to itself).
bool needs_pass(const AxisResize& axis, const ResizeAttributes& a) {
  return axis.resized && (axis.in.value != axis.out.value || axis.scale != 1.0 ||
                          a.coordinates == Coordinates::kTfCropAndResize);
}

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

FOVEA_REGISTER_OP(
    {.op_type = "Resize", .max_inputs = 4, .infer = infer_resize, .run = run_resize, .flops = resize_flops});
FOVEA_REGISTER_OP({.op_type = "Upsample",
                   .max_inputs = 2,
                   .infer = infer_resize,
                   .run = run_resize,
                   .flops = resize_flops});

}  // namespace fovea::runtime::ops
