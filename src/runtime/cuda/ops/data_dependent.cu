// Compress and Unique on CUDA, whose outputs are planned at their bound and trimmed to the rows
// the kernels write (the pattern of NonMaxSuppression, cuda/ops/nms.cu; cuda_op.h): the executor
// trims only an output's first dim, so these run where that is the dim that varies.
//
//   op         bound                                  kernels
//   Compress   the condition's length (its slices)    a one-block scan gives each kept slice its
//              along axis 0 or the flattened input    row and writes the row count; one thread
//                                                     per element copies the kept slices
//   Unique     the input's slices, no axis or axis 0  one thread per slice finds its first equal
//                                                     slice, then each first slice counts its
//                                                     rank (slices below it, or first slices
//                                                     before it unsorted) and its copies, then one
//                                                     thread per element writes Y and the indices
//   NonZero    refused: its count is the second dim of [rank, count]
//
// Unique compares slices with the CPU reference's unique_compare (ops/data_dependent_util.h), so
// both find the same slices in the same order. Its kernels do O(n^2) comparisons for n slices:
// correct for the index-sized inputs detection models pass it, not a sort for large tensors.
//
//   dtypes: Compress every dtype (elements move by size); Unique numbers and float16
#include <cub/block/block_scan.cuh>

#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/data_dependent_util.h"

namespace fovea::runtime::cuda {
namespace {

using ops::SliceLayout;

constexpr int kScanThreads = 1024;  // the largest block: the scan walks the condition in few chunks

std::optional<Shape> known_shape(const InferContext& ctx, int i) {
  const Dims* dims = ctx.input_dims(i);
  if (dims == nullptr || !all_known(*dims)) return std::nullopt;
  return shape_of(*dims);
}

// Only an output whose first dim varies can be trimmed by the executor.
Status require_first_dim(const InferContext& ctx, std::optional<int> axis) {
  if (axis && *axis != 0) {
    return ctx.error(StatusCode::kUnsupported, "selects along axis ", std::to_string(*axis),
                     ", so its output's dim ", std::to_string(*axis),
                     " depends on the data; the CUDA executor trims only an output's first dim");
  }
  return Status::ok();
}

// ---- Compress ----

Result<ops::CompressPlan> node_compress_plan(const InferContext& ctx, const Shape& x,
                                             const Shape& condition) {
  FOVEA_ASSIGN_OR_RETURN(const ops::CompressPlan plan, ops::compress_plan(ctx, x, element_count(condition)));
  FOVEA_TRY(require_first_dim(ctx, plan.axis));
  return plan;
}

Result<Shape> bound_compress(const InferContext& ctx, int /*output*/) {
  const std::optional<Shape> x = known_shape(ctx, 0);
  const std::optional<Shape> condition = known_shape(ctx, 1);
  if (!x || !condition) {
    return ctx.error(StatusCode::kUnsupported,
                     "needs the input's and condition's shapes at plan time on CUDA");
  }
  FOVEA_ASSIGN_OR_RETURN(const ops::CompressPlan plan, node_compress_plan(ctx, *x, *condition));
  return ops::compress_output_shape(plan, *x, plan.conditions);
}

// positions[k]: the output row of slice k when kept; *rows: the slices kept.
__global__ void __launch_bounds__(kScanThreads)
    compress_rows(const bool* __restrict__ condition, std::int64_t conditions, std::int64_t* positions,
                  std::int64_t* rows) {
  using Scan = cub::BlockScan<std::int64_t, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  std::int64_t carry = 0;
  for (std::int64_t base = 0; base < conditions; base += kScanThreads) {
    const std::int64_t k = base + threadIdx.x;
    std::int64_t before = 0;
    std::int64_t chunk = 0;
    Scan(temp).ExclusiveSum(k < conditions && condition[k] ? 1 : 0, before, chunk);
    if (k < conditions) positions[k] = carry + before;
    carry += chunk;
    __syncthreads();  // temp is reused by the next chunk
  }
  if (threadIdx.x == 0) *rows = carry;
}

template <typename T>
__global__ void compress_copy(const T* __restrict__ in, const bool* __restrict__ condition,
                              const std::int64_t* __restrict__ positions, T* __restrict__ out,
                              std::int64_t inner, std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(e, n) {
    const std::int64_t k = e / inner;
    if (condition[k]) out[positions[k] * inner + e % inner] = in[e];
  }
}

Result<CudaPrepared> prepare_compress(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ops::CompressPlan plan,
                         node_compress_plan(ctx.inference(), ctx.input(0).shape(), ctx.input(1).shape()));
  return CudaPrepared{nullptr, static_cast<std::size_t>(plan.conditions) * sizeof(std::int64_t)};
}

Status run_compress(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  std::int64_t* rows = ctx.output_rows(0);
  FOVEA_CHECK(rows != nullptr);  // the executor gives every data-dependent output a row count
  FOVEA_ASSIGN_OR_RETURN(const ops::CompressPlan plan,
                         node_compress_plan(ctx.inference(), x.shape(), condition.shape()));
  if (plan.conditions == 0) {
    FOVEA_CUDA_TRY(cudaMemsetAsync(rows, 0, sizeof(std::int64_t), ctx.stream()));
    return Status::ok();
  }
  auto* positions = static_cast<std::int64_t*>(ctx.workspace());
  const auto* keep = static_cast<const bool*>(condition.raw());
  compress_rows<<<1, kScanThreads, 0, ctx.stream()>>>(keep, plan.conditions, positions, rows);
  FOVEA_CUDA_TRY_LAUNCH();
  const std::int64_t elements = plan.conditions * plan.layout.inner;
  if (elements == 0) return Status::ok();
  FOVEA_CHECK(dispatch_by_bytes(data_type_size(x.dtype()), [&](auto tag) {
    using T = typename decltype(tag)::type;
    compress_copy<<<grid_for(elements), kBlockSize, 0, ctx.stream()>>>(
        static_cast<const T*>(x.raw()), keep, positions, static_cast<T*>(ctx.output(0).raw()),
        plan.layout.inner, elements);
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- Unique ----

Result<ops::UniquePlan> node_unique_plan(const InferContext& ctx, const Shape& x) {
  FOVEA_ASSIGN_OR_RETURN(const ops::UniquePlan plan, ops::unique_plan(ctx, x));
  FOVEA_TRY(require_first_dim(ctx, plan.axis));
  return plan;
}

// Y holds every slice at most; indices and counts one per slice, inverse_indices exactly one.
Result<Shape> bound_unique(const InferContext& ctx, int output) {
  const std::optional<Shape> x = known_shape(ctx, 0);
  if (!x) return ctx.error(StatusCode::kUnsupported, "needs the input's shape at plan time on CUDA");
  FOVEA_ASSIGN_OR_RETURN(const ops::UniquePlan plan, node_unique_plan(ctx, *x));
  return output == 0 ? ops::unique_output_shape(plan, *x, plan.layout.n) : Shape{plan.layout.n};
}

// The workspace: three int64 per slice, then the distinct count.
struct UniqueWorkspace {
  std::int64_t* first;  // the first slice equal to each
  std::int64_t* rank;   // a first slice's row in Y
  std::int64_t* count;  // a first slice's copies
  unsigned long long* distinct;
};

UniqueWorkspace unique_workspace(void* base, std::int64_t n) {
  auto* words = static_cast<std::int64_t*>(base);
  return {words, words + n, words + 2 * n, reinterpret_cast<unsigned long long*>(words + 3 * n)};
}

template <typename T>
__device__ int compare_slices(const T* x, const SliceLayout& layout, std::int64_t a, std::int64_t b) {
  return ops::unique_compare(layout, a, b, [&](std::int64_t o) { return load_compute(x, o); });
}

template <typename T>
__global__ void unique_first(const T* __restrict__ x, SliceLayout layout, UniqueWorkspace w) {
  FOVEA_GRID_STRIDE_LOOP(i, layout.n) {
    std::int64_t j = 0;
    while (j < i && compare_slices(x, layout, j, i) != 0) ++j;
    w.first[i] = j;
  }
}

template <typename T>
__global__ void unique_rank(const T* __restrict__ x, SliceLayout layout, bool sorted, UniqueWorkspace w) {
  FOVEA_GRID_STRIDE_LOOP(i, layout.n) {
    if (w.first[i] != i) continue;
    std::int64_t rank = 0;
    std::int64_t count = 0;
    for (std::int64_t j = 0; j < layout.n; ++j) {
      if (w.first[j] == j && (sorted ? compare_slices(x, layout, j, i) < 0 : j < i)) ++rank;
      if (w.first[j] == i) ++count;
    }
    w.rank[i] = rank;
    w.count[i] = count;
    atomicAdd(w.distinct, 1ull);
  }
}

// The outputs' device pointers; nullptr for an output the node leaves out.
struct UniqueOutputs {
  std::int64_t* indices;
  std::int64_t* inverse;
  std::int64_t* counts;
  std::int64_t* rows[4];
};

template <typename T>
__global__ void unique_write(const T* __restrict__ x, T* __restrict__ y, SliceLayout layout,
                             UniqueWorkspace w, UniqueOutputs out) {
  FOVEA_GRID_STRIDE_LOOP(e, layout.n * layout.inner) {
    const std::int64_t i = e / layout.inner;
    const std::int64_t k = e % layout.inner;
    const std::int64_t first = w.first[i];
    const std::int64_t rank = w.rank[first];
    if (first == i) {
      y[rank * layout.inner + k] = x[e];
      if (k == 0 && out.indices != nullptr) out.indices[rank] = i;
      if (k == 0 && out.counts != nullptr) out.counts[rank] = w.count[i];
    }
    if (k == 0 && out.inverse != nullptr) out.inverse[i] = rank;
  }
}

__global__ void unique_rows(UniqueWorkspace w, std::int64_t n, UniqueOutputs out) {
  const auto distinct = static_cast<std::int64_t>(*w.distinct);
  for (int i = 0; i < 4; ++i) {
    if (out.rows[i] != nullptr) *out.rows[i] = i == 2 ? n : distinct;
  }
}

Result<CudaPrepared> prepare_unique(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ops::UniquePlan plan, node_unique_plan(ctx.inference(), ctx.input(0).shape()));
  return CudaPrepared{nullptr, static_cast<std::size_t>(3 * plan.layout.n + 1) * sizeof(std::int64_t)};
}

Status run_unique(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const ops::UniquePlan plan, node_unique_plan(ctx.inference(), x.shape()));
  const SliceLayout& layout = plan.layout;
  const UniqueWorkspace w = unique_workspace(ctx.workspace(), layout.n);
  UniqueOutputs out{};
  auto present = [&](int i) {
    return i < ctx.output_count() && ctx.node().outputs[static_cast<std::size_t>(i)] != kNoValue;
  };
  std::int64_t** index_outputs[] = {nullptr, &out.indices, &out.inverse, &out.counts};
  for (int i = 0; i < 4; ++i) {
    if (!present(i)) continue;
    out.rows[i] = ctx.output_rows(i);
    if (i > 0) *index_outputs[i] = static_cast<std::int64_t*>(ctx.output(i).raw());
  }
  cudaStream_t stream = ctx.stream();
  FOVEA_CUDA_TRY(cudaMemsetAsync(w.distinct, 0, sizeof(*w.distinct), stream));
  if (layout.n > 0) {
    FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_NUMERIC_TYPES>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      unique_first<<<grid_for(layout.n), kBlockSize, 0, stream>>>(in, layout, w);
      unique_rank<<<grid_for(layout.n), kBlockSize, 0, stream>>>(in, layout, plan.sorted, w);
      if (layout.inner > 0) {
        unique_write<<<grid_for(layout.n * layout.inner), kBlockSize, 0, stream>>>(
            in, ctx.output(0).data<T>(), layout, w, out);
      }
      return Status::ok();
    }));
    FOVEA_CUDA_TRY_LAUNCH();
  }
  unique_rows<<<1, 1, 0, stream>>>(w, layout.n, out);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- NonZero ----

// NonZero's output is [rank, count]: the count is its second dim, which the executor cannot trim.
Result<Shape> bound_nonzero(const InferContext& ctx, int /*output*/) {
  return ctx.error(StatusCode::kUnsupported,
                   "writes [rank, count] coordinates, whose count (the second dim) depends on the data; the "
                   "CUDA executor trims only an output's first dim");
}

Status run_nonzero(CudaKernelContext& ctx) {
  return bound_nonzero(ctx.inference(), 0).status();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Compress",
                        .prepare = prepare_compress,
                        .run = run_compress,
                        .bound_output = bound_compress});
FOVEA_REGISTER_CUDA_OP(
    {.op_type = "Unique", .prepare = prepare_unique, .run = run_unique, .bound_output = bound_unique});
FOVEA_REGISTER_CUDA_OP({.op_type = "NonZero", .run = run_nonzero, .bound_output = bound_nonzero});

}  // namespace fovea::runtime::cuda
