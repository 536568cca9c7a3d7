// Ops that make tensors from attributes, shapes and scalars: Constant, Shape, Size,
// ConstantOfShape and Range. PyTorch exports compute shapes with them, so constant folding leans on
// their infer() being as precise as the known inputs allow.
//
//   op               inputs                              output
//   Constant         -                                   the attribute's dtype
//   Shape Size       any dtype                           int64
//   ConstantOfShape  int64 shape                         the `value` attribute's dtype (float32 0)
//   Range            float32/64 or int64/32 scalars      the inputs' dtype
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/ops/constant_util.h"
#include "runtime/ops/elementwise_util.h"

namespace fovea::runtime::ops {
namespace {

// ConstantOfShape and Range size their output from input values; more elements than this come
// from a corrupt or hostile model (the loader bounds every dim by 2^31 for the same reason).
constexpr std::int64_t kMaxValueSizedElements = std::int64_t{1} << 31;

Status infer_constant(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(Tensor value, constant_value(ctx.node()));
  ctx.set_output(0, value.dtype(), value.shape());
  return Status::ok();
}

Status run_constant(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(Tensor value, constant_value(ctx.node()));
  if (value.bytes() > 0) std::memcpy(ctx.output(0).raw(), value.raw(), value.bytes());
  return Status::ok();
}

Status infer_shape(InferContext& ctx) {
  const Dims* dims = ctx.input_dims(0);
  if (dims == nullptr) {
    FOVEA_TRY(shape_range(ctx.node(), 0).status());  // attribute kinds
    ctx.set_output(0, DataType::kInt64, Dims{Dim::unknown()});
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(DimRange range, shape_range(ctx.node(), static_cast<std::int64_t>(dims->size())));
  ctx.set_output(0, DataType::kInt64, Shape{range.end - range.begin});
  return Status::ok();
}

Status run_shape(KernelContext& ctx) {
  const Shape& shape = ctx.input(0).shape();
  FOVEA_ASSIGN_OR_RETURN(DimRange range, shape_range(ctx.node(), static_cast<std::int64_t>(shape.size())));
  std::copy(shape.begin() + range.begin, shape.begin() + range.end, ctx.output(0).data<std::int64_t>());
  return Status::ok();
}

Status infer_size(InferContext& ctx) {
  ctx.set_output(0, DataType::kInt64, Shape{});
  return Status::ok();
}

Status run_size(KernelContext& ctx) {
  ctx.output(0).data<std::int64_t>()[0] = ctx.input(0).numel();
  return Status::ok();
}

Status infer_constant_of_shape(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {DataType::kInt64}));
  FOVEA_TRY(ctx.require_rank(0, 1, 1));
  FOVEA_ASSIGN_OR_RETURN(Tensor value, fill_value(ctx.node()));
  if (value.numel() != 1) {
    return ctx.error(StatusCode::kInvalidArgument, "attribute 'value' must hold one element, got shape ",
                     shape_string(value.shape()));
  }
  if (const Tensor* shape = ctx.input_value(0)) {
    const Shape out = integers_of(*shape);
    double count = 1;  // in double, so that no product of dims can overflow
    for (std::int64_t d : out) {
      if (d < 0) return ctx.error(StatusCode::kInvalidArgument, "negative dim in shape ", shape_string(out));
      count *= static_cast<double>(d);
    }
    if (count > static_cast<double>(kMaxValueSizedElements)) {
      return ctx.error(StatusCode::kInvalidArgument, "shape ", shape_string(out),
                       " has more than 2^31 elements");
    }
    ctx.set_output(0, value.dtype(), out);
    return Status::ok();
  }
  // Rank known from the shape input's length, dims not.
  const Dims* dims = ctx.input_dims(0);
  std::optional<Dims> out;
  if (dims != nullptr && (*dims)[0].known()) {
    if ((*dims)[0].value > kMaxTensorRank) {
      return ctx.error(StatusCode::kUnsupported, "the shape input asks for rank ",
                       std::to_string((*dims)[0].value), ", over the maximum of ",
                       std::to_string(kMaxTensorRank));
    }
    out = Dims(static_cast<std::size_t>((*dims)[0].value), Dim::unknown());
  }
  ctx.set_output(0, value.dtype(), std::move(out));
  return Status::ok();
}

Status run_constant_of_shape(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(Tensor value, fill_value(ctx.node()));
  Tensor& out = ctx.output(0);
  dispatch_by_size(out.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    std::fill_n(out.data<U>(), out.numel(), value.data<U>()[0]);
  });
  return Status::ok();
}

using RangeTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32>;

// max(ceil((limit - start) / delta), 0), computed in double: exact for every range small enough
// to allocate.
Result<std::int64_t> range_length(const InferContext& ctx, const Tensor& start, const Tensor& limit,
                                  const Tensor& delta) {
  const double d = number_at(delta, 0);
  if (d == 0) return ctx.error(StatusCode::kInvalidArgument, "delta is 0");
  const double length = std::ceil((number_at(limit, 0) - number_at(start, 0)) / d);
  if (!(length <= static_cast<double>(kMaxValueSizedElements))) {  // also catches NaN
    return ctx.error(StatusCode::kInvalidArgument, "the range has more than 2^31 elements");
  }
  return std::max(static_cast<std::int64_t>(length), std::int64_t{0});
}

Status infer_range(InferContext& ctx) {
  FOVEA_TRY(RangeTypes::require(ctx, 0));
  static constexpr const char* kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    FOVEA_TRY(ctx.require_same_dtype(0, i));
    const Dims* dims = ctx.input_dims(i);
    if (dims != nullptr && all_known(*dims) && element_count(shape_of(*dims)) != 1) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("{} must be a scalar, got shape {}", kNames[i], dims_string(*dims)));
    }
  }
  const Tensor* start = ctx.input_value(0);
  const Tensor* limit = ctx.input_value(1);
  const Tensor* delta = ctx.input_value(2);
  if (start == nullptr || limit == nullptr || delta == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), Dims{Dim::unknown()});
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(std::int64_t length, range_length(ctx, *start, *limit, *delta));
  ctx.set_output(0, ctx.input_dtype(0), Shape{length});
  return Status::ok();
}

Status run_range(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  RangeTypes::dispatch(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T start = ctx.input(0).data<T>()[0];
    const T delta = ctx.input(2).data<T>()[0];
    T* o = out.data<T>();
    // start + i * delta rather than repeated addition, which would accumulate rounding errors.
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  });
  return Status::ok();
}

double no_flops(const Node&, const std::vector<Shape>&, const std::vector<Shape>&) {
  return 0;
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Constant",
                   .min_inputs = 0,
                   .max_inputs = 0,
                   .infer = infer_constant,
                   .run = run_constant,
                   .flops = no_flops});
// Shape and Size read no element, so no element type goes through float32 (constant folding
// hands them a tensor with a shape and no data).
FOVEA_REGISTER_OP({.op_type = "Shape",
                   .infer = infer_shape,
                   .run = run_shape,
                   .float16 = OpDef::Float16::kNative,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Size",
                   .infer = infer_size,
                   .run = run_size,
                   .float16 = OpDef::Float16::kNative,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "ConstantOfShape",
                   .infer = infer_constant_of_shape,
                   .run = run_constant_of_shape,
                   .flops = no_flops});
FOVEA_REGISTER_OP(
    {.op_type = "Range", .min_inputs = 3, .max_inputs = 3, .infer = infer_range, .run = run_range});

}  // namespace fovea::runtime::ops
