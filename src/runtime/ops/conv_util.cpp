#include "runtime/ops/conv_util.h"

#include <fmt/format.h>

#include "runtime/ops/movement_util.h"

namespace fovea::runtime::ops {
namespace {

Result<AutoPad> read_auto_pad(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::string text, ctx.node().attr_string("auto_pad", "NOTSET"));
  if (text == "NOTSET" || text.empty()) return AutoPad::kNotSet;
  if (text == "SAME_UPPER") return AutoPad::kSameUpper;
  if (text == "SAME_LOWER") return AutoPad::kSameLower;
  if (text == "VALID") return AutoPad::kValid;
  return ctx.error(StatusCode::kInvalidArgument,
                   fmt::format("auto_pad '{}' is not one of NOTSET, SAME_UPPER, "
                               "SAME_LOWER, VALID",
                               text));
}

// An ints attribute of `size` entries, each at least `min_value`; `fallback` fills it when absent.
Result<std::vector<std::int64_t>> read_sized_ints(const InferContext& ctx, std::string_view key,
                                                  std::size_t size, std::int64_t min_value,
                                                  std::optional<std::vector<std::int64_t>> fallback) {
  FOVEA_ASSIGN_OR_RETURN(std::vector<std::int64_t> values, ctx.node().attr_ints(key, std::move(fallback)));
  if (values.size() != size) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} has {} entries, expected {}", key, values.size(), size));
  }
  for (std::int64_t v : values) {
    if (v < min_value) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("{} [{}] has an entry below {}", key, fmt::join(values, ", "), min_value));
    }
  }
  return values;
}

}  // namespace

Result<WindowAttributes> read_window_attributes(
    const InferContext& ctx, int spatial_rank,
    const std::optional<std::vector<std::int64_t>>& kernel_from_weights) {
  const auto rank = static_cast<std::size_t>(spatial_rank);
  WindowAttributes w;
  FOVEA_ASSIGN_OR_RETURN(w.auto_pad, read_auto_pad(ctx));
  FOVEA_ASSIGN_OR_RETURN(w.kernel, read_sized_ints(ctx, "kernel_shape", rank, 1, kernel_from_weights));
  if (kernel_from_weights && w.kernel != *kernel_from_weights) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("kernel_shape [{}] does not match the weights' spatial dims [{}]",
                                 fmt::join(w.kernel, ", "), fmt::join(*kernel_from_weights, ", ")));
  }
  FOVEA_ASSIGN_OR_RETURN(w.strides,
                         read_sized_ints(ctx, "strides", rank, 1, std::vector<std::int64_t>(rank, 1)));
  FOVEA_ASSIGN_OR_RETURN(w.dilations,
                         read_sized_ints(ctx, "dilations", rank, 1, std::vector<std::int64_t>(rank, 1)));
  FOVEA_ASSIGN_OR_RETURN(w.pads,
                         read_sized_ints(ctx, "pads", 2 * rank, 0, std::vector<std::int64_t>(2 * rank, 0)));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t ceil_mode, ctx.node().attr_int("ceil_mode", 0));
  w.ceil_mode = ceil_mode != 0;
  return w;
}

std::optional<std::vector<std::int64_t>> weights_kernel_shape(const Dims* weights) {
  if (weights == nullptr) return std::nullopt;
  std::vector<std::int64_t> kernel;
  for (std::size_t d = 2; d < weights->size(); ++d) {
    if (!(*weights)[d].known()) return std::nullopt;
    kernel.push_back((*weights)[d].value);
  }
  return kernel;
}

Result<WindowDim> resolve_window_dim(const InferContext& ctx, const WindowAttributes& window, int d,
                                     std::int64_t in) {
  const auto i = static_cast<std::size_t>(d);
  WindowDim dim{
      .in = in, .kernel = window.kernel[i], .stride = window.strides[i], .dilation = window.dilations[i]};
  const std::int64_t extent = (dim.kernel - 1) * dim.dilation + 1;
  switch (window.auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      // The output covers ceil(in / stride) windows; the padding needed for that is split evenly,
      // the odd element going to the end (SAME_UPPER) or the beginning (SAME_LOWER).
      dim.out = (in + dim.stride - 1) / dim.stride;
      const std::int64_t total = std::max<std::int64_t>(0, (dim.out - 1) * dim.stride + extent - in);
      dim.pad_begin = window.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      dim.pad_end = total - dim.pad_begin;
      return dim;
    }
    case AutoPad::kValid: break;
    case AutoPad::kNotSet:
      dim.pad_begin = window.pads[i];
      dim.pad_end = window.pads[i + window.kernel.size()];
      break;
  }
  const std::int64_t padded = in + dim.pad_begin + dim.pad_end;
  if (padded < extent) {
    return ctx.error(
        StatusCode::kInvalidArgument,
        fmt::format("spatial dim {}: the window (kernel {}, dilation {}) spans {} but the padded "
                    "input has only {}",
                    d, dim.kernel, dim.dilation, extent, padded));
  }
  if (window.ceil_mode) {
    dim.out = (padded - extent + dim.stride - 1) / dim.stride + 1;
    // A last window that would start inside the end padding is dropped (as PyTorch and ONNX's
    // reference do): it would see padding only.
    if ((dim.out - 1) * dim.stride >= in + dim.pad_begin) --dim.out;
  } else {
    dim.out = (padded - extent) / dim.stride + 1;
  }
  return dim;
}

Result<Dims> window_output_spatial_dims(const InferContext& ctx, const WindowAttributes& window,
                                        const Dims& input) {
  Dims out;
  for (std::size_t d = 2; d < input.size(); ++d) {
    if (!input[d].known()) {
      out.push_back(Dim::unknown());
      continue;
    }
    FOVEA_ASSIGN_OR_RETURN(WindowDim dim,
                           resolve_window_dim(ctx, window, static_cast<int>(d - 2), input[d].value));
    out.push_back(Dim::known_size(dim.out));
  }
  return out;
}

Result<std::vector<WindowDim>> resolve_window(const InferContext& ctx, const WindowAttributes& window,
                                              const Shape& input) {
  std::vector<WindowDim> dims;
  for (std::size_t d = 2; d < input.size(); ++d) {
    FOVEA_ASSIGN_OR_RETURN(WindowDim dim, resolve_window_dim(ctx, window, static_cast<int>(d - 2), input[d]));
    dims.push_back(dim);
  }
  return dims;
}

Result<Activation> read_activation(const InferContext& ctx) {
  const Node& node = ctx.node();
  FOVEA_ASSIGN_OR_RETURN(std::string name, node.attr_string("activation", ""));
  Activation activation;
  if (name.empty()) return activation;
  if (name == "Relu") {
    activation.kind = Activation::Kind::kRelu;
  } else if (name == "LeakyRelu") {
    activation.kind = Activation::Kind::kLeakyRelu;
    FOVEA_ASSIGN_OR_RETURN(activation.alpha, node.attr_float("activation_alpha", 0.01f));
  } else if (name == "Clip") {
    activation.kind = Activation::Kind::kClip;
    FOVEA_ASSIGN_OR_RETURN(activation.min, node.attr_float("activation_min"));
    FOVEA_ASSIGN_OR_RETURN(activation.max, node.attr_float("activation_max"));
  } else if (name == "Sigmoid") {
    activation.kind = Activation::Kind::kSigmoid;
  } else if (name == "HardSwish") {
    activation.kind = Activation::Kind::kHardSwish;
  } else if (name == "Silu") {
    activation.kind = Activation::Kind::kSilu;
  } else {
    return ctx.error(StatusCode::kUnsupported,
                     fmt::format("activation '{}' is not one of Relu, LeakyRelu, Clip, "
                                 "Sigmoid, HardSwish, Silu",
                                 name));
  }
  return activation;
}

Result<TransposeAttributes> read_transpose_attributes(
    const InferContext& ctx, int spatial_rank, const std::optional<std::vector<std::int64_t>>& kernel) {
  const auto rank = static_cast<std::size_t>(spatial_rank);
  TransposeAttributes t;
  FOVEA_ASSIGN_OR_RETURN(t.window, read_window_attributes(ctx, spatial_rank, kernel));
  FOVEA_ASSIGN_OR_RETURN(t.groups, ctx.node().attr_int("group", 1));
  FOVEA_ASSIGN_OR_RETURN(t.output_padding,
                         ctx.node().attr_ints("output_padding", std::vector<std::int64_t>(rank, 0)));
  FOVEA_ASSIGN_OR_RETURN(t.output_shape, ctx.node().attr_ints("output_shape", std::vector<std::int64_t>{}));
  // output_shape may name the N and C dims too; only the spatial ones matter.
  if (t.output_shape.size() == rank + 2)
    t.output_shape.erase(t.output_shape.begin(), t.output_shape.begin() + 2);
  if (t.groups < 1) {
    return ctx.error(StatusCode::kInvalidArgument, fmt::format("group={} must be positive", t.groups));
  }
  if (t.output_padding.size() != rank || (!t.output_shape.empty() && t.output_shape.size() != rank)) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("output_padding [{}] or output_shape [{}] does not have {} spatial entries",
                                 fmt::join(t.output_padding, ", "), fmt::join(t.output_shape, ", "), rank));
  }
  return t;
}

// Spatial dim d for input size `in`: the output size and the padding, per the ONNX spec.
Result<WindowDim> transpose_dim(const InferContext& ctx, const TransposeAttributes& t, int d,
                                std::int64_t in) {
  const auto i = static_cast<std::size_t>(d);
  const WindowAttributes& w = t.window;
  WindowDim dim{.in = in, .kernel = w.kernel[i], .stride = w.strides[i], .dilation = w.dilations[i]};
  const std::int64_t full = dim.stride * (in - 1) + t.output_padding[i] + (dim.kernel - 1) * dim.dilation + 1;
  const bool same = w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower;
  if (!t.output_shape.empty() || same) {
    // The padding follows from the requested size; SAME_UPPER puts the odd element at the beginning
    // here (the spec's formula), everything else at the end.
    dim.out = !t.output_shape.empty() ? t.output_shape[i] : in * dim.stride;
    const std::int64_t total = full - dim.out;
    // Halved rounding down, also when the requested size exceeds the full one (total < 0), as ONNX's
    // reference does: the extra output then lies at the end.
    const std::int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
    dim.pad_begin = w.auto_pad == AutoPad::kSameUpper ? half : total - half;
    dim.pad_end = total - dim.pad_begin;
  } else if (w.auto_pad == AutoPad::kNotSet) {
    dim.pad_begin = w.pads[i];
    dim.pad_end = w.pads[i + w.kernel.size()];
    dim.out = full - dim.pad_begin - dim.pad_end;
  } else {
    dim.out = full;  // VALID
  }
  if (dim.out < 0) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("spatial dim {}: pads leave a negative output size {}", d, dim.out));
  }
  return dim;
}

Dims permute_dims(const Dims& dims, const std::vector<std::int64_t>& perm) {
  Dims out;
  for (std::int64_t p : perm) out.push_back(dims[static_cast<std::size_t>(p)]);
  return out;
}

Shape permute_tensor_shape(const Shape& shape, const std::vector<std::int64_t>& perm) {
  Shape out;
  for (std::int64_t p : perm) out.push_back(shape[static_cast<std::size_t>(p)]);
  return out;
}

Tensor permute_tensor(const Tensor& tensor, const std::vector<std::int64_t>& perm) {
  Tensor out = Tensor::allocate(tensor.dtype(), permute_tensor_shape(tensor.shape(), perm));
  const Shape in_strides = contiguous_strides(tensor.shape());
  std::vector<AxisOffsets> offsets;
  for (std::int64_t p : perm) {
    const auto axis = static_cast<std::size_t>(p);
    offsets.push_back(identity_offsets(tensor.shape()[axis], in_strides[axis]));
  }
  gather_by_axis_offsets(tensor, out, offsets);
  return out;
}

}  // namespace fovea::runtime::ops
