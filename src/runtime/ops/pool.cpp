// MaxPool (with the optional Indices output), AveragePool, GlobalMaxPool and GlobalAveragePool over
// N-D inputs [N, C, spatial...]; windows follow the same geometry as Conv (conv_util.h).
//
// fovea.MaxPool is MaxPool over x [N, H, W, C] with channels_last=1 (its only form) and output 0
// only (ONNX's Indices number NCHW planes). The channels-last pass makes it from a MaxPool whose input
// a channels-last convolution produced, so that a convolution chain stays NHWC through its pools.
// The CPU reference pools the NCHW view between transposes.
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"
#include "runtime/ops/pool_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// Output elements per parallel chunk: a few thousand windows amortize a task.
constexpr std::int64_t kPoolChunk = 1 << 12;

Status require_pool_dtype(const InferContext& ctx, PoolKind kind) {
  if (kind == PoolKind::kMax) {
    return ctx.require_dtype(0, {FOVEA_FLOAT_TYPES, DataType::kInt8, DataType::kUInt8});
  }
  return ctx.require_dtype(0, {FOVEA_FLOAT_TYPES});
}

// The output dims [N, C, spatial...] of pooling input dims `x` [N, C, spatial...].
Result<Dims> pooled_dims(const InferContext& ctx, const Dims& x) {
  FOVEA_ASSIGN_OR_RETURN(WindowAttributes window,
                         read_window_attributes(ctx, static_cast<int>(x.size()) - 2, std::nullopt));
  FOVEA_ASSIGN_OR_RETURN(Dims spatial, window_output_spatial_dims(ctx, window, x));
  Dims out{x[0], x[1]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return out;
}

Status infer_pool(InferContext& ctx, PoolKind kind) {
  FOVEA_TRY(require_pool_dtype(ctx, kind));
  FOVEA_TRY(ctx.require_rank(0, 3, kMaxTensorRank));
  FOVEA_TRY(read_pool_options(ctx).status());
  std::optional<Dims> out;
  if (const Dims* x = ctx.input_dims(0); x != nullptr) {
    FOVEA_ASSIGN_OR_RETURN(out, pooled_dims(ctx, *x));
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  if (ctx.output_count() > 1) ctx.set_output(1, DataType::kInt64, out);  // MaxPool's Indices
  return Status::ok();
}

// Advances a row-major odometer over the kernel taps or the output positions.
void advance(std::vector<std::int64_t>& index, const std::vector<WindowDim>& dims, bool over_kernel) {
  for (std::size_t d = index.size(); d-- > 0;) {
    if (++index[d] < (over_kernel ? dims[d].kernel : dims[d].out)) return;
    index[d] = 0;
  }
}

// One output's window as its taps are visited in row-major order: the sum, the first maximum
// and its index, and the counts for AveragePool's two divisors.
template <typename T>
struct PoolWindow {
  double sum = 0;
  T best = std::numeric_limits<T>::lowest();
  std::int64_t best_index = 0;
  std::int64_t valid = 0;
  std::int64_t padded = 0;  // taps inside the padded extent, for count_include_pad

  void take(T v, std::int64_t index) {
    ++valid;
    sum += static_cast<double>(v);
    if (v > best) {
      best = v;
      best_index = index;
    }
  }

  void write(PoolKind kind, const PoolPlan& plan, T* y, std::int64_t* indices, std::int64_t out,
             std::int64_t plane) const {
    if (kind == PoolKind::kMax) {
      y[out] = best;
      if (indices != nullptr) indices[out] = plane * plan.in_plane + best_index;
    } else {
      const std::int64_t count = plan.options.count_include_pad ? padded : valid;
      y[out] = static_cast<T>(sum / static_cast<double>(std::max<std::int64_t>(count, 1)));
    }
  }
};

// Pools output elements [begin, end) of the flattened [N*C, out_plane] output, any spatial rank.
template <typename T>
void pool_range(PoolKind kind, const PoolPlan& plan, const T* x, T* y, std::int64_t* indices,
                std::int64_t begin, std::int64_t end) {
  const std::size_t rank = plan.dims.size();
  std::vector<std::int64_t> position(rank);
  for (std::int64_t rest = begin % plan.out_plane, d = static_cast<std::int64_t>(rank); d-- > 0;) {
    position[static_cast<std::size_t>(d)] = rest % plan.dims[static_cast<std::size_t>(d)].out;
    rest /= plan.dims[static_cast<std::size_t>(d)].out;
  }
  std::vector<std::int64_t> tap(rank);
  for (std::int64_t out = begin; out < end; ++out, advance(position, plan.dims, false)) {
    const std::int64_t plane = out / plan.out_plane;
    const T* x_plane = x + plane * plan.in_plane;
    PoolWindow<T> window;
    std::fill(tap.begin(), tap.end(), 0);
    for (std::int64_t t = 0; t < plan.kernel_size; ++t, advance(tap, plan.dims, true)) {
      bool inside = true;
      bool inside_padding = true;
      std::int64_t offset = 0;
      std::int64_t index = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        const WindowDim& dim = plan.dims[d];
        const std::int64_t i = position[d] * dim.stride - dim.pad_begin + tap[d] * dim.dilation;
        inside = inside && i >= 0 && i < dim.in;
        inside_padding = inside_padding && i >= -dim.pad_begin && i < dim.in + dim.pad_end;
        offset += i * plan.in_strides[d];
        index += i * plan.index_strides[d];
      }
      window.padded += inside_padding ? 1 : 0;
      if (inside) window.take(x_plane[offset], index);
    }
    window.write(kind, plan, y, indices, out, plane);
  }
}

// The 2-D case (every CNN's pooling) without the odometers over positions and taps: the same taps
// in the same order, about ten times faster (RetinaNet's stem MaxPool took 172 ms on two cores).
template <typename T>
void pool_range_2d(PoolKind kind, const PoolPlan& plan, const T* x, T* y, std::int64_t* indices,
                   std::int64_t begin, std::int64_t end) {
  const WindowDim& h = plan.dims[0];
  const WindowDim& w = plan.dims[1];
  for (std::int64_t out = begin; out < end; ++out) {
    const std::int64_t plane = out / plan.out_plane, at = out % plan.out_plane;
    const std::int64_t h0 = (at / w.out) * h.stride - h.pad_begin, w0 = (at % w.out) * w.stride - w.pad_begin;
    const T* x_plane = x + plane * plan.in_plane;
    PoolWindow<T> window;
    for (std::int64_t kh = 0; kh < h.kernel; ++kh) {
      const std::int64_t ih = h0 + kh * h.dilation;
      const bool row_inside = ih >= 0 && ih < h.in;
      const bool row_in_padding = ih >= -h.pad_begin && ih < h.in + h.pad_end;
      for (std::int64_t kw = 0; kw < w.kernel; ++kw) {
        const std::int64_t iw = w0 + kw * w.dilation;
        window.padded += row_in_padding && iw >= -w.pad_begin && iw < w.in + w.pad_end ? 1 : 0;
        if (row_inside && iw >= 0 && iw < w.in) {
          window.take(x_plane[ih * plan.in_strides[0] + iw * plan.in_strides[1]],
                      ih * plan.index_strides[0] + iw * plan.index_strides[1]);
        }
      }
    }
    window.write(kind, plan, y, indices, out, plane);
  }
}

// Pools x into y, both [N, C, spatial...] as `plan` describes them; `indices` is MaxPool's optional
// Indices output.
void pool_tensor(PoolKind kind, const PoolPlan& plan, const Tensor& x, Tensor& y, std::int64_t* indices) {
  dispatch<FOVEA_FLOAT_TYPES, DataType::kInt8, DataType::kUInt8>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(y.numel(), kPoolChunk, [&](std::int64_t begin, std::int64_t end) {
      if (plan.dims.size() == 2) {
        pool_range_2d<T>(kind, plan, x.data<T>(), y.data<T>(), indices, begin, end);
      } else {
        pool_range<T>(kind, plan, x.data<T>(), y.data<T>(), indices, begin, end);
      }
    });
  });
}

Status run_pool(KernelContext& ctx, PoolKind kind) {
  const InferContext concrete = ctx.inference();
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const PoolPlan plan, plan_pool(concrete, x.shape()));
  std::int64_t* indices = ctx.output_count() > 1 ? ctx.output(1).data<std::int64_t>() : nullptr;
  pool_tensor(kind, plan, x, ctx.output(0), indices);
  return Status::ok();
}

Status infer_nhwc_max_pool(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t channels_last, ctx.node().attr_int("channels_last", 0));
  if (channels_last != 1) {
    return ctx.error(StatusCode::kInvalidArgument, fmt::format("channels_last={} is not 1: fovea.MaxPool "
                                                               "pools NHWC only (ONNX's MaxPool is NCHW)",
                                                               channels_last));
  }
  FOVEA_TRY(require_pool_dtype(ctx, PoolKind::kMax));
  FOVEA_TRY(ctx.require_rank(0, 4, 4));
  FOVEA_TRY(read_pool_options(ctx).status());
  std::optional<Dims> out;
  if (const Dims* x = ctx.input_dims(0); x != nullptr) {
    FOVEA_ASSIGN_OR_RETURN(Dims nchw, pooled_dims(ctx, permute_dims(*x, kNhwcToNchw)));
    out = permute_dims(nchw, kNchwToNhwc);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::ok();
}

Status run_nhwc_max_pool(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const PoolPlan plan, plan_nhwc_pool(ctx.inference(), ctx.input(0).shape()));
  const Tensor x = permute_tensor(ctx.input(0), kNhwcToNchw);
  Tensor& y = ctx.output(0);
  Tensor pooled = Tensor::allocate(y.dtype(), permute_tensor_shape(y.shape(), kNhwcToNchw));
  pool_tensor(PoolKind::kMax, plan, x, pooled, nullptr);
  const Tensor nhwc = permute_tensor(pooled, kNchwToNhwc);
  std::memcpy(y.raw(), nhwc.raw(), nhwc.bytes());
  return Status::ok();
}

Status infer_global_pool(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_rank(0, 3, kMaxTensorRank));
  std::optional<Dims> out;
  if (const Dims* x = ctx.input_dims(0); x != nullptr) {
    out = *x;
    std::fill(out->begin() + 2, out->end(), Dim::known_size(1));
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::ok();
}

Status run_global_pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::int64_t plane = x.rank() > 2 ? x.numel() / std::max<std::int64_t>(x.dim(0) * x.dim(1), 1) : 1;
  dispatch<FOVEA_FLOAT_TYPES>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(y.numel(), std::max<std::int64_t>(1, kPoolChunk * 16 / std::max<std::int64_t>(plane, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t p = begin; p < end; ++p) {
                     const T* in = x.data<T>() + p * plane;
                     double sum = 0;
                     T best = std::numeric_limits<T>::lowest();
                     for (std::int64_t i = 0; i < plane; ++i) {
                       sum += static_cast<double>(in[i]);
                       best = std::max(best, in[i]);
                     }
                     y.data<T>()[p] =
                         kind == PoolKind::kMax ? best : static_cast<T>(sum / static_cast<double>(plane));
                   }
                 });
  });
  return Status::ok();
}

double input_elements(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  return static_cast<double>(element_count(inputs[0]));
}

Status infer_max_pool(InferContext& ctx) {
  return infer_pool(ctx, PoolKind::kMax);
}
Status run_max_pool(KernelContext& ctx) {
  return run_pool(ctx, PoolKind::kMax);
}
Status infer_average_pool(InferContext& ctx) {
  return infer_pool(ctx, PoolKind::kAverage);
}
Status run_average_pool(KernelContext& ctx) {
  return run_pool(ctx, PoolKind::kAverage);
}
Status run_global_max_pool(KernelContext& ctx) {
  return run_global_pool(ctx, PoolKind::kMax);
}
Status run_global_average_pool(KernelContext& ctx) {
  return run_global_pool(ctx, PoolKind::kAverage);
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "MaxPool",
                   .max_outputs = 2,
                   .infer = infer_max_pool,
                   .run = run_max_pool,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.domain = "fovea",
                   .op_type = "MaxPool",
                   .infer = infer_nhwc_max_pool,
                   .run = run_nhwc_max_pool,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "AveragePool",
                   .infer = infer_average_pool,
                   .run = run_average_pool,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "GlobalMaxPool",
                   .infer = infer_global_pool,
                   .run = run_global_max_pool,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "GlobalAveragePool",
                   .infer = infer_global_pool,
                   .run = run_global_average_pool,
                   .flops = input_elements});

}  // namespace fovea::runtime::ops
