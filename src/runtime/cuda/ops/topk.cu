// TopK on CUDA: a block per row along the axis sorts the row's (value, index) pairs in shared
// memory with a bitonic network, in the CPU reference's order (largest or smallest first, NaN above
// every number, ties to the lower index), and writes the first K. The output is always sorted, as
// on the CPU (`sorted` = 0 allows any order). K comes from a plan-time constant.
//
//   limits: the axis holds at most kMaxSortSize elements (the sort must fit in shared memory)
//   dtypes: float32/16/64, int64/32/8, uint8
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/reduce_util.h"

namespace fovea::runtime::cuda {

namespace {

// 16384 keys of 8 bytes and their 4-byte indices take 192 KiB, within the 227 KiB of shared memory
// a Hopper block may opt into; SSD's 8732 boxes per class fit.
constexpr std::int64_t kMaxSortSize = 16384;
constexpr int kMaxSortThreads = 1024;
constexpr int kMinSortThreads = 32;  // one warp

// A strict order on values: NaN ranks above every number, so comparisons stay consistent.
template <typename C>
__device__ bool ranks_above(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (isnan(b)) return false;
    if (isnan(a)) return true;
  }
  return a > b;
}

// Whether element (va, ia) comes before (vb, ib) in the output; indices >= n pad the sort to a
// power of two and come last.
template <typename C>
__device__ bool comes_before(C va, int ia, C vb, int ib, int n, bool largest) {
  if (ia >= n) return false;
  if (ib >= n) return true;
  if (ranks_above(va, vb)) return largest;
  if (ranks_above(vb, va)) return !largest;
  return ia < ib;
}

// Shared memory holds the indices, then the keys at a 16-byte boundary (keys of 8 bytes after an
// odd count of 4-byte indices would be misaligned).
__host__ __device__ constexpr std::size_t ids_bytes(int sort_size) {
  return (static_cast<std::size_t>(sort_size) * sizeof(int) + 15) / 16 * 16;
}

template <typename T>
__global__ void __launch_bounds__(kMaxSortThreads)
    topk_kernel(const T* __restrict__ x, T* __restrict__ values, std::int64_t* __restrict__ indices,
                std::int64_t rows, std::int64_t inner, int n, int k, int sort_size, bool largest) {
  using C = ComputeType<T>;
  extern __shared__ __align__(16) unsigned char shared[];
  int* ids = reinterpret_cast<int*>(shared);
  C* keys = reinterpret_cast<C*>(shared + ids_bytes(sort_size));
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t o = row / inner;
    const std::int64_t i = row - o * inner;
    const T* in = x + o * n * inner + i;
    for (int j = threadIdx.x; j < sort_size; j += blockDim.x) {
      ids[j] = j;
      if (j < n) keys[j] = load_compute(in, j * inner);
    }
    __syncthreads();
    for (int size = 2; size <= sort_size; size *= 2) {
      for (int stride = size / 2; stride > 0; stride /= 2) {
        for (int t = threadIdx.x; t < sort_size / 2; t += blockDim.x) {
          const int a = 2 * t - (t & (stride - 1));  // the pair's element with bit `stride` clear
          const int b = a + stride;
          const bool ascending = (a & size) == 0;
          const bool swap = ascending ? comes_before(keys[b], ids[b], keys[a], ids[a], n, largest)
                                      : comes_before(keys[a], ids[a], keys[b], ids[b], n, largest);
          if (swap) {
            const C key = keys[a];
            keys[a] = keys[b];
            keys[b] = key;
            const int id = ids[a];
            ids[a] = ids[b];
            ids[b] = id;
          }
        }
        __syncthreads();
      }
    }
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
      const std::int64_t out = (o * k + j) * inner + i;
      store_compute(values, out, keys[j]);
      indices[out] = ids[j];
    }
    __syncthreads();  // the next row overwrites keys and ids
  }
}

struct TopKState final : CudaNodeState {
  std::int64_t rows = 0;
  std::int64_t inner = 1;
  int n = 0;
  int k = 0;
  int sort_size = 1;
  bool largest = true;
};

template <typename F>
bool dispatch_numeric(DataType dtype, F&& f) {
  return dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt64,
                         DataType::kInt32, DataType::kInt8, DataType::kUInt8>(dtype, std::forward<F>(f));
}

template <typename T>
std::size_t shared_bytes(int sort_size) {
  return ids_bytes(sort_size) + static_cast<std::size_t>(sort_size) * sizeof(ComputeType<T>);
}

std::string refuses_topk(const InferContext& ctx) {
  const Dims* dims = ctx.input_dims(0);
  if (dims == nullptr) return {};
  const Result<ops::TopKPlan> plan = ops::topk_plan(ctx, *dims);
  if (!plan.is_ok() || !(*dims)[static_cast<std::size_t>(plan->axis)].known()) return {};
  const std::int64_t n = (*dims)[static_cast<std::size_t>(plan->axis)].value;
  if (n <= kMaxSortSize) return {};
  return "its kernel sorts at most " + std::to_string(kMaxSortSize) + " elements along the axis, not " +
         std::to_string(n);
}

Result<CudaPrepared> prepare_topk(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const ops::TopKPlan plan, ops::topk_plan(ctx.inference(), dims_of(x.shape())));
  if (!plan.k) return ctx.error(StatusCode::kUnsupported, "needs a constant 'K' input on CUDA");
  const std::int64_t n = x.dim(plan.axis);
  if (n > kMaxSortSize) {
    return ctx.error(StatusCode::kUnsupported, "sorts at most ", std::to_string(kMaxSortSize),
                     " elements along the axis on CUDA, not ", std::to_string(n));
  }
  auto state = std::make_unique<TopKState>();
  state->n = static_cast<int>(n);
  state->k = static_cast<int>(*plan.k);
  state->largest = plan.largest;
  for (int d = plan.axis + 1; d < x.rank(); ++d) state->inner *= x.dim(d);
  state->rows = n == 0 ? 0 : x.numel() / n;
  while (state->sort_size < state->n) state->sort_size *= 2;
  const void* kernel = nullptr;
  std::size_t bytes = 0;
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = reinterpret_cast<const void*>(topk_kernel<T>);
    bytes = shared_bytes<T>(state->sort_size);
  });
  if (kernel != nullptr) FOVEA_TRY(allow_dynamic_shared(kernel, bytes));
  return CudaPrepared{std::move(state)};
}

Status run_topk(CudaKernelContext& ctx) {
  const TopKState& state = ctx.state<TopKState>();
  if (state.rows == 0 || state.k == 0) return Status::ok();
  const Tensor& x = ctx.input(0);
  const int threads = std::min(kMaxSortThreads, std::max(kMinSortThreads, state.sort_size / 2));
  const bool known = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    topk_kernel<T><<<grid_for(state.rows * threads, threads), threads, shared_bytes<T>(state.sort_size),
                     ctx.stream()>>>(static_cast<const T*>(x.raw()), static_cast<T*>(ctx.output(0).raw()),
                                     static_cast<std::int64_t*>(ctx.output(1).raw()), state.rows, state.inner,
                                     state.n, state.k, state.sort_size, state.largest);
  });
  if (!known)
    return ctx.error(StatusCode::kUnsupported, "does not sort ", data_type_name(x.dtype()), " on CUDA");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP(
    {.op_type = "TopK", .prepare = prepare_topk, .run = run_topk, .refuses = refuses_topk});

}  // namespace fovea::runtime::cuda
