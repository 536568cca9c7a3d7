// The indexing ops on CUDA, with the CPU reference's plans and per-element offsets
// (ops/indexing_util.h):
//
//   op                                  kernel
//   GatherElements GatherND             one thread per output element reading the data it indexes
//   DepthToSpace SpaceToDepth Trilu     one thread per output element; elements move by size
//   OneHot EyeLike
//   ScatterElements Scatter             data copied, then one thread per line along the axis,
//                                       applying that line's updates in order (lines never share
//                                       an output element, so repeated indices resolve as on the CPU)
//   ScatterND                           data copied; reduction none: one thread per update element;
//                                       a reduction: one thread per slice element, over the tuples
//                                       in order
//   CumSum Hardmax                      one thread per line along the axis
//
// An index outside its dim reads 0 or writes nothing (the CPU rejects it in infer()). CumSum's
// axis and Trilu's k must be plan-time constants: a captured run cannot read them on the host.
#include <array>
#include <cstring>

#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/indexing_util.h"
#include "runtime/ops/movement_util.h"

namespace fovea::runtime::cuda {
namespace {

using ops::AxisLines;
using ops::ElementsPlan;
using ops::NdPlan;
using ops::ScatterReduction;

#define FOVEA_CUDA_INDEX_TYPES ::fovea::DataType::kInt64, ::fovea::DataType::kInt32
#define FOVEA_CUDA_SCATTER_TYPES FOVEA_CUDA_NUMERIC_TYPES, ::fovea::DataType::kBool
#define FOVEA_CUDA_CUMSUM_TYPES FOVEA_CUDA_FLOAT_TYPES, ::fovea::DataType::kInt64, ::fovea::DataType::kInt32

// Calls f(DeviceTypeTag<I>{}) for the indices' dtype (int64 or int32; infer() checked it).
template <typename F>
void dispatch_indices(const Tensor& indices, F&& f) {
  dispatch_device<FOVEA_CUDA_INDEX_TYPES>(indices.dtype(), std::forward<F>(f));
}

// Elements of `t` as unsigned integers of their size, for the kernels that only move them.
template <typename F>
void dispatch_elements(const Tensor& t, F&& f) {
  FOVEA_CHECK(dispatch_by_bytes(data_type_size(t.dtype()), std::forward<F>(f)));
}

Status copy_data_to_output(CudaKernelContext& ctx) {
  FOVEA_CUDA_TRY(cudaMemcpyAsync(ctx.output(0).raw(), ctx.input(0).raw(), ctx.input(0).bytes(),
                                 cudaMemcpyDeviceToDevice, ctx.stream()));
  return Status::ok();
}

// ---- GatherElements, ScatterElements ----

template <typename T, typename I>
__global__ void gather_elements(const T* __restrict__ data, const I* __restrict__ indices,
                                T* __restrict__ out, ElementsPlan plan, std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(i, n) {
    const std::int64_t index = ops::normalized_index(static_cast<std::int64_t>(indices[i]), plan.axis_dim);
    out[i] = index < 0 ? T{} : data[ops::elements_offset(plan, i, index)];
  }
}

Status run_gather_elements(CudaKernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (indices.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ElementsPlan plan,
                         ops::elements_plan(ctx.inference(), data.shape(), indices.shape()));
  dispatch_elements(data, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_indices(indices, [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      gather_elements<<<grid_for(indices.numel()), kBlockSize, 0, ctx.stream()>>>(
          static_cast<const T*>(data.raw()), indices.data<I>(), static_cast<T*>(ctx.output(0).raw()), plan,
          indices.numel());
    });
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// One thread per line of indices along the axis: its updates in order.
template <typename T, typename I>
__global__ void scatter_elements(T* __restrict__ out, const I* __restrict__ indices,
                                 const T* __restrict__ updates, ElementsPlan plan, ScatterReduction reduction,
                                 std::int64_t lines, std::int64_t inner) {
  const std::int64_t length = plan.indices_dims[plan.axis];
  FOVEA_GRID_STRIDE_LOOP(line, lines) {
    const std::int64_t first = (line / inner) * length * inner + line % inner;
    for (std::int64_t s = 0; s < length; ++s) {
      const std::int64_t i = first + s * inner;
      const std::int64_t index = ops::normalized_index(static_cast<std::int64_t>(indices[i]), plan.axis_dim);
      if (index < 0) continue;
      const std::int64_t offset = ops::elements_offset(plan, i, index);
      store_compute(out, offset,
                    ops::reduce_scatter(reduction, load_compute(out, offset), load_compute(updates, i)));
    }
  }
}

Status run_scatter_elements(CudaKernelContext& ctx) {
  const Tensor& indices = ctx.input(1);
  FOVEA_TRY(copy_data_to_output(ctx));
  if (indices.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ElementsPlan plan,
                         ops::elements_plan(ctx.inference(), ctx.input(0).shape(), indices.shape()));
  FOVEA_ASSIGN_OR_RETURN(const ScatterReduction reduction, ops::scatter_reduction(ctx.node()));
  std::int64_t inner = 1;
  for (int d = plan.axis + 1; d < plan.rank; ++d) inner *= plan.indices_dims[d];
  const std::int64_t lines = indices.numel() / plan.indices_dims[plan.axis];
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_SCATTER_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_indices(indices, [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      scatter_elements<<<grid_for(lines), kBlockSize, 0, ctx.stream()>>>(
          ctx.output(0).data<T>(), indices.data<I>(), ctx.input(2).data<T>(), plan, reduction, lines, inner);
    });
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- GatherND, ScatterND ----

template <typename T, typename I>
__global__ void gather_nd(const T* __restrict__ data, const I* __restrict__ indices, T* __restrict__ out,
                          NdPlan plan, std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    const std::int64_t offset = ops::nd_slice_offset(plan, indices, o / plan.slice);
    out[o] = offset < 0 ? T{} : data[offset + o % plan.slice];
  }
}

Result<NdPlan> node_nd_plan(CudaKernelContext& ctx, std::int64_t batch_dims) {
  return ops::nd_plan(ctx.inference(), ctx.input(0).shape(), ctx.input(1).shape(), batch_dims);
}

Status run_gather_nd(CudaKernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t batch_dims, ctx.node().attr_int("batch_dims", 0));
  FOVEA_ASSIGN_OR_RETURN(const NdPlan plan, node_nd_plan(ctx, batch_dims));
  dispatch_elements(data, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_indices(indices, [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      gather_nd<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(
          static_cast<const T*>(data.raw()), indices.data<I>(), static_cast<T*>(out.raw()), plan,
          out.numel());
    });
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// Reduction none: unit u is update element u (tuples may not repeat, as ONNX requires). A
// reduction: unit u is slice element u, folding every tuple's update into it in order.
template <typename T, typename I>
__global__ void scatter_nd(T* __restrict__ out, const I* __restrict__ indices, const T* __restrict__ updates,
                           NdPlan plan, ScatterReduction reduction, std::int64_t units) {
  const bool per_update = reduction == ScatterReduction::kNone;
  FOVEA_GRID_STRIDE_LOOP(u, units) {
    const std::int64_t j = per_update ? u % plan.slice : u;
    const std::int64_t first = per_update ? u / plan.slice : 0;
    const std::int64_t last = per_update ? first + 1 : plan.tuples;
    for (std::int64_t t = first; t < last; ++t) {
      const std::int64_t offset = ops::nd_slice_offset(plan, indices, t);
      if (offset < 0) continue;
      const std::int64_t at = offset + j;
      const std::int64_t update = t * plan.slice + j;
      store_compute(out, at,
                    ops::reduce_scatter(reduction, load_compute(out, at), load_compute(updates, update)));
    }
  }
}

Status run_scatter_nd(CudaKernelContext& ctx) {
  const Tensor& indices = ctx.input(1);
  FOVEA_TRY(copy_data_to_output(ctx));
  FOVEA_ASSIGN_OR_RETURN(const NdPlan plan, node_nd_plan(ctx, 0));
  FOVEA_ASSIGN_OR_RETURN(const ScatterReduction reduction, ops::scatter_reduction(ctx.node()));
  const std::int64_t units = reduction == ScatterReduction::kNone ? plan.tuples * plan.slice : plan.slice;
  if (units == 0 || plan.tuples == 0) return Status::ok();
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_SCATTER_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_indices(indices, [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      scatter_nd<<<grid_for(units), kBlockSize, 0, ctx.stream()>>>(
          ctx.output(0).data<T>(), indices.data<I>(), ctx.input(2).data<T>(), plan, reduction, units);
    });
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- CumSum ----

template <typename T>
__global__ void cumsum(const T* __restrict__ in, T* __restrict__ out, AxisLines lines,
                       ops::CumSumParams params) {
  FOVEA_GRID_STRIDE_LOOP(line, lines.lines()) {
    const std::int64_t start = ops::line_start(lines, line);
    ComputeType<T> sum{0};
    for (std::int64_t s = 0; s < lines.n; ++s) {
      const std::int64_t at = start + (params.reverse ? lines.n - 1 - s : s) * lines.inner;
      if (params.exclusive) store_compute(out, at, sum);
      sum = static_cast<ComputeType<T>>(sum + load_compute(in, at));
      if (!params.exclusive) store_compute(out, at, sum);
    }
  }
}

Result<CudaPrepared> prepare_cumsum(CudaKernelContext& ctx) {
  if (ctx.host_constant(1) == nullptr) {
    return ctx.error(StatusCode::kUnsupported, "needs a constant 'axis' input on CUDA");
  }
  return CudaPrepared{};
}

Status run_cumsum(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const ops::CumSumParams params,
                         ops::cumsum_params(ctx.inference(), *ctx.host_constant(1), x.rank()));
  const AxisLines lines = ops::axis_lines(x.shape(), params.axis);
  if (x.numel() == 0) return Status::ok();
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_CUMSUM_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumsum<<<grid_for(lines.lines()), kBlockSize, 0, ctx.stream()>>>(x.data<T>(), ctx.output(0).data<T>(),
                                                                     lines, params);
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- DepthToSpace, SpaceToDepth ----

template <typename T>
__global__ void space_depth(const T* __restrict__ in, T* __restrict__ out, ops::SpaceDepthPlan plan,
                            std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    out[o] = in[ops::space_depth_source(plan, o)];
  }
}

Status run_space_depth(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ops::SpaceDepthPlan plan,
                         ops::space_depth_plan(ctx.inference(), dims_of(x.shape())));
  dispatch_elements(x, [&](auto tag) {
    using T = typename decltype(tag)::type;
    space_depth<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(
        static_cast<const T*>(x.raw()), static_cast<T*>(out.raw()), plan, out.numel());
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- Trilu ----

template <typename T>
__global__ void trilu(const T* __restrict__ in, T* __restrict__ out, ops::TriluPlan plan, std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    out[o] = ops::trilu_keeps(plan, o) ? in[o] : T{};
  }
}

Result<CudaPrepared> prepare_trilu(CudaKernelContext& ctx) {
  if (ctx.has_input(1) && ctx.host_constant(1) == nullptr) {
    return ctx.error(StatusCode::kUnsupported, "needs a constant 'k' input on CUDA");
  }
  return CudaPrepared{};
}

Status run_trilu(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(
      const ops::TriluPlan plan,
      ops::trilu_plan(ctx.inference(), x.shape(), ctx.has_input(1) ? ctx.host_constant(1) : nullptr));
  dispatch_elements(x, [&](auto tag) {
    using T = typename decltype(tag)::type;
    trilu<<<grid_for(x.numel()), kBlockSize, 0, ctx.stream()>>>(
        static_cast<const T*>(x.raw()), static_cast<T*>(ctx.output(0).raw()), plan, x.numel());
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- OneHot ----

// An index element as int64: floating ones truncate toward zero and saturate, as Cast does.
template <typename C>
__device__ __forceinline__ std::int64_t index_value(C value) {
  if constexpr (std::is_floating_point_v<C>) {
    return saturate_cast<std::int64_t>(value);
  } else {
    return static_cast<std::int64_t>(value);
  }
}

// values holds [off, on] on the device.
template <typename T, typename I>
__global__ void one_hot(const I* __restrict__ indices, const T* __restrict__ values, T* __restrict__ out,
                        ops::OneHotPlan plan, std::int64_t n) {
  const T off = values[0];
  const T on = values[1];
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    const auto index = index_value(load_compute(indices, ops::one_hot_index_element(plan, o)));
    out[o] = ops::normalized_index(index, plan.depth) == ops::one_hot_class(plan, o) ? on : off;
  }
}

Status run_one_hot(CudaKernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  const ops::OneHotPlan plan = ops::one_hot_plan(ctx.inference(), out.shape());
  return dispatch_elementwise<FOVEA_CUDA_NUMERIC_TYPES>(ctx, indices.dtype(), [&](auto index_tag) -> Status {
    using I = typename decltype(index_tag)::type;
    dispatch_elements(out, [&](auto tag) {
      using T = typename decltype(tag)::type;
      one_hot<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(
          indices.data<I>(), static_cast<const T*>(ctx.input(2).raw()), static_cast<T*>(out.raw()), plan,
          out.numel());
    });
    FOVEA_CUDA_TRY_LAUNCH();
    return Status::ok();
  });
}

// ---- EyeLike ----

template <typename T>
__global__ void eye_like(T* __restrict__ out, T one, std::int64_t cols, std::int64_t k, std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    out[o] = o % cols - o / cols == k ? one : T{};
  }
}

Status run_eye_like(CudaKernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ops::EyeLikeParams params, ops::eye_like_params(ctx.inference()));
  const std::array<std::byte, 8> one_bytes = ops::element_bytes(out.dtype(), 1.0);
  dispatch_elements(out, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T one;
    std::memcpy(&one, one_bytes.data(), sizeof(T));
    eye_like<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(static_cast<T*>(out.raw()), one,
                                                                     out.dim(1), params.k, out.numel());
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- Hardmax ----

template <typename T>
__global__ void hardmax(const T* __restrict__ in, T* __restrict__ out, AxisLines lines) {
  FOVEA_GRID_STRIDE_LOOP(line, lines.lines()) {
    const std::int64_t start = ops::line_start(lines, line);
    std::int64_t best = 0;  // the first maximum
    ComputeType<T> best_value = load_compute(in, start);
    for (std::int64_t s = 1; s < lines.n; ++s) {
      const ComputeType<T> value = load_compute(in, start + s * lines.inner);
      if (value > best_value) {
        best = s;
        best_value = value;
      }
    }
    for (std::int64_t s = 0; s < lines.n; ++s) {
      store_compute(out, start + s * lines.inner, ComputeType<T>{s == best ? 1.0f : 0.0f});
    }
  }
}

Status run_hardmax(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const AxisLines lines, ops::hardmax_lines(ctx.inference(), x.shape()));
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    hardmax<<<grid_for(lines.lines()), kBlockSize, 0, ctx.stream()>>>(x.data<T>(), ctx.output(0).data<T>(),
                                                                      lines);
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "GatherElements", .run = run_gather_elements});
FOVEA_REGISTER_CUDA_OP({.op_type = "ScatterElements", .run = run_scatter_elements});
FOVEA_REGISTER_CUDA_OP({.op_type = "Scatter", .run = run_scatter_elements});
FOVEA_REGISTER_CUDA_OP({.op_type = "GatherND", .run = run_gather_nd});
FOVEA_REGISTER_CUDA_OP({.op_type = "ScatterND", .run = run_scatter_nd});
FOVEA_REGISTER_CUDA_OP({.op_type = "CumSum", .prepare = prepare_cumsum, .run = run_cumsum});
FOVEA_REGISTER_CUDA_OP({.op_type = "DepthToSpace", .run = run_space_depth});
FOVEA_REGISTER_CUDA_OP({.op_type = "SpaceToDepth", .run = run_space_depth});
FOVEA_REGISTER_CUDA_OP({.op_type = "Trilu", .prepare = prepare_trilu, .run = run_trilu});
FOVEA_REGISTER_CUDA_OP({.op_type = "OneHot", .run = run_one_hot});
FOVEA_REGISTER_CUDA_OP({.op_type = "EyeLike", .run = run_eye_like});
FOVEA_REGISTER_CUDA_OP({.op_type = "Hardmax", .run = run_hardmax});

}  // namespace fovea::runtime::cuda
