// Reshape, Flatten, Squeeze, Unsqueeze: the same bytes under another shape, so their kernels copy
// and all the work is shape inference. Expand broadcasts the input to a shape given as an input.
#include <algorithm>

#include <fmt/format.h>

#include "runtime/ops/movement_util.h"

namespace fovea::runtime::ops {
namespace {

Status run_copy_bytes(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  // Over the thread pool: one thread does not reach the memory's bandwidth (a Squeeze of
  // RetinaNet's 54 MB of class scores took 122 ms).
  copy_bytes(static_cast<std::byte*>(ctx.output(0).raw()), static_cast<const std::byte*>(in.raw()),
             in.bytes());
  return Status::ok();
}

// Product of dims[begin, end): unknown when any factor is unknown (and none is zero). A product
// past int64 (a model's absurd shape; the fuzzer found one) is an error, not an overflow.
Result<Dim> dims_product(const InferContext& ctx, const Dims& dims, std::size_t begin, std::size_t end) {
  std::int64_t product = 1;
  bool known = true;
  for (std::size_t d = begin; d < end; ++d) {
    if (!dims[d].known()) {
      known = false;
    } else if (__builtin_mul_overflow(product, dims[d].value, &product)) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("{} has more elements than an int64 counts", dims_string(dims)));
    }
  }
  return known || product == 0 ? Dim::known_size(product) : Dim::unknown();
}

// The output dims when the target shape `shape` is known; `in` may hold unknown dims.
Result<Dims> reshape_dims(const InferContext& ctx, const Dims& in, const std::vector<std::int64_t>& shape,
                          bool allow_zero) {
  Dims out;
  int inferred = -1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t size = shape[d];
    if (size == -1) {
      if (inferred >= 0) return ctx.error(StatusCode::kInvalidArgument, "shape has more than one -1");
      inferred = static_cast<int>(d);
      out.push_back(Dim::unknown());
    } else if (size < -1) {
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("shape entry {} is {}", d, size));
    } else if (size == 0 && !allow_zero) {
      if (d >= in.size()) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("shape entry {} is 0 (copy) but the input has rank {}", d, in.size()));
      }
      out.push_back(in[d]);
    } else {
      out.push_back(Dim::known_size(size));
    }
  }
  if (allow_zero && inferred >= 0 && std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    return ctx.error(StatusCode::kInvalidArgument, "shape has both -1 and 0 while allowzero=1");
  }
  FOVEA_ASSIGN_OR_RETURN(const Dim in_count, dims_product(ctx, in, 0, in.size()));
  if (inferred >= 0) {
    Dims others = out;
    others.erase(others.begin() + inferred);
    FOVEA_ASSIGN_OR_RETURN(const Dim rest, dims_product(ctx, others, 0, others.size()));
    if (in_count.known() && rest.known()) {
      if (rest.value == 0 || in_count.value % rest.value != 0) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("cannot reshape {} into [{}]: the -1 dim is not a whole number",
                                     dims_string(in), fmt::join(shape, ", ")));
      }
      out[static_cast<std::size_t>(inferred)] = Dim::known_size(in_count.value / rest.value);
    }
  } else {
    FOVEA_ASSIGN_OR_RETURN(const Dim out_count, dims_product(ctx, out, 0, out.size()));
    if (in_count.known() && out_count.known() && in_count.value != out_count.value) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("cannot reshape {} ({} elements) into [{}] ({} elements)", dims_string(in),
                                   in_count.value, fmt::join(shape, ", "), out_count.value));
    }
  }
  return out;
}

Status infer_reshape(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
  FOVEA_TRY(ctx.require_rank(1, 1, 1));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t allow_zero, ctx.node().attr_int("allowzero", 0));
  const Tensor* shape = ctx.input_value(1);
  const Dims* in = ctx.input_dims(0);
  // The shape input's length is the output rank: bounded before anything is sized by it.
  if (const Dims* shape_dims = ctx.input_dims(1);
      shape_dims != nullptr && (*shape_dims)[0].known() && (*shape_dims)[0].value > kMaxTensorRank) {
    return ctx.error(StatusCode::kUnsupported,
                     fmt::format("the shape input asks for rank {}, over the maximum of {}",
                                 (*shape_dims)[0].value, kMaxTensorRank));
  }
  if (shape != nullptr && in != nullptr) {
    FOVEA_ASSIGN_OR_RETURN(Dims out, reshape_dims(ctx, *in, integers_of(*shape), allow_zero != 0));
    ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  } else if (shape != nullptr) {
    Dims out;  // 0 and -1 entries depend on the unknown input shape
    for (std::int64_t size : integers_of(*shape))
      out.push_back(size > 0 ? Dim::known_size(size) : Dim::unknown());
    ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  } else if (const Dims* shape_dims = ctx.input_dims(1); shape_dims != nullptr && (*shape_dims)[0].known()) {
    ctx.set_output(0, ctx.input_dtype(0),
                   Dims(static_cast<std::size_t>((*shape_dims)[0].value), Dim::unknown()));
  } else {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
  }
  return Status::ok();
}

Status infer_flatten(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis, ctx.node().attr_int("axis", 1));
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), Dims{Dim::unknown(), Dim::unknown()});
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(in->size());
  if (axis < -rank || axis > rank) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("axis {} is out of range [-{}, {}] for rank {}", axis, rank, rank, rank));
  }
  const auto split = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  FOVEA_ASSIGN_OR_RETURN(const Dim outer, dims_product(ctx, *in, 0, split));
  FOVEA_ASSIGN_OR_RETURN(const Dim inner, dims_product(ctx, *in, split, in->size()));
  ctx.set_output(0, ctx.input_dtype(0), Dims{outer, inner});
  return Status::ok();
}

Status infer_squeeze(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const IntOperand axes, int_operand(ctx, "axes", 1, 13));
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr || (axes.given && !axes.values)) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  std::vector<bool> remove(in->size(), false);
  if (axes.given) {
    FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
    FOVEA_ASSIGN_OR_RETURN(const std::vector<int> normalized,
                           normalize_axes(ctx, *axes.values, static_cast<int>(in->size())));
    for (int axis : normalized) {
      const Dim& dim = (*in)[static_cast<std::size_t>(axis)];
      if (dim.known() && dim.value != 1) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("cannot squeeze axis {} of size {}", axis, dim.value));
      }
      remove[static_cast<std::size_t>(axis)] = true;
    }
  } else {
    for (std::size_t d = 0; d < in->size(); ++d) {
      if (!(*in)[d].known()) {
        ctx.set_output(0, ctx.input_dtype(0), std::nullopt);  // whether it is 1 decides the rank
        return Status::ok();
      }
      remove[d] = (*in)[d].value == 1;
    }
  }
  Dims out;
  for (std::size_t d = 0; d < in->size(); ++d) {
    if (!remove[d]) out.push_back((*in)[d]);
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status infer_unsqueeze(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const IntOperand axes, int_operand(ctx, "axes", 1, 13));
  if (!axes.given) return ctx.error(StatusCode::kInvalidArgument, "axes are required");
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr || !axes.values) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  const int out_rank = static_cast<int>(in->size() + axes.values->size());
  FOVEA_ASSIGN_OR_RETURN(const std::vector<int> normalized, normalize_axes(ctx, *axes.values, out_rank));
  Dims out(static_cast<std::size_t>(out_rank), Dim::known_size(1));
  std::size_t next = 0;
  for (int d = 0; d < out_rank; ++d) {
    if (std::find(normalized.begin(), normalized.end(), d) == normalized.end()) {
      out[static_cast<std::size_t>(d)] = (*in)[next++];
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status infer_expand(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
  FOVEA_TRY(ctx.require_rank(1, 1, 1));
  const Tensor* shape = ctx.input_value(1);
  if (shape == nullptr) {
    const Dims* shape_dims = ctx.input_dims(1);
    const Dims* in = ctx.input_dims(0);
    if (in != nullptr && shape_dims != nullptr && (*shape_dims)[0].known()) {
      const auto rank = std::max(in->size(), static_cast<std::size_t>((*shape_dims)[0].value));
      ctx.set_output(0, ctx.input_dtype(0), Dims(rank, Dim::unknown()));
    } else {
      ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    }
    return Status::ok();
  }
  const std::vector<std::int64_t> target = integers_of(*shape);
  for (std::int64_t size : target) {
    if (size < 0) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("shape [{}] has a negative entry", fmt::join(target, ", ")));
    }
  }
  const Dims target_dims = dims_of(target);
  FOVEA_ASSIGN_OR_RETURN(std::optional<Dims> out, broadcast_dims(ctx, {ctx.input_dims(0), &target_dims}));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_expand(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const Shape strides = broadcast_strides(in.shape(), out.shape());
  std::vector<AxisOffsets> offsets;
  for (std::size_t d = 0; d < strides.size(); ++d) {
    offsets.push_back(identity_offsets(out.shape()[d], strides[d]));
  }
  gather_by_axis_offsets(in, out, offsets);
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Reshape",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_reshape,
                   .run = run_copy_bytes,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Flatten", .infer = infer_flatten, .run = run_copy_bytes, .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Squeeze",
                   .max_inputs = 2,
                   .infer = infer_squeeze,
                   .run = run_copy_bytes,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Unsqueeze",
                   .max_inputs = 2,
                   .infer = infer_unsqueeze,
                   .run = run_copy_bytes,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Expand",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_expand,
                   .run = run_expand,
                   .flops = no_flops});

}  // namespace fovea::runtime::ops
