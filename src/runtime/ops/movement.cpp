// Concat, Split, Slice, Gather, Transpose, Tile, Pad: data movement for every dtype. Concat, Split
// and Gather copy contiguous blocks; the others are gathers with per-axis offsets.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/ops/movement_plan.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// A tensor seen as [outer, axis, inner] around one axis, in bytes for the inner part.
struct AxisSplit {
  std::int64_t outer = 1;
  std::int64_t inner_bytes = 0;
};
AxisSplit split_at(const Shape& shape, int axis, DataType dtype) {
  AxisSplit split;
  std::int64_t inner = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int>(d) < axis) split.outer *= shape[d];
    if (static_cast<int>(d) > axis) inner *= shape[d];
  }
  split.inner_bytes = inner * static_cast<std::int64_t>(data_type_size(dtype));
  return split;
}

// The axis attribute, normalized; infer() has validated it.
int kernel_axis(const KernelContext& ctx, std::optional<std::int64_t> fallback, int rank) {
  const std::int64_t axis = ctx.node().attr_int("axis", fallback).value();
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

const std::byte* bytes_of(const Tensor& t) {
  return static_cast<const std::byte*>(t.raw());
}
std::byte* bytes_of(Tensor& t) {
  return static_cast<std::byte*>(t.raw());
}

// ---- Concat ----

Status infer_concat(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis"));
  std::optional<Dims> out;
  for (int i = 0; i < ctx.input_count(); ++i) {
    FOVEA_TRY(ctx.require_same_dtype(0, i));
    FOVEA_TRY(ctx.require_rank(i, 1, kMaxTensorRank));
    const Dims* dims = ctx.input_dims(i);
    if (dims == nullptr) continue;
    if (out && out->size() != dims->size()) {
      return ctx.error(
          StatusCode::kInvalidArgument,
          fmt::format("input {} has rank {} but input 0 has rank {}", i, dims->size(), out->size()));
    }
    if (!out) out = Dims(dims->size(), Dim::known_size(0));
  }
  if (!out) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, static_cast<int>(out->size())));
  std::vector<bool> seen(out->size(), false);
  for (int i = 0; i < ctx.input_count(); ++i) {
    const Dims* dims = ctx.input_dims(i);
    if (dims == nullptr) {
      (*out)[static_cast<std::size_t>(axis)] = Dim::unknown();
      continue;
    }
    for (std::size_t d = 0; d < dims->size(); ++d) {
      const Dim& in = (*dims)[d];
      Dim& o = (*out)[d];
      if (static_cast<int>(d) == axis) {
        o = in.known() && o.known() ? Dim::known_size(o.value + in.value) : Dim::unknown();
      } else if (!seen[d] || (!o.known() && in.known())) {
        o = in;
        seen[d] = true;
      } else if (in.known() && o.known() && in.value != o.value) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("input {} has size {} in dim {} where another input has {}", i, in.value,
                                     d, o.value));
      }
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_concat(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const int axis = kernel_axis(ctx, std::nullopt, out.rank());
  std::vector<AxisSplit> parts;
  for (int i = 0; i < ctx.input_count(); ++i)
    parts.push_back(split_at(ctx.input(i).shape(), axis, out.dtype()));
  std::byte* dst = bytes_of(out);
  const std::int64_t outer = split_at(out.shape(), axis, out.dtype()).outer;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (int i = 0; i < ctx.input_count(); ++i) {
      const std::int64_t block = ctx.input(i).dim(axis) * parts[static_cast<std::size_t>(i)].inner_bytes;
      if (block == 0) continue;
      copy_bytes(dst, bytes_of(ctx.input(i)) + o * block, static_cast<std::size_t>(block));
      dst += block;
    }
  }
  return Status::ok();
}

// ---- Split ----

struct SplitPlan {
  int axis = 0;
  std::optional<std::vector<std::int64_t>> sizes;  // nullopt: not known before the input's shape
};

Result<SplitPlan> split_plan(const InferContext& ctx, const Dims& in) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis", 0));
  SplitPlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.axis, normalize_axis(ctx, axis_attr, static_cast<int>(in.size())));
  const Dim& dim = in[static_cast<std::size_t>(plan.axis)];
  const auto outputs = static_cast<std::int64_t>(ctx.output_count());
  FOVEA_ASSIGN_OR_RETURN(const IntOperand split, int_operand(ctx, "split", 1, 13));
  const bool has_num_outputs = ctx.opset() >= 18 && ctx.node().has_attribute("num_outputs");
  if (split.given && has_num_outputs) {
    return ctx.error(StatusCode::kInvalidArgument, "both split and num_outputs are given");
  }
  if (split.given) {
    plan.sizes = split.values;
  } else if (dim.known()) {
    std::int64_t chunk = 0;
    if (has_num_outputs) {
      FOVEA_ASSIGN_OR_RETURN(const std::int64_t num_outputs, ctx.node().attr_int("num_outputs"));
      if (num_outputs != outputs) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("num_outputs is {} but the node has {} outputs", num_outputs, outputs));
      }
      chunk = (dim.value + outputs - 1) / outputs;  // the last chunk takes what is left
    } else if (dim.value % outputs != 0) {
      return ctx.error(
          StatusCode::kInvalidArgument,
          fmt::format("dim {} of size {} does not split into {} equal parts", plan.axis, dim.value, outputs));
    } else {
      chunk = dim.value / outputs;
    }
    plan.sizes = std::vector<std::int64_t>(static_cast<std::size_t>(outputs), chunk);
    plan.sizes->back() = dim.value - chunk * (outputs - 1);
  }
  if (!plan.sizes) return plan;
  const std::vector<std::int64_t>& sizes = *plan.sizes;
  std::int64_t total = 0;
  for (std::int64_t size : sizes) {
    if (size < 0)
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("split [{}] has a negative size", fmt::join(sizes, ", ")));
    total += size;
  }
  if (static_cast<std::int64_t>(sizes.size()) != outputs) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("split has {} sizes but the node has {} outputs", sizes.size(), outputs));
  }
  if (dim.known() && total != dim.value) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("split sizes [{}] do not add up to dim {} of size {}",
                                 fmt::join(sizes, ", "), plan.axis, dim.value));
  }
  return plan;
}

Status infer_split(InferContext& ctx) {
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    for (int i = 0; i < ctx.output_count(); ++i) ctx.set_output(i, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const SplitPlan plan, split_plan(ctx, *in));
  for (int i = 0; i < ctx.output_count(); ++i) {
    Dims out = *in;
    out[static_cast<std::size_t>(plan.axis)] =
        plan.sizes ? Dim::known_size((*plan.sizes)[static_cast<std::size_t>(i)]) : Dim::unknown();
    ctx.set_output(i, ctx.input_dtype(0), std::move(out));
  }
  return Status::ok();
}

Status run_split(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int axis = kernel_axis(ctx, 0, in.rank());
  const AxisSplit split = split_at(in.shape(), axis, in.dtype());
  const std::byte* src = bytes_of(in);
  for (std::int64_t o = 0; o < split.outer; ++o) {
    for (int i = 0; i < ctx.output_count(); ++i) {
      Tensor& out = ctx.output(i);
      const std::int64_t block = out.dim(axis) * split.inner_bytes;
      if (block == 0) continue;
      std::memcpy(bytes_of(out) + o * block, src, static_cast<std::size_t>(block));
      src += block;
    }
  }
  return Status::ok();
}

// ---- Slice ----

Status infer_slice(InferContext& ctx) {
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const auto plan, slice_plan(ctx, *in));
  Dims out(in->size(), Dim::unknown());
  if (plan) {
    for (std::size_t d = 0; d < in->size(); ++d) out[d] = (*plan)[d].count;
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_slice(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const auto plan, slice_plan(ctx.inference(), dims_of(in.shape())));
  const Shape strides = contiguous_strides(in.shape());
  std::vector<AxisOffsets> offsets;
  for (std::size_t d = 0; d < strides.size(); ++d) {
    const SliceAxis& axis = (*plan)[d];
    AxisOffsets axis_offsets(static_cast<std::size_t>(axis.count.value));
    for (std::size_t i = 0; i < axis_offsets.size(); ++i) {
      axis_offsets[i] = (axis.start + static_cast<std::int64_t>(i) * axis.step) * strides[d];
    }
    offsets.push_back(std::move(axis_offsets));
  }
  gather_by_axis_offsets(in, ctx.output(0), offsets);
  return Status::ok();
}

// ---- Gather ----

Status infer_gather(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64, DataType::kInt32}));
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis", 0));
  const Dims* data = ctx.input_dims(0);
  const Dims* indices = ctx.input_dims(1);
  if (data == nullptr || indices == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, static_cast<int>(data->size())));
  const Dim& dim = (*data)[static_cast<std::size_t>(axis)];
  if (const Tensor* values = ctx.input_value(1); values != nullptr && dim.known()) {
    for (std::int64_t i = 0; i < values->numel(); ++i) {
      const std::int64_t index = integer_at(*values, i);
      if (index < -dim.value || index >= dim.value) {
        return ctx.error(
            StatusCode::kInvalidArgument,
            fmt::format("index {} is out of range for dim {} of size {}", index, axis, dim.value));
      }
    }
  }
  Dims out(data->begin(), data->begin() + axis);
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int axis = kernel_axis(ctx, 0, data.rank());
  const AxisSplit split = split_at(data.shape(), axis, data.dtype());
  const std::int64_t dim = data.dim(axis);
  const auto block = static_cast<std::size_t>(split.inner_bytes);
  std::byte* dst = bytes_of(ctx.output(0));
  for (std::int64_t o = 0; o < split.outer; ++o) {
    for (std::int64_t j = 0; j < indices.numel(); ++j) {
      std::int64_t index = integer_at(indices, j);
      if (index < 0) index += dim;
      std::memcpy(dst, bytes_of(data) + (o * dim + index) * split.inner_bytes, block);
      dst += block;
    }
  }
  return Status::ok();
}

// ---- Transpose ----

Status infer_transpose(InferContext& ctx) {
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> perm,
                           ctx.node().attr_ints("perm", std::vector<std::int64_t>{}));
    ctx.set_output(0, ctx.input_dtype(0),
                   perm.empty() ? std::nullopt : std::optional(Dims(perm.size(), Dim::unknown())));
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> perm,
                         transpose_perm(ctx, static_cast<int>(in->size())));
  Dims out;
  for (std::int64_t axis : perm) out.push_back((*in)[static_cast<std::size_t>(axis)]);
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

// A transpose that moves the input's innermost axis reads it with a large stride, and the generic
// gather's element-by-element reads then miss the cache on nearly every element (RetinaNet's head
// permute [1, 9, 91, H, W] -> [1, H, W, 9, 91], 11 M floats: 248 ms on two cores). Tiles of
// kTransposeTile x kTransposeTile instead read as many short contiguous runs, kept in L1 while the
// tile's rows are written.
constexpr std::int64_t kTransposeTile = 32;

template <typename T>
void transpose_tiled(const T* in, T* out, const Shape& in_shape, const Shape& out_shape,
                     const std::vector<std::int64_t>& perm) {
  const std::size_t last = out_shape.size() - 1;
  const Shape in_strides = contiguous_strides(in_shape);
  const Shape out_strides = contiguous_strides(out_shape);
  // The tile's rows: the output axis that holds the input's innermost one; its columns: the output's
  // innermost axis.
  const auto row_axis = static_cast<std::size_t>(
      std::find(perm.begin(), perm.end(), static_cast<std::int64_t>(last)) - perm.begin());
  const std::int64_t rows = out_shape[row_axis], cols = out_shape[last];
  const std::int64_t column_step = in_strides[static_cast<std::size_t>(perm[last])];
  std::vector<std::size_t> outer_axes;
  std::int64_t outer = 1;
  for (std::size_t d = 0; d < last; ++d) {
    if (d == row_axis) continue;
    outer_axes.push_back(d);
    outer *= out_shape[d];
  }
  const std::int64_t row_tiles = (rows + kTransposeTile - 1) / kTransposeTile;
  const std::int64_t col_tiles = (cols + kTransposeTile - 1) / kTransposeTile;
  parallel_for(outer * row_tiles * col_tiles, 8, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t item = begin; item < end; ++item) {
      std::int64_t rest = item;
      const std::int64_t c0 = (rest % col_tiles) * kTransposeTile;
      rest /= col_tiles;
      const std::int64_t r0 = (rest % row_tiles) * kTransposeTile;
      rest /= row_tiles;
      std::int64_t in_base = 0, out_base = 0;
      for (std::size_t k = outer_axes.size(); k-- > 0;) {
        const std::size_t d = outer_axes[k];
        const std::int64_t i = rest % out_shape[d];
        rest /= out_shape[d];
        in_base += i * in_strides[static_cast<std::size_t>(perm[d])];
        out_base += i * out_strides[d];
      }
      const std::int64_t r1 = std::min(rows, r0 + kTransposeTile), c1 = std::min(cols, c0 + kTransposeTile);
      for (std::int64_t r = r0; r < r1; ++r) {
        T* dst = out + out_base + r * out_strides[row_axis];
        const T* src = in + in_base + r;
        for (std::int64_t c = c0; c < c1; ++c) dst[c] = src[c * column_step];
      }
    }
  });
}

Status run_transpose(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> perm, transpose_perm(ctx.inference(), in.rank()));
  Tensor& out = ctx.output(0);
  if (in.rank() >= 2 && out.numel() > 0 && perm.back() != in.rank() - 1) {
    dispatch_by_size(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      transpose_tiled(in.data<T>(), out.data<T>(), in.shape(), out.shape(), perm);
    });
    return Status::ok();
  }
  const Shape strides = contiguous_strides(in.shape());
  std::vector<AxisOffsets> offsets;
  for (std::int64_t axis : perm) {
    offsets.push_back(
        identity_offsets(in.dim(static_cast<int>(axis)), strides[static_cast<std::size_t>(axis)]));
  }
  gather_by_axis_offsets(in, out, offsets);
  return Status::ok();
}

// ---- Tile ----

Status infer_tile(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
  FOVEA_TRY(ctx.require_rank(1, 1, 1));
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  Dims out(in->size(), Dim::unknown());
  if (const Tensor* repeats = ctx.input_value(1)) {
    const std::vector<std::int64_t> values = integers_of(*repeats);
    if (values.size() != in->size()) {
      return ctx.error(
          StatusCode::kInvalidArgument,
          fmt::format("repeats has {} entries for an input of rank {}", values.size(), in->size()));
    }
    for (std::size_t d = 0; d < values.size(); ++d) {
      if (values[d] < 0)
        return ctx.error(StatusCode::kInvalidArgument, fmt::format("repeats[{}] is negative", d));
      std::int64_t size = 0;
      if (!(*in)[d].known()) continue;
      if (__builtin_mul_overflow((*in)[d].value, values[d], &size)) {
        return ctx.error(
            StatusCode::kInvalidArgument,
            fmt::format("repeats[{}] = {} makes dim {} larger than an int64 counts", d, values[d], d));
      }
      out[d] = Dim::known_size(size);
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_tile(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const Shape strides = contiguous_strides(in.shape());
  std::vector<AxisOffsets> offsets;
  for (int d = 0; d < in.rank(); ++d) {
    AxisOffsets axis_offsets(static_cast<std::size_t>(out.dim(d)));
    for (std::size_t i = 0; i < axis_offsets.size(); ++i) {
      axis_offsets[i] = (static_cast<std::int64_t>(i) % in.dim(d)) * strides[static_cast<std::size_t>(d)];
    }
    offsets.push_back(std::move(axis_offsets));
  }
  gather_by_axis_offsets(in, out, offsets);
  return Status::ok();
}

// ---- Pad ----

Status infer_pad(InferContext& ctx) {
  if (ctx.opset() >= 11 && ctx.has_input(2)) {
    FOVEA_TRY(ctx.require_same_dtype(0, 2));
  }
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    FOVEA_TRY(pad_mode(ctx).status());
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const auto plan, pad_plan(ctx, static_cast<int>(in->size())));
  Dims out(in->size(), Dim::unknown());
  for (std::size_t d = 0; plan && d < in->size(); ++d) {
    const Dim& dim = (*in)[d];
    const std::int64_t padding = plan->begin[d] + plan->end[d];
    if (!dim.known()) {
      out[d] = padding == 0 ? dim : Dim::unknown();
      continue;
    }
    if (dim.value + padding < 0) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("pads {} and {} crop more than dim {} of size {}", plan->begin[d],
                                   plan->end[d], d, dim.value));
    }
    if (dim.value == 0 && padding > 0 && plan->mode != PadMode::kConstant) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("cannot pad the empty dim {} in a mode other than constant", d));
    }
    out[d] = Dim::known_size(dim.value + padding);
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_pad(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  FOVEA_ASSIGN_OR_RETURN(const auto plan, pad_plan(ctx.inference(), in.rank()));
  std::array<std::byte, 8> fill{};
  if (ctx.opset() < 11) {
    fill = element_bytes(in.dtype(), ctx.node().attr_float("value", 0.0f).value());
  } else if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    std::memcpy(fill.data(), ctx.input(2).raw(), data_type_size(in.dtype()));
  }
  const Shape strides = contiguous_strides(in.shape());
  std::vector<AxisOffsets> offsets;
  for (int d = 0; d < in.rank(); ++d) {
    const auto axis = static_cast<std::size_t>(d);
    AxisOffsets axis_offsets(static_cast<std::size_t>(out.dim(d)));
    for (std::size_t i = 0; i < axis_offsets.size(); ++i) {
      const std::int64_t source =
          pad_source(static_cast<std::int64_t>(i) - plan->begin[axis], in.dim(d), plan->mode);
      axis_offsets[i] = source < 0 ? kFillOffset : source * strides[axis];
    }
    offsets.push_back(std::move(axis_offsets));
  }
  gather_by_axis_offsets(in, out, offsets, fill.data());
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Concat",
                   .max_inputs = kVariadic,
                   .infer = infer_concat,
                   .run = run_concat,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Split",
                   .max_inputs = 2,
                   .max_outputs = kVariadic,
                   .infer = infer_split,
                   .run = run_split,
                   .flops = no_flops});
FOVEA_REGISTER_OP(
    {.op_type = "Slice", .max_inputs = 5, .infer = infer_slice, .run = run_slice, .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Gather",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_gather,
                   .run = run_gather,
                   .flops = no_flops});
FOVEA_REGISTER_OP(
    {.op_type = "Transpose", .infer = infer_transpose, .run = run_transpose, .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Tile",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_tile,
                   .run = run_tile,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Pad", .max_inputs = 4, .infer = infer_pad, .run = run_pad, .flops = no_flops});

}  // namespace fovea::runtime::ops
