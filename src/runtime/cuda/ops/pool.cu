// MaxPool (with the optional Indices output), AveragePool, GlobalMaxPool and GlobalAveragePool on
// CUDA over NCHW-style inputs [N, C, spatial...], with the CPU op's geometry (pool_util.h).
//
//   op                 kernel
//   MaxPool            a thread per output element, blockDim = (positions of a plane, planes);
//   AveragePool        2-D windows in nested loops (the fast path), other ranks by an odometer over
//                      the taps. Taps, ties (first maximum in row-major tap order), the padded-tap
//                      count of count_include_pad and the Indices follow the CPU reference exactly.
//   Global*Pool        the reduction kernels (reduce.h): a Mean or a Max over each plane
//   fovea.MaxPool      NHWC [N, H, W, C] (channels_last=1): a thread per group of consecutive
//                      channels of one output pixel, so warps read and write whole channel runs;
//                      a group is one 16-byte vector when C and both pointers allow, else one
//                      channel. Taps and ties as MaxPool's.
//
//   dtypes: MaxPool and fovea.MaxPool float32/16/64, int8, uint8; the others float32/16/64
#include <cuda/std/limits>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/ops/reduce.h"
#include "runtime/ops/pool_util.h"

namespace fovea::runtime::cuda {

namespace {

using ops::PoolKind;

constexpr int kMaxSpatial = kMaxRank - 2;

// The plan in fixed arrays, passed to the kernel by value.
struct PoolParams {
  int rank = 0;
  std::int64_t in[kMaxSpatial] = {};
  std::int64_t out[kMaxSpatial] = {};
  std::int64_t kernel[kMaxSpatial] = {};
  std::int64_t stride[kMaxSpatial] = {};
  std::int64_t dilation[kMaxSpatial] = {};
  std::int64_t pad_begin[kMaxSpatial] = {};
  std::int64_t pad_end[kMaxSpatial] = {};
  std::int64_t in_stride[kMaxSpatial] = {};
  std::int64_t index_stride[kMaxSpatial] = {};
  std::int64_t in_plane = 1;
  std::int64_t out_plane = 1;
  std::int64_t kernel_size = 1;
  bool count_include_pad = false;
  bool narrow = true;  // out_plane < 2^32: positions decode with 32-bit divisions
};

// One window's taps as the CPU reference folds them.
template <typename T, PoolKind kKind>
struct Window {
  using C = ComputeType<T>;
  C best = ::cuda::std::numeric_limits<C>::lowest();
  std::int64_t best_index = 0;
  C sum = C(0);
  std::int64_t valid = 0;
  std::int64_t padded = 0;  // taps inside the padded extent, for count_include_pad

  __device__ void tap(const T* plane, std::int64_t offset, std::int64_t index, bool inside,
                      bool inside_padding) {
    padded += inside_padding ? 1 : 0;
    if (!inside) return;
    const C v = load_compute(plane, offset);
    if constexpr (kKind == PoolKind::kMax) {
      if (v > best) {
        best = v;
        best_index = index;
      }
    } else {
      sum += v;
      ++valid;
    }
  }
};

// The 2-D window of output (oh, ow) in nested loops.
template <typename T, PoolKind kKind>
__device__ void pool_2d(const PoolParams& p, const T* plane, std::int64_t q, Window<T, kKind>& w) {
  const std::int64_t oh =
      p.narrow ? static_cast<std::uint32_t>(q) / static_cast<std::uint32_t>(p.out[1]) : q / p.out[1];
  const std::int64_t ow = q - oh * p.out[1];
  for (std::int64_t kh = 0; kh < p.kernel[0]; ++kh) {
    const std::int64_t ih = oh * p.stride[0] - p.pad_begin[0] + kh * p.dilation[0];
    const bool inside_h = ih >= 0 && ih < p.in[0];
    const bool padded_h = ih >= -p.pad_begin[0] && ih < p.in[0] + p.pad_end[0];
    for (std::int64_t kw = 0; kw < p.kernel[1]; ++kw) {
      const std::int64_t iw = ow * p.stride[1] - p.pad_begin[1] + kw * p.dilation[1];
      const bool inside_w = iw >= 0 && iw < p.in[1];
      const bool padded_w = iw >= -p.pad_begin[1] && iw < p.in[1] + p.pad_end[1];
      w.tap(plane, ih * p.in_stride[0] + iw, ih * p.index_stride[0] + iw * p.index_stride[1],
            inside_h && inside_w, padded_h && padded_w);
    }
  }
}

// Any spatial rank: the output position decoded, the taps walked by a row-major odometer.
template <typename T, PoolKind kKind>
__device__ void pool_nd(const PoolParams& p, const T* plane, std::int64_t q, Window<T, kKind>& w) {
  std::int64_t origin[kMaxSpatial];
  std::int64_t tap[kMaxSpatial];
  for (int d = p.rank - 1; d >= 0; --d) {
    origin[d] = (q % p.out[d]) * p.stride[d] - p.pad_begin[d];
    q /= p.out[d];
    tap[d] = 0;
  }
  for (std::int64_t t = 0; t < p.kernel_size; ++t) {
    bool inside = true;
    bool inside_padding = true;
    std::int64_t offset = 0;
    std::int64_t index = 0;
    for (int d = 0; d < p.rank; ++d) {
      const std::int64_t i = origin[d] + tap[d] * p.dilation[d];
      inside = inside && i >= 0 && i < p.in[d];
      inside_padding = inside_padding && i >= -p.pad_begin[d] && i < p.in[d] + p.pad_end[d];
      offset += i * p.in_stride[d];
      index += i * p.index_stride[d];
    }
    w.tap(plane, offset, index, inside, inside_padding);
    for (int d = p.rank - 1; d >= 0; --d) {
      if (++tap[d] < p.kernel[d]) break;
      tap[d] = 0;
    }
  }
}

template <typename T, PoolKind kKind, bool k2D>
__global__ void __launch_bounds__(kBlockSize)
    pool_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t* __restrict__ indices,
                std::int64_t planes, PoolParams p) {
  for (std::int64_t plane = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; plane < planes;
       plane += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const T* in = x + plane * p.in_plane;
    for (std::int64_t q = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < p.out_plane;
         q += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      Window<T, kKind> w;
      if constexpr (k2D) {
        pool_2d(p, in, q, w);
      } else {
        pool_nd(p, in, q, w);
      }
      const std::int64_t o = plane * p.out_plane + q;
      if constexpr (kKind == PoolKind::kMax) {
        store_compute(y, o, w.best);
        if (indices != nullptr) indices[o] = plane * p.in_plane + w.best_index;
      } else {
        const std::int64_t count = p.count_include_pad ? w.padded : w.valid;
        store_compute(y, o, w.sum / static_cast<ComputeType<T>>(count > 1 ? count : 1));
      }
    }
  }
}

struct PoolState final : CudaNodeState {
  PoolParams params;
  std::int64_t planes = 0;
};

Result<CudaPrepared> prepare_pool(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const ops::PoolPlan plan, ops::plan_pool(ctx.inference(), x.shape()));
  if (plan.dims.size() > static_cast<std::size_t>(kMaxSpatial)) {
    return ctx.error(StatusCode::kUnsupported, "pools at most ", std::to_string(kMaxSpatial),
                     " spatial dims on CUDA, not ", std::to_string(plan.dims.size()));
  }
  auto state = std::make_unique<PoolState>();
  PoolParams& p = state->params;
  p.rank = static_cast<int>(plan.dims.size());
  for (std::size_t d = 0; d < plan.dims.size(); ++d) {
    const ops::WindowDim& w = plan.dims[d];
    p.in[d] = w.in;
    p.out[d] = w.out;
    p.kernel[d] = w.kernel;
    p.stride[d] = w.stride;
    p.dilation[d] = w.dilation;
    p.pad_begin[d] = w.pad_begin;
    p.pad_end[d] = w.pad_end;
    p.in_stride[d] = plan.in_strides[d];
    p.index_stride[d] = plan.index_strides[d];
  }
  p.in_plane = plan.in_plane;
  p.out_plane = plan.out_plane;
  p.kernel_size = plan.kernel_size;
  p.count_include_pad = plan.options.count_include_pad;
  p.narrow = plan.out_plane <= std::int64_t{0xffffffff};
  state->planes = x.dim(0) * x.dim(1);
  return CudaPrepared{std::move(state)};
}

template <typename T, PoolKind kKind>
void launch_pool(const PoolState& state, const T* x, T* y, std::int64_t* indices, cudaStream_t stream) {
  const PoolParams& p = state.params;
  // Small planes share a block (SSD's 3x3 and 1x1 maps), large ones get many.
  std::int64_t width = 1;
  while (width < p.out_plane && width < kBlockSize) width *= 2;
  const auto height = static_cast<unsigned>(kBlockSize / width);
  constexpr std::int64_t kMaxGridY = 65535;
  const dim3 block(static_cast<unsigned>(width), height);
  const dim3 grid(
      static_cast<unsigned>((p.out_plane + width - 1) / width),
      static_cast<unsigned>(std::min<std::int64_t>((state.planes + height - 1) / height, kMaxGridY)));
  if (p.rank == 2) {
    pool_kernel<T, kKind, true><<<grid, block, 0, stream>>>(x, y, indices, state.planes, p);
  } else {
    pool_kernel<T, kKind, false><<<grid, block, 0, stream>>>(x, y, indices, state.planes, p);
  }
}

template <PoolKind kKind>
Status run_pool(CudaKernelContext& ctx) {
  const PoolState& state = ctx.state<PoolState>();
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return Status::ok();
  const Tensor& x = ctx.input(0);
  auto* indices = ctx.output_count() > 1 ? static_cast<std::int64_t*>(ctx.output(1).raw()) : nullptr;
  const auto launch = [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_pool<T, kKind>(state, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), indices,
                          ctx.stream());
  };
  bool known = false;
  if constexpr (kKind == PoolKind::kMax) {
    known = dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt8,
                            DataType::kUInt8>(x.dtype(), launch);
  } else {
    known = dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(x.dtype(), launch);
  }
  if (!known)
    return ctx.error(StatusCode::kUnsupported, "does not pool ", data_type_name(x.dtype()), " on CUDA");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// fovea.MaxPool's 2-D window, from the plan of its NCHW view (dim 0 is H, dim 1 is W).
struct NhwcPoolParams {
  std::int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0, channels = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
};

// Output element groups [N, out_h, out_w, C / kVec], channel groups fastest; `total` counts them.
// Each lane keeps the first maximum in row-major tap order, as MaxPool's kernel and the CPU do.
template <typename T, int kVec, typename Index>
__global__ void __launch_bounds__(kBlockSize)
    nhwc_max_pool_kernel(const T* __restrict__ x, T* __restrict__ y, Index total, NhwcPoolParams p) {
  using C = ComputeType<T>;
  const auto groups = static_cast<Index>(p.channels / kVec);
  const auto in_h = static_cast<Index>(p.in_h), in_w = static_cast<Index>(p.in_w);
  const auto out_h = static_cast<Index>(p.out_h), out_w = static_cast<Index>(p.out_w);
  for (Index i =
           static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + static_cast<Index>(threadIdx.x);
       i < total; i += static_cast<Index>(blockDim.x) * static_cast<Index>(gridDim.x)) {
    const Index group = i % groups;
    Index pixel = i / groups;
    const Index ow = pixel % out_w;
    pixel /= out_w;
    const Index oh = pixel % out_h;
    const Index n = pixel / out_h;
    C best[kVec];
    for (int l = 0; l < kVec; ++l) best[l] = ::cuda::std::numeric_limits<C>::lowest();
    for (Index kh = 0; kh < static_cast<Index>(p.kernel_h); ++kh) {
      const Index ih = oh * static_cast<Index>(p.stride_h) - static_cast<Index>(p.pad_top) +
                       kh * static_cast<Index>(p.dilation_h);
      if (ih < 0 || ih >= in_h) continue;
      for (Index kw = 0; kw < static_cast<Index>(p.kernel_w); ++kw) {
        const Index iw = ow * static_cast<Index>(p.stride_w) - static_cast<Index>(p.pad_left) +
                         kw * static_cast<Index>(p.dilation_w);
        if (iw < 0 || iw >= in_w) continue;
        const Index offset = ((n * in_h + ih) * in_w + iw) * groups + group;
        const Vector<T, kVec> loaded = reinterpret_cast<const Vector<T, kVec>*>(x)[offset];
        for (int l = 0; l < kVec; ++l) {
          const C value = load_compute(loaded.v, l);
          if (value > best[l]) best[l] = value;
        }
      }
    }
    Vector<T, kVec> out;
    for (int l = 0; l < kVec; ++l) store_compute(out.v, l, best[l]);
    reinterpret_cast<Vector<T, kVec>*>(y)[i] = out;
  }
}

struct NhwcPoolState final : CudaNodeState {
  NhwcPoolParams params;
  std::int64_t largest = 0;  // elements of the larger of input and output, for the index type
};

Result<CudaPrepared> prepare_nhwc_max_pool(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const ops::PoolPlan plan, ops::plan_nhwc_pool(ctx.inference(), x.shape()));
  const ops::WindowDim& h = plan.dims[0];
  const ops::WindowDim& w = plan.dims[1];
  auto state = std::make_unique<NhwcPoolState>();
  state->params = {.in_h = h.in,
                   .in_w = w.in,
                   .out_h = h.out,
                   .out_w = w.out,
                   .channels = x.dim(3),
                   .kernel_h = h.kernel,
                   .kernel_w = w.kernel,
                   .stride_h = h.stride,
                   .stride_w = w.stride,
                   .dilation_h = h.dilation,
                   .dilation_w = w.dilation,
                   .pad_top = h.pad_begin,
                   .pad_left = w.pad_begin};
  state->largest = std::max(x.numel(), ctx.output(0).numel());
  return CudaPrepared{std::move(state)};
}

template <typename T, int kVec>
void launch_nhwc_max_pool(const NhwcPoolState& state, const T* x, T* y, std::int64_t outputs,
                          cudaStream_t stream) {
  dispatch_index(state.largest, [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const std::int64_t total = outputs / kVec;
    nhwc_max_pool_kernel<T, kVec, Index>
        <<<grid_for(total), kBlockSize, 0, stream>>>(x, y, static_cast<Index>(total), state.params);
  });
}

Status run_nhwc_max_pool(CudaKernelContext& ctx) {
  const NhwcPoolState& state = ctx.state<NhwcPoolState>();
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return Status::ok();
  const Tensor& x = ctx.input(0);
  const bool known = dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64,
                                     DataType::kInt8, DataType::kUInt8>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVector = static_cast<int>(kVectorBytes / sizeof(T));
    const auto* in = static_cast<const T*>(x.raw());
    auto* out = static_cast<T*>(y.raw());
    if (vector_elements(sizeof(T), {state.params.channels}, {in, out}) == kVector) {
      launch_nhwc_max_pool<T, kVector>(state, in, out, y.numel(), ctx.stream());
    } else {
      launch_nhwc_max_pool<T, 1>(state, in, out, y.numel(), ctx.stream());
    }
  });
  if (!known)
    return ctx.error(StatusCode::kUnsupported, "does not pool ", data_type_name(x.dtype()), " on CUDA");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

struct GlobalPoolState final : CudaNodeState {
  ops::ReduceGeometry geometry;
};

Result<CudaPrepared> prepare_global_pool(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<bool> reduced(static_cast<std::size_t>(x.rank()), true);
  reduced[0] = false;
  reduced[1] = false;
  auto state = std::make_unique<GlobalPoolState>();
  state->geometry = ops::reduce_geometry(x.shape(), reduced);
  return CudaPrepared{std::move(state)};
}

template <ops::Reduction R>
Status run_global_pool(CudaKernelContext& ctx) {
  return launch_reduction(R, ctx.state<GlobalPoolState>().geometry, ctx.input(0), ctx.output(0),
                          ctx.stream());
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "MaxPool", .prepare = prepare_pool, .run = run_pool<PoolKind::kMax>});
FOVEA_REGISTER_CUDA_OP(
    {.domain = "fovea", .op_type = "MaxPool", .prepare = prepare_nhwc_max_pool, .run = run_nhwc_max_pool});
FOVEA_REGISTER_CUDA_OP({.op_type = "AveragePool",
                        .prepare = prepare_pool,
                        .run = run_pool<PoolKind::kAverage>});
FOVEA_REGISTER_CUDA_OP({.op_type = "GlobalMaxPool",
                        .prepare = prepare_global_pool,
                        .run = run_global_pool<ops::Reduction::kMax>});
FOVEA_REGISTER_CUDA_OP({.op_type = "GlobalAveragePool",
                        .prepare = prepare_global_pool,
                        .run = run_global_pool<ops::Reduction::kMean>});

}  // namespace fovea::runtime::cuda
