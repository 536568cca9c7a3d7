#include "runtime/ops/resize_util.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {
namespace {

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

}  // namespace

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

bool needs_pass(const AxisResize& axis, const ResizeAttributes& a) {
  return axis.resized && (axis.in.value != axis.out.value || axis.scale != 1.0 ||
                          a.coordinates == Coordinates::kTfCropAndResize);
}

}  // namespace fovea::runtime::ops
