// The indexing ops on the CPU: GatherElements, GatherND, ScatterElements, ScatterND, CumSum,
// DepthToSpace, SpaceToDepth, Trilu, OneHot, EyeLike and Hardmax. Their offsets come from the plans
// and per-element functions of indexing_util.h that the CUDA kernels use too.
//
//   op                                         dtypes
//   GatherElements GatherND DepthToSpace       every dtype (elements move by size)
//   SpaceToDepth Trilu OneHot EyeLike
//   ScatterElements Scatter ScatterND          float32/64, int64/32/8, uint8, bool (bool: reduction none)
//   CumSum                                     float32/64, int64/32
//   Hardmax                                    float32/64
//
// Indices (int64 or int32; OneHot's any numeric dtype) may be negative, counting from the end;
// infer() rejects any outside their dim once their values are known, which at run time they are.
// ScatterElements and ScatterND apply updates in order, so with reduction none a repeated index
// keeps its last update.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/indexing_util.h"
#include "runtime/ops/movement_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

using IndexTypes = DTypes<DataType::kInt64, DataType::kInt32>;
using ScatterTypes = DTypes<FOVEA_NUMERIC_TYPES, DataType::kBool>;
using CumSumTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32>;

// Every element of `indices` lies in [-dim, dim) for the dim `dim_of(i)` it indexes.
template <typename DimOf>
Status check_indices(const InferContext& ctx, const Tensor& indices, DimOf dim_of) {
  for (std::int64_t i = 0; i < indices.numel(); ++i) {
    const std::int64_t index = integer_at(indices, i);
    const std::int64_t dim = dim_of(i);
    if (normalized_index(index, dim) < 0) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("index {} is out of range for a dim of size {}", index, dim));
    }
  }
  return Status::ok();
}

// ---- GatherElements, ScatterElements ----

// Checks data (input 0) against indices (input 1), returning the plan when shapes are known.
Result<std::optional<ElementsPlan>> infer_elements(InferContext& ctx) {
  FOVEA_TRY(IndexTypes::require(ctx, 1));
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  const std::optional<Shape> data = known_shape(ctx, 0);
  const std::optional<Shape> indices = known_shape(ctx, 1);
  if (!data || !indices) return std::optional<ElementsPlan>();
  FOVEA_ASSIGN_OR_RETURN(const ElementsPlan plan, elements_plan(ctx, *data, *indices));
  if (const Tensor* values = ctx.input_value(1)) {
    FOVEA_TRY(check_indices(ctx, *values, [&](std::int64_t) { return plan.axis_dim; }));
  }
  return std::optional<ElementsPlan>(plan);
}

Status infer_gather_elements(InferContext& ctx) {
  FOVEA_TRY(infer_elements(ctx).status());
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_type(1).dims);
  return Status::ok();
}

Status run_gather_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  FOVEA_ASSIGN_OR_RETURN(const ElementsPlan plan,
                         elements_plan(ctx.inference(), data.shape(), indices.shape()));
  dispatch_by_size(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = data.data<T>();
    T* out = ctx.output(0).data<T>();
    for (std::int64_t i = 0; i < indices.numel(); ++i) {
      out[i] = in[elements_offset(plan, i, normalized_index(integer_at(indices, i), plan.axis_dim))];
    }
  });
  return Status::ok();
}

// Scatter's updates (input 2) have data's dtype; a reduction other than none needs numbers.
Status infer_scatter_common(InferContext& ctx) {
  FOVEA_TRY(ScatterTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(0, 2));
  FOVEA_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction(ctx.node()));
  if (reduction != ScatterReduction::kNone && ctx.input_dtype(0) == DataType::kBool) {
    return ctx.error(StatusCode::kInvalidArgument, "bool data takes only reduction 'none'");
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_type(0).dims);
  return Status::ok();
}

Status infer_scatter_elements(InferContext& ctx) {
  FOVEA_TRY(infer_elements(ctx).status());
  const Dims* indices = ctx.input_dims(1);
  const Dims* updates = ctx.input_dims(2);
  if (indices != nullptr && updates != nullptr && *indices != *updates) {
    return ctx.error(StatusCode::kInvalidArgument, "updates of shape ", dims_string(*updates),
                     " differ from indices of shape ", dims_string(*indices));
  }
  return infer_scatter_common(ctx);
}

// out = data, then `apply(out)` for the scatter's updates in order.
template <typename Apply>
void scatter_into_copy(KernelContext& ctx, Apply apply) {
  const Tensor& data = ctx.input(0);
  std::memcpy(ctx.output(0).raw(), data.raw(), data.bytes());
  ScatterTypes::dispatch(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    apply(tag, ctx.output(0).data<T>(), ctx.input(2).data<T>());
  });
}

Status run_scatter_elements(KernelContext& ctx) {
  const Tensor& indices = ctx.input(1);
  FOVEA_ASSIGN_OR_RETURN(const ElementsPlan plan,
                         elements_plan(ctx.inference(), ctx.input(0).shape(), indices.shape()));
  FOVEA_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction(ctx.node()));
  scatter_into_copy(ctx, [&](auto, auto* out, const auto* updates) {
    const auto scatter = [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const std::int64_t offset =
            elements_offset(plan, i, normalized_index(integer_at(indices, i), plan.axis_dim));
        out[offset] = reduce_scatter(reduction, out[offset], updates[i]);
      }
    };
    // Without a reduction each update is one write (ONNX leaves duplicate indices undefined then):
    // in parallel. A reduction keeps the index order, so that float sums come out the same.
    if (reduction == ScatterReduction::kNone) {
      parallel_for(indices.numel(), kElementwiseMinChunk, scatter);
    } else {
      scatter(0, indices.numel());
    }
  });
  return Status::ok();
}

// ---- GatherND, ScatterND ----

// The plan when data's and indices' shapes are known; also checks known index values.
Result<std::optional<NdPlan>> infer_nd(InferContext& ctx, std::int64_t batch_dims) {
  FOVEA_TRY(IndexTypes::require(ctx, 1));
  const std::optional<Shape> data = known_shape(ctx, 0);
  const std::optional<Shape> indices = known_shape(ctx, 1);
  if (!data || !indices) return std::optional<NdPlan>();
  FOVEA_ASSIGN_OR_RETURN(const NdPlan plan, nd_plan(ctx, *data, *indices, batch_dims));
  if (const Tensor* values = ctx.input_value(1)) {
    FOVEA_TRY(check_indices(ctx, *values, [&](std::int64_t i) { return plan.dims[i % plan.tuple_size]; }));
  }
  return std::optional<NdPlan>(plan);
}

Status infer_gather_nd(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t batch_dims, ctx.node().attr_int("batch_dims", 0));
  FOVEA_ASSIGN_OR_RETURN(const std::optional<NdPlan> plan, infer_nd(ctx, batch_dims));
  if (!plan) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  ctx.set_output(0, ctx.input_dtype(0), nd_output_shape(*plan, *known_shape(ctx, 0), *known_shape(ctx, 1)));
  return Status::ok();
}

template <typename F>
void for_each_index_type(const Tensor& indices, F&& f) {
  IndexTypes::dispatch(indices.dtype(), [&](auto tag) { f(indices.data<typename decltype(tag)::type>()); });
}

Status run_gather_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t batch_dims, ctx.node().attr_int("batch_dims", 0));
  FOVEA_ASSIGN_OR_RETURN(const NdPlan plan,
                         nd_plan(ctx.inference(), data.shape(), indices.shape(), batch_dims));
  dispatch_by_size(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = data.data<T>();
    T* out = ctx.output(0).data<T>();
    for_each_index_type(indices, [&](const auto* index) {
      for (std::int64_t t = 0; t < plan.tuples; ++t) {
        const std::int64_t offset = nd_slice_offset(plan, index, t);
        std::copy_n(in + offset, plan.slice, out + t * plan.slice);
      }
    });
  });
  return Status::ok();
}

Status infer_scatter_nd(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::optional<NdPlan> plan, infer_nd(ctx, 0));
  const std::optional<Shape> updates = known_shape(ctx, 2);
  if (plan && updates) {
    const Shape expected = nd_output_shape(*plan, *known_shape(ctx, 0), *known_shape(ctx, 1));
    if (*updates != expected) {
      return ctx.error(StatusCode::kInvalidArgument, "updates have shape ", shape_string(*updates),
                       ", expected ", shape_string(expected));
    }
  }
  return infer_scatter_common(ctx);
}

Status run_scatter_nd(KernelContext& ctx) {
  const Tensor& indices = ctx.input(1);
  FOVEA_ASSIGN_OR_RETURN(const NdPlan plan,
                         nd_plan(ctx.inference(), ctx.input(0).shape(), indices.shape(), 0));
  FOVEA_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction(ctx.node()));
  scatter_into_copy(ctx, [&](auto, auto* out, const auto* updates) {
    for_each_index_type(indices, [&](const auto* index) {
      for (std::int64_t t = 0; t < plan.tuples; ++t) {
        const std::int64_t offset = nd_slice_offset(plan, index, t);
        for (std::int64_t j = 0; j < plan.slice; ++j) {
          out[offset + j] = reduce_scatter(reduction, out[offset + j], updates[t * plan.slice + j]);
        }
      }
    });
  });
  return Status::ok();
}

// ---- CumSum ----

Status infer_cumsum(InferContext& ctx) {
  FOVEA_TRY(CumSumTypes::require(ctx, 0));
  FOVEA_TRY(IndexTypes::require(ctx, 1));
  const Dims* dims = ctx.input_dims(0);
  if (const Tensor* axis = ctx.input_value(1); axis != nullptr && dims != nullptr) {
    FOVEA_TRY(cumsum_params(ctx, *axis, static_cast<int>(dims->size())).status());
  }
  return infer_same_as_input(ctx);
}

Status run_cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const CumSumParams params, cumsum_params(ctx.inference(), ctx.input(1), x.rank()));
  const AxisLines lines = axis_lines(x.shape(), params.axis);
  CumSumTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    for (std::int64_t line = 0; line < lines.lines(); ++line) {
      const std::int64_t start = line_start(lines, line);
      T sum{0};
      for (std::int64_t s = 0; s < lines.n; ++s) {
        const std::int64_t at = start + (params.reverse ? lines.n - 1 - s : s) * lines.inner;
        if (params.exclusive) out[at] = sum;
        sum = static_cast<T>(sum + in[at]);
        if (!params.exclusive) out[at] = sum;
      }
    }
  });
  return Status::ok();
}

// ---- DepthToSpace, SpaceToDepth ----

Status infer_space_depth(InferContext& ctx) {
  FOVEA_TRY(ctx.require_rank(0, 4, 4));
  if (ctx.input_dims(0) == nullptr) {  // rank unknown: the output is 4-D all the same
    ctx.set_output(0, ctx.input_dtype(0), Dims(4, Dim::unknown()));
    return Status::ok();
  }
  const Dims& in = *ctx.input_dims(0);
  if (!all_known(in)) {
    ctx.set_output(0, ctx.input_dtype(0), Dims{in[0], Dim::unknown(), Dim::unknown(), Dim::unknown()});
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const SpaceDepthPlan plan, space_depth_plan(ctx, in));
  ctx.set_output(0, ctx.input_dtype(0), Shape(plan.out_dims, plan.out_dims + 4));
  return Status::ok();
}

Status run_space_depth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const SpaceDepthPlan plan, space_depth_plan(ctx.inference(), dims_of(x.shape())));
  Tensor& out = ctx.output(0);
  dispatch_by_size(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = in[space_depth_source(plan, i)];
  });
  return Status::ok();
}

// ---- Trilu ----

Status infer_trilu(InferContext& ctx) {
  FOVEA_TRY(ctx.require_rank(0, 2, kMaxTensorRank));
  if (ctx.has_input(1)) {
    FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
    const Dims* k = ctx.input_dims(1);
    if (k != nullptr && all_known(*k) && element_count(shape_of(*k)) != 1) {
      return ctx.error(StatusCode::kInvalidArgument, "k must be a scalar, got shape ", dims_string(*k));
    }
  }
  if (const std::optional<Shape> shape = known_shape(ctx, 0)) {
    FOVEA_TRY(trilu_plan(ctx, *shape, ctx.has_input(1) ? ctx.input_value(1) : nullptr).status());
  }
  return infer_same_as_input(ctx);
}

Status run_trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const TriluPlan plan,
                         trilu_plan(ctx.inference(), x.shape(), ctx.has_input(1) ? &ctx.input(1) : nullptr));
  dispatch_by_size(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    for (std::int64_t i = 0; i < x.numel(); ++i) out[i] = trilu_keeps(plan, i) ? in[i] : T{0};
  });
  return Status::ok();
}

// ---- OneHot ----

Status infer_one_hot(InferContext& ctx) {
  FOVEA_TRY(NumericTypes::require(ctx, 0));
  FOVEA_TRY(NumericTypes::require(ctx, 1));
  const Dims* values = ctx.input_dims(2);
  if (values != nullptr && all_known(*values) && element_count(shape_of(*values)) != 2) {
    return ctx.error(StatusCode::kInvalidArgument, "values must hold [off, on], got shape ",
                     dims_string(*values));
  }
  const Dims* indices = ctx.input_dims(0);
  if (indices == nullptr) {
    ctx.set_output(0, ctx.input_dtype(2), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis", -1));
  const int rank = static_cast<int>(indices->size()) + 1;
  FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, rank));
  Dim depth = Dim::unknown();
  if (const Tensor* depth_value = ctx.input_value(1)) {
    if (depth_value->numel() != 1) {
      return ctx.error(StatusCode::kInvalidArgument, "depth must be a scalar, got shape ",
                       shape_string(depth_value->shape()));
    }
    const auto size = static_cast<std::int64_t>(number_at(*depth_value, 0));
    if (size < 1) return ctx.error(StatusCode::kInvalidArgument, fmt::format("depth {} is below 1", size));
    depth = Dim::known_size(size);
  }
  Dims out = *indices;
  out.insert(out.begin() + axis, depth);
  ctx.set_output(0, ctx.input_dtype(2), std::move(out));
  return Status::ok();
}

Status run_one_hot(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& out = ctx.output(0);
  const OneHotPlan plan = one_hot_plan(ctx.inference(), out.shape());
  dispatch_by_size(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T off = values.data<T>()[0];
    const T on = values.data<T>()[1];
    T* o = out.data<T>();
    NumericTypes::dispatch(indices.dtype(), [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      const I* index = indices.data<I>();
      for (std::int64_t i = 0; i < out.numel(); ++i) {
        const std::int64_t cls =
            normalized_index(convert_value<std::int64_t>(index[one_hot_index_element(plan, i)]), plan.depth);
        o[i] = cls == one_hot_class(plan, i) ? on : off;
      }
    });
  });
  return Status::ok();
}

// ---- EyeLike ----

Status infer_eye_like(InferContext& ctx) {
  FOVEA_TRY(ctx.require_rank(0, 2, 2));
  FOVEA_ASSIGN_OR_RETURN(const EyeLikeParams params, eye_like_params(ctx));
  ctx.set_output(0, params.dtype, ctx.input_type(0).dims);
  return Status::ok();
}

Status run_eye_like(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const EyeLikeParams params, eye_like_params(ctx.inference()));
  Tensor& out = ctx.output(0);
  const std::array<std::byte, 8> one_bytes = element_bytes(out.dtype(), 1.0);
  const std::int64_t cols = out.dim(1);
  dispatch_by_size(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T one;
    std::memcpy(&one, one_bytes.data(), sizeof(T));
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = i % cols - i / cols == params.k ? one : T{0};
  });
  return Status::ok();
}

// ---- Hardmax ----

Status infer_hardmax(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  if (const std::optional<Shape> shape = known_shape(ctx, 0)) FOVEA_TRY(hardmax_lines(ctx, *shape).status());
  return infer_same_as_input(ctx);
}

Status run_hardmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const AxisLines lines, hardmax_lines(ctx.inference(), x.shape()));
  FloatTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    for (std::int64_t line = 0; line < lines.lines(); ++line) {
      const std::int64_t start = line_start(lines, line);
      std::int64_t best = 0;  // the first maximum
      for (std::int64_t s = 1; s < lines.n; ++s) {
        if (in[start + s * lines.inner] > in[start + best * lines.inner]) best = s;
      }
      for (std::int64_t s = 0; s < lines.n; ++s) out[start + s * lines.inner] = s == best ? T{1} : T{0};
    }
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "GatherElements",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_gather_elements,
                   .run = run_gather_elements,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "ScatterElements",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_scatter_elements,
                   .run = run_scatter_elements,
                   .flops = no_flops});
// Scatter (opsets 9-10) is ScatterElements under its old name, without reductions.
FOVEA_REGISTER_OP({.op_type = "Scatter",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_scatter_elements,
                   .run = run_scatter_elements,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "GatherND",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_gather_nd,
                   .run = run_gather_nd,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "ScatterND",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_scatter_nd,
                   .run = run_scatter_nd,
                   .flops = no_flops});
FOVEA_REGISTER_OP(
    {.op_type = "CumSum", .min_inputs = 2, .max_inputs = 2, .infer = infer_cumsum, .run = run_cumsum});
FOVEA_REGISTER_OP(
    {.op_type = "DepthToSpace", .infer = infer_space_depth, .run = run_space_depth, .flops = no_flops});
FOVEA_REGISTER_OP(
    {.op_type = "SpaceToDepth", .infer = infer_space_depth, .run = run_space_depth, .flops = no_flops});
FOVEA_REGISTER_OP(
    {.op_type = "Trilu", .max_inputs = 2, .infer = infer_trilu, .run = run_trilu, .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "OneHot",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_one_hot,
                   .run = run_one_hot,
                   .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "EyeLike", .infer = infer_eye_like, .run = run_eye_like, .flops = no_flops});
FOVEA_REGISTER_OP({.op_type = "Hardmax", .infer = infer_hardmax, .run = run_hardmax});

}  // namespace fovea::runtime::ops
