// Softmax and LogSoftmax on CUDA over the CPU op's (outer, n, inner) rows (softmax_rows_of: one axis
// from opset 13, the coerced 2-D rows before). One read pass keeps a running maximum and the sum of
// exp(x - max) (LogSumExpOp, so nothing overflows), a second pass writes.
//
//   layout        kernel
//   inner == 1    a warp or a block per row (block_per_row), e.g. 1000 classes
//   inner > 1     a thread per (outer, inner) column, threads along inner so every load of the
//                 class loop is coalesced, e.g. 21 classes over H*W in NCHW segmentation
//
//   dtypes: float32/16/64
#include <memory>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/group_reduce.cuh"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/reduce_ops.cuh"

namespace fovea::runtime::cuda {

namespace {

// One row's normalization from its (max, sum of exp(x - max)).
template <typename C, bool kLog>
struct RowScale {
  C max;
  C log_sum;  // LogSoftmax
  C scale;    // Softmax: 1 / sum

  __device__ explicit RowScale(MaxSum<C> s) : max(s.max), log_sum(log_of(s.sum)), scale(C(1) / s.sum) {}
  __device__ C operator()(C x) const {
    if constexpr (kLog) {
      return x - max - log_sum;
    } else {
      return exp_of(x - max) * scale;
    }
  }
};

template <typename T, bool kLog, int kGroup>
__global__ void __launch_bounds__(kBlockSize)
    softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, std::int64_t n) {
  using C = ComputeType<T>;
  using Reducer = GroupReducer<MaxSum<C>, kGroup, kBlockSize>;
  __shared__ typename Reducer::TempStorage storage;
  const LogSumExpOp<C> op;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * Reducer::kGroups;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * Reducer::kGroups + Reducer::group();
       row < rows; row += step) {
    const T* in = x + row * n;
    T* out = y + row * n;
    MaxSum<C> acc = op.init();
    for (std::int64_t j = Reducer::lane(); j < n; j += kGroup) acc = op(acc, op.map(load_compute(in, j), j));
    const RowScale<C, kLog> normalize(Reducer::all_reduce(storage, acc, op));
    for (std::int64_t j = Reducer::lane(); j < n; j += kGroup)
      store_compute(out, j, normalize(load_compute(in, j)));
  }
}

template <typename T, bool kLog>
__global__ void __launch_bounds__(kBlockSize)
    softmax_columns_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t outer, std::int64_t n,
                           std::int64_t inner) {
  using C = ComputeType<T>;
  const LogSumExpOp<C> op;
  FOVEA_GRID_STRIDE_LOOP(column, outer * inner) {
    const std::int64_t o = column / inner;
    const std::int64_t start = o * n * inner + (column - o * inner);
    MaxSum<C> acc = op.init();
    for (std::int64_t j = 0; j < n; ++j) acc = op(acc, op.map(load_compute(x, start + j * inner), j));
    const RowScale<C, kLog> normalize(acc);
    for (std::int64_t j = 0; j < n; ++j) {
      store_compute(y, start + j * inner, normalize(load_compute(x, start + j * inner)));
    }
  }
}

struct SoftmaxState final : CudaNodeState {
  ops::SoftmaxRows rows;
};

Result<CudaPrepared> prepare_softmax(CudaKernelContext& ctx) {
  auto state = std::make_unique<SoftmaxState>();
  FOVEA_ASSIGN_OR_RETURN(state->rows, ops::softmax_rows_of(ctx.node(), ctx.input(0).shape()));
  return CudaPrepared{std::move(state)};
}

template <typename T, bool kLog>
void launch_softmax(const ops::SoftmaxRows& r, const T* x, T* y, cudaStream_t stream) {
  if (r.inner > 1) {
    softmax_columns_kernel<T, kLog>
        <<<grid_for(r.outer * r.inner), kBlockSize, 0, stream>>>(x, y, r.outer, r.n, r.inner);
  } else if (block_per_row(r.outer, r.n)) {
    softmax_rows_kernel<T, kLog, kBlockSize>
        <<<grid_for(r.outer * kBlockSize), kBlockSize, 0, stream>>>(x, y, r.outer, r.n);
  } else {
    softmax_rows_kernel<T, kLog, kWarpSize>
        <<<grid_for(r.outer * kWarpSize), kBlockSize, 0, stream>>>(x, y, r.outer, r.n);
  }
}

template <bool kLog>
Status run_softmax(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  const ops::SoftmaxRows& rows = ctx.state<SoftmaxState>().rows;
  const bool known =
      dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_softmax<T, kLog>(rows, static_cast<const T*>(x.raw()), static_cast<T*>(ctx.output(0).raw()),
                                ctx.stream());
      });
  if (!known) return ctx.error(StatusCode::kUnsupported, "normalizes float16, float32 and float64 only");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Softmax", .prepare = prepare_softmax, .run = run_softmax<false>});
FOVEA_REGISTER_CUDA_OP({.op_type = "LogSoftmax", .prepare = prepare_softmax, .run = run_softmax<true>});

}  // namespace fovea::runtime::cuda
