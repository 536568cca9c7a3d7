// The Reduce family (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare) and
// ArgMax / ArgMin on CUDA: one set of kernels, templated on the accumulator (reduce_ops.cuh).
//
//   layout (reduce_geometry)          kernel
//   one reduced run, inner == 1       rows: a warp or a block per row (block_per_row)
//   one reduced run, inner > 1        columns: threads along inner (coalesced), several along the run
//   several reduced runs              strided: a warp per output, dims walked by index
//
//   dtypes: float32/16/64, int64/32/8, uint8 (L2, LogSum, LogSumExp: float types only, as on the CPU)
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/group_reduce.cuh"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/ops/reduce.h"
#include "runtime/cuda/reduce_ops.cuh"

namespace fovea::runtime::cuda {

namespace {

using ops::ReduceGeometry;
using ops::Reduction;

// One group (a warp or the block) per contiguous row of `length` elements.
template <typename T, typename TO, typename Op, int kGroup>
__global__ void __launch_bounds__(kBlockSize)
    reduce_rows_kernel(const T* __restrict__ x, TO* __restrict__ y, std::int64_t rows, std::int64_t length,
                       Op op) {
  using Reducer = GroupReducer<typename Op::Acc, kGroup, kBlockSize>;
  __shared__ typename Reducer::TempStorage storage;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * Reducer::kGroups;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * Reducer::kGroups + Reducer::group();
       row < rows; row += step) {
    const T* in = x + row * length;
    typename Op::Acc acc = op.init();
    for (std::int64_t j = Reducer::lane(); j < length; j += kGroup)
      acc = op(acc, op.map(load_compute(in, j), j));
    acc = Reducer::reduce(storage, acc, op);
    if (Reducer::lane() == 0) store_compute(y, row, op.finish(acc, length));
  }
}

// [outer, length, inner] with inner > 1: blockDim.x neighbouring columns (coalesced loads along
// inner), blockDim.y threads along each column's run, combined through shared memory.
template <typename T, typename TO, typename Op>
__global__ void __launch_bounds__(kBlockSize)
    reduce_columns_kernel(const T* __restrict__ x, TO* __restrict__ y, std::int64_t outer,
                          std::int64_t length, std::int64_t inner, Op op) {
  using Acc = typename Op::Acc;
  __shared__ Acc partial[kBlockSize];
  const std::int64_t tiles = (inner + blockDim.x - 1) / blockDim.x;
  for (std::int64_t tile = blockIdx.x; tile < outer * tiles; tile += gridDim.x) {
    const std::int64_t o = tile / tiles;
    const std::int64_t i = (tile - o * tiles) * blockDim.x + threadIdx.x;
    Acc acc = op.init();
    if (i < inner) {
      const T* column = x + o * length * inner + i;
      for (std::int64_t j = threadIdx.y; j < length; j += blockDim.y) {
        acc = op(acc, op.map(load_compute(column, j * inner), j));
      }
    }
    partial[threadIdx.y * blockDim.x + threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
      for (unsigned k = 1; k < blockDim.y; ++k) acc = op(acc, partial[k * blockDim.x + threadIdx.x]);
      store_compute(y, o * inner + i, op.finish(acc, length));
    }
    __syncthreads();
  }
}

// Up to kMaxRank dims with their input strides, row-major: the offset of linear index i.
struct DimWalk {
  int rank = 0;
  std::int64_t size[kMaxRank] = {};
  std::int64_t stride[kMaxRank] = {};

  __device__ std::int64_t offset(std::int64_t i) const {
    std::int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % size[d]) * stride[d];
      i /= size[d];
    }
    return off;
  }
};

// Several reduced runs: a warp per output, each lane walking reduced elements by index.
template <typename T, typename TO, typename Op>
__global__ void __launch_bounds__(kBlockSize)
    reduce_strided_kernel(const T* __restrict__ x, TO* __restrict__ y, std::int64_t outputs, DimWalk kept,
                          DimWalk reduced, std::int64_t length, Op op) {
  using Reducer = GroupReducer<typename Op::Acc, kWarpSize, kBlockSize>;
  __shared__ typename Reducer::TempStorage storage;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * Reducer::kGroups;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * Reducer::kGroups + Reducer::group();
       o < outputs; o += step) {
    const std::int64_t base = kept.offset(o);
    typename Op::Acc acc = op.init();
    for (std::int64_t j = Reducer::lane(); j < length; j += kWarpSize) {
      acc = op(acc, op.map(load_compute(x, base + reduced.offset(j)), j));
    }
    acc = Reducer::reduce(storage, acc, op);
    if (Reducer::lane() == 0) store_compute(y, o, op.finish(acc, length));
  }
}

std::int64_t next_power_of_two(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// The walks over the kept and the reduced dims of a geometry with several reduced runs.
std::pair<DimWalk, DimWalk> walks_of(const ReduceGeometry& g) {
  DimWalk kept;
  DimWalk reduced;
  std::int64_t stride = 1;
  for (std::size_t d = g.dims.size(); d-- > 0;) {
    DimWalk& walk = g.reduced[d] ? reduced : kept;
    walk.size[walk.rank] = g.dims[d];
    walk.stride[walk.rank] = stride;
    ++walk.rank;
    stride *= g.dims[d];
  }
  // Filled innermost first; the walk wants outermost first.
  for (DimWalk* walk : {&kept, &reduced}) {
    std::reverse(walk->size, walk->size + walk->rank);
    std::reverse(walk->stride, walk->stride + walk->rank);
  }
  return {kept, reduced};
}

std::int64_t kept_count(const ReduceGeometry& g) {
  std::int64_t count = 1;
  for (std::size_t d = 0; d < g.dims.size(); ++d) count *= g.reduced[d] ? 1 : g.dims[d];
  return count;
}

// Enqueues the kernel for the geometry's layout; the caller checks the launch.
template <typename T, typename TO, typename Op>
void launch_reduce(const ReduceGeometry& g, const T* x, TO* y, Op op, cudaStream_t stream) {
  if (!g.single_run()) {
    const auto [kept, reduced] = walks_of(g);
    const std::int64_t outputs = kept_count(g);
    if (outputs == 0) return;
    reduce_strided_kernel<T, TO, Op><<<grid_for(outputs * kWarpSize), kBlockSize, 0, stream>>>(
        x, y, outputs, kept, reduced, g.length, op);
  } else if (g.outer * g.inner == 0) {
    return;
  } else if (g.inner == 1 && block_per_row(g.outer, g.length)) {
    reduce_rows_kernel<T, TO, Op, kBlockSize>
        <<<grid_for(g.outer * kBlockSize), kBlockSize, 0, stream>>>(x, y, g.outer, g.length, op);
  } else if (g.inner == 1) {
    reduce_rows_kernel<T, TO, Op, kWarpSize>
        <<<grid_for(g.outer * kWarpSize), kBlockSize, 0, stream>>>(x, y, g.outer, g.length, op);
  } else {
    const auto width = static_cast<unsigned>(std::min<std::int64_t>(kWarpSize, next_power_of_two(g.inner)));
    const auto depth =
        static_cast<unsigned>(std::min<std::int64_t>(kBlockSize / width, next_power_of_two(g.length)));
    const std::int64_t tiles = g.outer * ((g.inner + width - 1) / width);
    reduce_columns_kernel<T, TO, Op><<<grid_for(tiles * kBlockSize), dim3(width, depth), 0, stream>>>(
        x, y, g.outer, g.length, g.inner, op);
  }
}

// The strided kernel walks at most kMaxRank kept and kMaxRank reduced dims.
Status check_geometry(const CudaKernelContext& ctx, const ReduceGeometry& g) {
  if (g.single_run() || g.dims.size() <= static_cast<std::size_t>(kMaxRank)) return Status::ok();
  return ctx.error(StatusCode::kUnsupported, "the reduced axes split the input into ",
                   std::to_string(g.dims.size()), " runs of reduced and kept dims; CUDA walks at most ",
                   std::to_string(kMaxRank));
}

template <typename F>
bool dispatch_numeric(DataType dtype, F&& f) {
  return dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt64,
                         DataType::kInt32, DataType::kInt8, DataType::kUInt8>(dtype, std::forward<F>(f));
}

Status unsupported_dtype(std::string_view what, DataType dtype) {
  return make_error(StatusCode::kUnsupported, what, " of ", data_type_name(dtype),
                    " is not supported on CUDA");
}

struct ReduceState final : CudaNodeState {
  ReduceGeometry geometry;
};

template <Reduction R>
Result<CudaPrepared> prepare_reduce(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(ops::ReducePlan plan, ops::plan_reduce(ctx.inference(), R, x.rank()));
  if (!plan.reduced) return ctx.error(StatusCode::kUnsupported, "needs a constant 'axes' input on CUDA");
  auto state = std::make_unique<ReduceState>();
  state->geometry = ops::reduce_geometry(x.shape(), *plan.reduced);
  FOVEA_TRY(check_geometry(ctx, state->geometry));
  return CudaPrepared{std::move(state)};
}

template <Reduction R>
Status run_reduce(CudaKernelContext& ctx) {
  return launch_reduction(R, ctx.state<ReduceState>().geometry, ctx.input(0), ctx.output(0), ctx.stream());
}

struct ArgState final : CudaNodeState {
  ReduceGeometry geometry;
  bool last = false;
};

Result<CudaPrepared> prepare_arg(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(ops::ArgPlan plan, ops::plan_arg(ctx.inference(), x.rank()));
  std::vector<bool> reduced(static_cast<std::size_t>(x.rank()), false);
  if (x.rank() > 0) reduced[static_cast<std::size_t>(plan.axis)] = true;
  auto state = std::make_unique<ArgState>();
  state->geometry = ops::reduce_geometry(x.shape(), reduced);
  state->last = plan.last;
  return CudaPrepared{std::move(state)};
}

template <bool kMax>
Status run_arg(CudaKernelContext& ctx) {
  const ArgState& state = ctx.state<ArgState>();
  const Tensor& x = ctx.input(0);
  auto* out = static_cast<std::int64_t*>(ctx.output(0).raw());
  const bool known = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_reduce(state.geometry, static_cast<const T*>(x.raw()), out,
                  ArgOp<AccumulatorOf<T>>{kMax, state.last}, ctx.stream());
  });
  if (!known) return unsupported_dtype(ctx.node().op_type, x.dtype());
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

template <typename T>
void launch_typed(Reduction reduction, const ReduceGeometry& geometry, const T* x, T* y,
                  cudaStream_t stream) {
  using A = AccumulatorOf<T>;
  switch (reduction) {
    case Reduction::kMax:
    case Reduction::kMin:
      launch_reduce(geometry, x, y, ExtremeOp<A>{reduction == Reduction::kMax}, stream);
      return;
    case Reduction::kProd: launch_reduce(geometry, x, y, ProductOp<A>{}, stream); return;
    case Reduction::kLogSumExp:
      if constexpr (std::is_floating_point_v<A>) launch_reduce(geometry, x, y, LogSumExpOp<A>{}, stream);
      return;
    default: launch_reduce(geometry, x, y, AdditiveOp<A>{reduction}, stream); return;
  }
}

}  // namespace

Status launch_reduction(Reduction reduction, const ReduceGeometry& geometry, const Tensor& x, Tensor& y,
                        cudaStream_t stream) {
  const bool is_float =
      x.dtype() == DataType::kFloat32 || x.dtype() == DataType::kFloat16 || x.dtype() == DataType::kFloat64;
  const bool known =
      (is_float || !ops::reduction_needs_float(reduction)) && dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_typed(reduction, geometry, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), stream);
      });
  if (!known) return unsupported_dtype("this reduction", x.dtype());
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceSum",
                        .prepare = prepare_reduce<Reduction::kSum>,
                        .run = run_reduce<Reduction::kSum>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceMean",
                        .prepare = prepare_reduce<Reduction::kMean>,
                        .run = run_reduce<Reduction::kMean>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceMax",
                        .prepare = prepare_reduce<Reduction::kMax>,
                        .run = run_reduce<Reduction::kMax>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceMin",
                        .prepare = prepare_reduce<Reduction::kMin>,
                        .run = run_reduce<Reduction::kMin>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceProd",
                        .prepare = prepare_reduce<Reduction::kProd>,
                        .run = run_reduce<Reduction::kProd>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceL1",
                        .prepare = prepare_reduce<Reduction::kL1>,
                        .run = run_reduce<Reduction::kL1>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceL2",
                        .prepare = prepare_reduce<Reduction::kL2>,
                        .run = run_reduce<Reduction::kL2>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceLogSum",
                        .prepare = prepare_reduce<Reduction::kLogSum>,
                        .run = run_reduce<Reduction::kLogSum>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceLogSumExp",
                        .prepare = prepare_reduce<Reduction::kLogSumExp>,
                        .run = run_reduce<Reduction::kLogSumExp>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ReduceSumSquare",
                        .prepare = prepare_reduce<Reduction::kSumSquare>,
                        .run = run_reduce<Reduction::kSumSquare>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ArgMax", .prepare = prepare_arg, .run = run_arg<true>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ArgMin", .prepare = prepare_arg, .run = run_arg<false>});

}  // namespace fovea::runtime::cuda
