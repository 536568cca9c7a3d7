// The data movement ops on CUDA, for every dtype (elements move as unsigned integers of their
// size, up to 16 bytes at a time where rows allow):
//
//   op                              kernel
//   Slice Transpose Tile Pad Expand one gather over per-axis maps (gather_axes), after merging
//                                   axes that stay contiguous; a shared-memory tile transpose when
//                                   the result is a batched 2-D transpose (NCHW <-> NHWC)
//   Concat Split                    one launch copying every part's rows (copy_parts)
//   Gather                          rows of the data picked by device indices (gather_rows)
//
// Parameters come from the same host-side plans the CPU ops use (movement_plan.h), in prepare().
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/movement_plan.h"

namespace fovea::runtime::cuda {
namespace {

using ops::PadMode;

// ---- Gather over per-axis maps (Slice, Transpose, Tile, Pad, Expand) ----

// How output coordinate c along one axis reads the input, adding to the element offset: kAffine
// c * stride (a slice's start is in the plan's base, its step and Transpose's permutation in the
// stride), kTile (c % in_dim) * stride, kPad pad_source(start + c, in_dim) * stride, or the fill
// value where pad_source says -1.
enum class AxisKind : std::uint8_t { kAffine, kTile, kPad };

struct AxisMap {
  std::int64_t out_dim = 1;
  std::int64_t start = 0;
  std::int64_t in_dim = 1;
  std::int64_t stride = 0;
  AxisKind kind = AxisKind::kAffine;
  PadMode pad = PadMode::kConstant;
};

struct AxisMaps {
  int rank = 0;
  AxisMap axes[kMaxRank];
};

// The input offset output element e reads; `outside` when a padded axis maps it to the fill value.
template <typename Index>
__device__ __forceinline__ Index source_offset(const AxisMaps& maps, Index e, bool& outside) {
  Index offset = 0;
  for (int d = maps.rank - 1; d >= 0; --d) {
    const AxisMap& a = maps.axes[d];
    const auto dim = static_cast<Index>(a.out_dim);
    const Index c = e % dim;
    e /= dim;
    if (a.kind == AxisKind::kAffine) {
      offset += c * static_cast<Index>(a.stride);
    } else if (a.kind == AxisKind::kTile) {
      offset += (c % static_cast<Index>(a.in_dim)) * static_cast<Index>(a.stride);
    } else {
      Index x = static_cast<Index>(a.start) + c;
      if (x < 0 || x >= static_cast<Index>(a.in_dim)) {  // the border: pad_source's 64-bit modes
        const std::int64_t source = ops::pad_source(x, a.in_dim, a.pad);
        outside = outside || source < 0;
        x = static_cast<Index>(source);
      }
      offset += x * static_cast<Index>(a.stride);
    }
  }
  return offset;
}

// Elements each thread has in flight: their loads are independent, which hides memory latency
// when elements are small (2-byte halves) and each needs its own index math (measured on an H200:
// a float16 pad ran at 0.5 TB/s with one element per thread).
constexpr int kElementsInFlight = 4;

template <typename T, typename Index>
__global__ void gather_axes(const T* __restrict__ in, T* __restrict__ out, AxisMaps maps, Index n, T fill,
                            const T* fill_from) {
  if (fill_from != nullptr) fill = *fill_from;
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; first < n;
       first += step * kElementsInFlight) {
    T values[kElementsInFlight];
#pragma unroll
    for (int k = 0; k < kElementsInFlight; ++k) {
      const std::int64_t e = first + k * step;
      if (e >= n) break;
      bool outside = false;
      const Index offset = source_offset(maps, static_cast<Index>(e), outside);
      values[k] = outside ? fill : in[offset];
    }
#pragma unroll
    for (int k = 0; k < kElementsInFlight; ++k) {
      const std::int64_t e = first + k * step;
      if (e >= n) break;
      out[e] = values[k];
    }
  }
}

// out[b, c, r] = in[b, r, c] through a shared-memory tile, so that both the reads and the writes
// are coalesced. Tiles of elements under 4 bytes are 64 wide, so that a block reads whole 64- and
// 128-byte lines (32-wide float16 tiles ran at a quarter of the copy bandwidth on an H200); rows
// are padded to an odd number of 4-byte words, so the column reads hit 32 different banks.
template <typename T>
struct TransposeTile {
  static constexpr int kDim = sizeof(T) >= 4 ? 32 : 64;
  static constexpr int kRows = kBlockSize / kDim;  // threadIdx.y; each thread moves kDim / kRows
  static constexpr int kPad = sizeof(T) >= 4 ? 1 : static_cast<int>(4 / sizeof(T));
};

template <typename T>
__global__ void transpose_tiles(const T* __restrict__ in, T* __restrict__ out, std::int64_t batch,
                                std::int64_t rows, std::int64_t cols) {
  using Layout = TransposeTile<T>;
  __shared__ T tile[Layout::kDim][Layout::kDim + Layout::kPad];
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * Layout::kDim;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * Layout::kDim;
  for (std::int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* src = in + b * rows * cols;
    T* dst = out + b * rows * cols;
    for (int j = static_cast<int>(threadIdx.y); j < Layout::kDim; j += Layout::kRows) {
      const std::int64_t r = row0 + j;
      const std::int64_t c = col0 + threadIdx.x;
      if (r < rows && c < cols) tile[j][threadIdx.x] = src[r * cols + c];
    }
    __syncthreads();
    for (int j = static_cast<int>(threadIdx.y); j < Layout::kDim; j += Layout::kRows) {
      const std::int64_t c = col0 + j;
      const std::int64_t r = row0 + threadIdx.x;
      if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

// The maps of one node, simplified at prepare(): output axes of size 1 are gone and neighbours
// that read contiguously are merged, so NCHW -> NHWC becomes [N, C, H*W] -> [N, H*W, C]. `base`
// is the element offset of the first element read (affine axes start there).
struct GatherPlan : CudaNodeState {
  std::vector<AxisMap> axes;
  std::int64_t base = 0;
  std::int64_t count = 0;  // output elements
  std::array<std::byte, 8> fill{};
  bool fill_on_device = false;  // Pad's value input is device data: the kernel reads it
};

// Merges an affine axis into the affine axis before it when the pair reads like one axis.
void merge_axes(GatherPlan& plan) {
  std::vector<AxisMap> merged;
  for (const AxisMap& a : plan.axes) {
    if (a.out_dim == 1 && a.kind != AxisKind::kPad) continue;  // reads offset 0 (tile) or base
    if (!merged.empty()) {
      AxisMap& outer = merged.back();
      if (outer.kind == AxisKind::kAffine && a.kind == AxisKind::kAffine &&
          outer.stride == a.out_dim * a.stride) {
        outer.out_dim *= a.out_dim;
        outer.stride = a.stride;
        continue;
      }
    }
    merged.push_back(a);
  }
  plan.axes = std::move(merged);
}

Result<CudaPrepared> finish_gather_plan(CudaKernelContext& ctx, std::unique_ptr<GatherPlan> plan) {
  plan->count = ctx.output(0).numel();  // shape inference's output shape: the product of out_dims
  merge_axes(*plan);
  if (plan->axes.size() > static_cast<std::size_t>(kMaxRank)) {
    return ctx.error(StatusCode::kUnsupported, "needs ", std::to_string(plan->axes.size()),
                     " dims after merging contiguous ones; the CUDA kernel takes at most ",
                     std::to_string(kMaxRank));
  }
  return CudaPrepared{.state = std::move(plan)};
}

// A batched 2-D transpose [B, R, C] -> [B, C, R]: two or three affine axes where the output's last
// axis walks the input's rows and the one before it the input's columns.
struct Transpose2d {
  std::int64_t batch = 1, rows = 0, cols = 0;
};
std::optional<Transpose2d> as_transpose_2d(const GatherPlan& plan) {
  const std::size_t rank = plan.axes.size();
  if (rank < 2 || rank > 3) return std::nullopt;
  for (const AxisMap& a : plan.axes) {
    if (a.kind != AxisKind::kAffine) return std::nullopt;
  }
  const AxisMap& col = plan.axes[rank - 2];
  const AxisMap& row = plan.axes[rank - 1];
  if (col.stride != 1 || row.stride != col.out_dim) return std::nullopt;
  Transpose2d t{.batch = 1, .rows = row.out_dim, .cols = col.out_dim};
  if (rank == 3) {
    if (plan.axes[0].stride != t.rows * t.cols) return std::nullopt;
    t.batch = plan.axes[0].out_dim;
  }
  return t;
}

// The tiled kernel serves 16 rows and columns and more (below, most of a tile would idle); gridDim.y
// (at most 65535) holds the row tiles, of 32 rows at least.
bool tiles_serve(const Transpose2d& t) {
  constexpr std::int64_t kMinSide = 16;
  return t.rows >= kMinSide && t.cols >= kMinSide && (t.rows + 31) / 32 <= 65535;
}

template <typename T>
void launch_transpose(const T* in, T* out, const Transpose2d& t, cudaStream_t stream) {
  constexpr int kDim = TransposeTile<T>::kDim;
  const dim3 block(kDim, TransposeTile<T>::kRows);
  const dim3 grid(static_cast<unsigned>((t.cols + kDim - 1) / kDim),
                  static_cast<unsigned>((t.rows + kDim - 1) / kDim),
                  static_cast<unsigned>(std::min<std::int64_t>(t.batch, 65535)));
  transpose_tiles<T><<<grid, block, 0, stream>>>(in, out, t.batch, t.rows, t.cols);
}

// NCHW -> NHWC of images of 2 to 4 channels (a network's RGB input): [B, R, C] -> [B, C, R] with
// R = kRows planes. A thread reads one 16-byte vector of each plane (kGroup consecutive pixels)
// and writes their kGroup * kRows interleaved elements as kRows vectors, where the gather moved
// them one element at a time.
constexpr int kMaxInterleavedRows = 4;

template <typename T, int kRows>
__global__ void interleave_rows(const T* __restrict__ in, T* __restrict__ out, std::int64_t batch,
                                std::int64_t cols) {
  constexpr int kGroup = static_cast<int>(kVectorBytes / sizeof(T));
  using V = Vector<T, kGroup>;
  const std::int64_t groups = cols / kGroup;
  FOVEA_GRID_STRIDE_LOOP(i, batch * groups) {
    const std::int64_t b = i / groups;
    const std::int64_t col = (i - b * groups) * kGroup;
    V planes[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      planes[r] = *reinterpret_cast<const V*>(in + (b * kRows + r) * cols + col);
    V pixels[kRows];
#pragma unroll
    for (int e = 0; e < kGroup * kRows; ++e)
      pixels[e / kGroup].v[e % kGroup] = planes[e % kRows].v[e / kRows];
    V* dst = reinterpret_cast<V*>(out + (b * cols + col) * kRows);
#pragma unroll
    for (int r = 0; r < kRows; ++r) dst[r] = pixels[r];
  }
}

// Whether interleave_rows serves `t`: 2 to 4 rows, whole vectors of columns, aligned pointers.
bool interleave_serves(const Transpose2d& t, std::size_t element_bytes, const void* in, const void* out) {
  const auto group = static_cast<std::int64_t>(kVectorBytes / element_bytes);
  return t.rows >= 2 && t.rows <= kMaxInterleavedRows && t.cols % group == 0 &&
         vector_elements(element_bytes, {group}, {in, out}) == group;
}

template <typename T>
void launch_interleave(const T* in, T* out, const Transpose2d& t, cudaStream_t stream) {
  const std::int64_t vectors = t.batch * (t.cols / static_cast<std::int64_t>(kVectorBytes / sizeof(T)));
  const unsigned grid = grid_for(vectors);
  if (t.rows == 2) interleave_rows<T, 2><<<grid, kBlockSize, 0, stream>>>(in, out, t.batch, t.cols);
  if (t.rows == 3) interleave_rows<T, 3><<<grid, kBlockSize, 0, stream>>>(in, out, t.batch, t.cols);
  if (t.rows == 4) interleave_rows<T, 4><<<grid, kBlockSize, 0, stream>>>(in, out, t.batch, t.cols);
}

// Moves k elements as one where the innermost axis reads runs of k contiguous, aligned elements
// (a row copy, a whole-row slice, constant padding by multiples of k) and every other stride
// stays a multiple of k.
std::int64_t widen_factor(const GatherPlan& plan, std::size_t element_bytes, const void* in, void* out) {
  if (plan.axes.empty() || plan.fill_on_device) return 1;
  const AxisMap& last = plan.axes.back();
  const bool contiguous = last.stride == 1 && (last.kind != AxisKind::kPad ||
                                               last.pad == PadMode::kConstant || last.pad == PadMode::kWrap);
  if (!contiguous) return 1;
  std::vector<std::int64_t> counts = {last.out_dim, plan.base};
  if (last.kind != AxisKind::kAffine) {
    counts.push_back(last.in_dim);
    counts.push_back(last.start);
  }
  for (std::size_t d = 0; d + 1 < plan.axes.size(); ++d) counts.push_back(plan.axes[d].stride);
  return vector_elements(element_bytes, counts, {in, out});
}

AxisMaps device_maps(const GatherPlan& plan, std::int64_t k) {
  AxisMaps maps;
  maps.rank = static_cast<int>(plan.axes.size());
  for (std::size_t d = 0; d < plan.axes.size(); ++d) maps.axes[d] = plan.axes[d];
  if (k > 1) {
    AxisMap& last = maps.axes[maps.rank - 1];
    last.out_dim /= k;
    last.in_dim /= k;
    last.start /= k;
    for (int d = 0; d + 1 < maps.rank; ++d) maps.axes[d].stride /= k;
  }
  return maps;
}

Status run_gather_plan(CudaKernelContext& ctx) {
  const GatherPlan& plan = ctx.state<GatherPlan>();
  if (plan.count == 0) return Status::ok();
  const Tensor& input = ctx.input(0);
  Tensor& output = ctx.output(0);
  const std::size_t size = data_type_size(output.dtype());
  const auto* in = static_cast<const std::byte*>(input.raw()) + plan.base * static_cast<std::int64_t>(size);
  if (const auto t = as_transpose_2d(plan);
      t && (tiles_serve(*t) || interleave_serves(*t, size, in, output.raw()))) {
    dispatch_by_bytes(size, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* from = reinterpret_cast<const T*>(in);
      T* to = static_cast<T*>(output.raw());
      if (tiles_serve(*t)) {
        launch_transpose(from, to, *t, ctx.stream());
      } else {
        launch_interleave(from, to, *t, ctx.stream());
      }
    });
    FOVEA_CUDA_TRY_LAUNCH();
    return Status::ok();
  }
  const std::int64_t k = widen_factor(plan, size, in, output.raw());
  const AxisMaps maps = device_maps(plan, k);
  std::array<std::byte, 16> fill{};
  for (std::int64_t i = 0; i < k; ++i)
    std::memcpy(fill.data() + i * static_cast<std::int64_t>(size), plan.fill.data(), size);
  const void* fill_from = plan.fill_on_device ? ctx.input(2).raw() : nullptr;
  const std::int64_t n = plan.count / k;
  dispatch_by_bytes(size * static_cast<std::size_t>(k), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T fill_value;
    std::memcpy(&fill_value, fill.data(), sizeof(T));
    dispatch_index(std::max(n, input.numel()), [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      gather_axes<T, Index>
          <<<grid_for((n + kElementsInFlight - 1) / kElementsInFlight), kBlockSize, 0, ctx.stream()>>>(
              reinterpret_cast<const T*>(in), static_cast<T*>(output.raw()), maps, static_cast<Index>(n),
              fill_value, static_cast<const T*>(fill_from));
    });
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- Slice, Transpose, Tile, Pad, Expand: their maps ----

Result<CudaPrepared> prepare_slice(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const auto slices, ops::slice_plan(ctx.inference(), dims_of(in.shape())));
  if (!slices) {
    return ctx.error(StatusCode::kUnsupported, "needs constant starts, ends, axes and steps inputs on CUDA");
  }
  const Shape strides = contiguous_strides(in.shape());
  auto plan = std::make_unique<GatherPlan>();
  for (std::size_t d = 0; d < strides.size(); ++d) {
    const ops::SliceAxis& s = (*slices)[d];
    plan->base += s.start * strides[d];
    plan->axes.push_back(AxisMap{.out_dim = s.count.value, .stride = s.step * strides[d]});
  }
  return finish_gather_plan(ctx, std::move(plan));
}

Result<CudaPrepared> prepare_transpose(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> perm,
                         ops::transpose_perm(ctx.inference(), in.rank()));
  const Shape strides = contiguous_strides(in.shape());
  auto plan = std::make_unique<GatherPlan>();
  for (std::int64_t axis : perm) {
    const auto a = static_cast<std::size_t>(axis);
    plan->axes.push_back(AxisMap{.out_dim = in.shape()[a], .stride = strides[a]});
  }
  return finish_gather_plan(ctx, std::move(plan));
}

Result<CudaPrepared> prepare_tile(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Shape strides = contiguous_strides(in.shape());
  auto plan = std::make_unique<GatherPlan>();
  for (int d = 0; d < in.rank(); ++d) {
    const auto a = static_cast<std::size_t>(d);
    const bool repeated = ctx.output(0).dim(d) != in.dim(d);
    plan->axes.push_back(AxisMap{.out_dim = ctx.output(0).dim(d),
                                 .in_dim = in.dim(d),
                                 .stride = strides[a],
                                 .kind = repeated ? AxisKind::kTile : AxisKind::kAffine});
  }
  return finish_gather_plan(ctx, std::move(plan));
}

Result<CudaPrepared> prepare_expand(CudaKernelContext& ctx) {
  const Tensor& out = ctx.output(0);
  const Shape strides = ops::broadcast_strides(ctx.input(0).shape(), out.shape());
  auto plan = std::make_unique<GatherPlan>();
  for (std::size_t d = 0; d < strides.size(); ++d) {
    plan->axes.push_back(AxisMap{.out_dim = out.shape()[d], .stride = strides[d]});
  }
  return finish_gather_plan(ctx, std::move(plan));
}

Result<CudaPrepared> prepare_pad(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const InferContext inference = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(const auto pads, ops::pad_plan(inference, in.rank()));
  if (!pads) return ctx.error(StatusCode::kUnsupported, "needs constant pads and axes inputs on CUDA");
  auto plan = std::make_unique<GatherPlan>();
  if (ctx.opset() < 11) {
    FOVEA_ASSIGN_OR_RETURN(const float value, ctx.node().attr_float("value", 0.0f));
    plan->fill = ops::element_bytes(in.dtype(), value);
  } else if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    if (const Tensor* value = ctx.host_constant(2)) {
      std::memcpy(plan->fill.data(), value->raw(), data_type_size(in.dtype()));
    } else {
      plan->fill_on_device = true;
    }
  }
  const Shape strides = contiguous_strides(in.shape());
  for (int d = 0; d < in.rank(); ++d) {
    const auto a = static_cast<std::size_t>(d);
    const std::int64_t out_dim = ctx.output(0).dim(d);
    if (pads->begin[a] > 0 || pads->begin[a] + in.dim(d) < out_dim) {
      plan->axes.push_back(AxisMap{.out_dim = out_dim,
                                   .start = -pads->begin[a],
                                   .in_dim = in.dim(d),
                                   .stride = strides[a],
                                   .kind = AxisKind::kPad,
                                   .pad = pads->mode});
    } else {  // cropped or untouched: output c reads c - begin
      plan->base -= pads->begin[a] * strides[a];
      plan->axes.push_back(AxisMap{.out_dim = out_dim, .stride = strides[a]});
    }
  }
  return finish_gather_plan(ctx, std::move(plan));
}

// ---- Concat and Split: row copies between the whole and its parts ----

// Each part copies `outer` rows of `row` elements from src (rows src_pitch apart) to dst (rows
// dst_pitch apart). Concat's parts are its inputs, Split's its outputs. A launch takes up to
// kMaxParts parts, 40 bytes each, within the 4 KiB of kernel parameters.
constexpr int kMaxParts = 64;

struct Part {
  const void* src = nullptr;
  void* dst = nullptr;
  std::int64_t row = 0;
  std::int64_t src_pitch = 0;
  std::int64_t dst_pitch = 0;
};

struct Parts {
  int count = 0;
  std::int64_t outer = 1;
  Part part[kMaxParts];
  // Blocks [first_block[p], first_block[p + 1]) work on part p, in proportion to its size.
  std::int64_t first_block[kMaxParts + 1] = {};
};

template <typename T, typename Index>
__global__ void copy_parts(Parts parts) {
  int p = 0;
  while (p + 1 < parts.count && blockIdx.x >= parts.first_block[p + 1]) ++p;
  const Part& part = parts.part[p];
  const auto row = static_cast<Index>(part.row);
  const Index n = row * static_cast<Index>(parts.outer);
  const auto blocks = static_cast<Index>(parts.first_block[p + 1] - parts.first_block[p]);
  const T* src = static_cast<const T*>(part.src);
  T* dst = static_cast<T*>(part.dst);
  for (Index e = static_cast<Index>(blockIdx.x - parts.first_block[p]) * blockDim.x + threadIdx.x; e < n;
       e += blocks * blockDim.x) {
    const Index o = e / row;
    const Index r = e - o * row;
    dst[o * static_cast<Index>(part.dst_pitch) + r] = src[o * static_cast<Index>(part.src_pitch) + r];
  }
}

// Enough elements per thread that a block's index setup is amortized, few enough to fill the GPU.
constexpr std::int64_t kElementsPerThread = 4;

Status launch_parts(std::vector<Part> parts, std::int64_t outer, std::size_t element_bytes,
                    std::int64_t largest, cudaStream_t stream) {
  std::vector<std::int64_t> counts;
  std::vector<const void*> pointers;
  for (const Part& p : parts) {
    counts.insert(counts.end(), {p.row, p.src_pitch, p.dst_pitch});
    pointers.insert(pointers.end(), {p.src, p.dst});
  }
  const std::int64_t k = vector_elements(element_bytes, counts, pointers);
  Parts launch;
  launch.count = static_cast<int>(parts.size());
  launch.outer = outer;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Part p = parts[i];
    p.row /= k;
    p.src_pitch /= k;
    p.dst_pitch /= k;
    const std::int64_t n = p.row * outer;
    const std::int64_t blocks = std::max<std::int64_t>(
        1, (n + kBlockSize * kElementsPerThread - 1) / (kBlockSize * kElementsPerThread));
    launch.part[i] = p;
    launch.first_block[i + 1] = launch.first_block[i] + blocks;
  }
  const auto grid = static_cast<unsigned>(launch.first_block[parts.size()]);
  dispatch_by_bytes(element_bytes * static_cast<std::size_t>(k), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_index(largest, [&](auto index_tag) {
      copy_parts<T, typename decltype(index_tag)::type><<<grid, kBlockSize, 0, stream>>>(launch);
    });
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// A tensor seen as [outer, axis, inner] around one axis.
std::int64_t outer_of(const Shape& shape, int axis) {
  return std::accumulate(shape.begin(), shape.begin() + axis, std::int64_t{1}, std::multiplies<>());
}
std::int64_t inner_of(const Shape& shape, int axis) {
  return std::accumulate(shape.begin() + axis + 1, shape.end(), std::int64_t{1}, std::multiplies<>());
}

Result<int> node_axis(const CudaKernelContext& ctx, std::optional<std::int64_t> fallback, int rank) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis, ctx.node().attr_int("axis", fallback));
  return ops::normalize_axis(ctx.inference(), axis, rank);
}

// Copies between `whole` and `parts` along `axis`, kMaxParts parts per launch; empty parts are
// skipped. to_whole: Concat (parts are sources), otherwise Split.
Status copy_along_axis(const Tensor& whole, const std::vector<const Tensor*>& parts, int axis, bool to_whole,
                       cudaStream_t stream) {
  const std::int64_t outer = outer_of(whole.shape(), axis);
  const std::int64_t inner = inner_of(whole.shape(), axis);
  const std::int64_t whole_row = whole.dim(axis) * inner;
  const std::size_t size = data_type_size(whole.dtype());
  auto* base = static_cast<std::byte*>(const_cast<void*>(whole.raw()));
  std::vector<Part> batch;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Tensor& part = *parts[i];
    const std::int64_t row = part.dim(axis) * inner;
    void* at = base + offset * static_cast<std::int64_t>(size);
    offset += row;
    if (row == 0 || outer == 0) continue;
    void* part_data = const_cast<void*>(part.raw());
    batch.push_back(to_whole ? Part{part_data, at, row, row, whole_row}
                             : Part{at, part_data, row, whole_row, row});
    if (batch.size() == kMaxParts) {
      FOVEA_TRY(launch_parts(std::move(batch), outer, size, whole.numel(), stream));
      batch.clear();
    }
  }
  if (!batch.empty()) FOVEA_TRY(launch_parts(std::move(batch), outer, size, whole.numel(), stream));
  return Status::ok();
}

Status run_concat(CudaKernelContext& ctx) {
  Tensor& out = ctx.output(0);
  FOVEA_ASSIGN_OR_RETURN(const int axis, node_axis(ctx, std::nullopt, out.rank()));
  std::vector<const Tensor*> parts;
  for (int i = 0; i < ctx.input_count(); ++i) parts.push_back(&ctx.input(i));
  return copy_along_axis(out, parts, axis, true, ctx.stream());
}

Status run_split(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const int axis, node_axis(ctx, 0, in.rank()));
  std::vector<const Tensor*> parts;
  for (int i = 0; i < ctx.output_count(); ++i) parts.push_back(&ctx.output(i));
  return copy_along_axis(in, parts, axis, false, ctx.stream());
}

// ---- Gather ----

// out[o, j, i] = data[o, indices[j], i] for data seen as [outer, dim, inner]. Negative indices
// count from the end as on the CPU; an index still outside [0, dim) gives zeros (the CPU's shape
// inference rejects such constant indices, but device indices are never read on the host).
template <typename T, typename Index, typename I>
__global__ void gather_rows(const T* __restrict__ data, const I* __restrict__ indices, T* __restrict__ out,
                            Index n, Index inner, Index count, std::int64_t dim) {
  FOVEA_GRID_STRIDE_LOOP(e, n) {
    const auto k = static_cast<Index>(e);
    const Index rows = k / inner;
    const Index i = k - rows * inner;
    const Index o = rows / count;
    auto index = static_cast<std::int64_t>(indices[rows - o * count]);
    if (index < 0) index += dim;
    out[k] = index >= 0 && index < dim
                 ? data[(o * static_cast<Index>(dim) + static_cast<Index>(index)) * inner + i]
                 : T{};
  }
}

Status run_gather(CudaKernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const int axis, node_axis(ctx, 0, data.rank()));
  const std::size_t size = data_type_size(data.dtype());
  const std::int64_t inner = inner_of(data.shape(), axis);
  const std::int64_t k = vector_elements(size, {inner}, {data.raw(), out.raw()});
  const std::int64_t n = out.numel() / k;
  const std::int64_t dim = data.dim(axis);
  dispatch_by_bytes(size * static_cast<std::size_t>(k), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_index(std::max(out.numel(), data.numel()), [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      dispatch_device<DataType::kInt64, DataType::kInt32>(indices.dtype(), [&](auto index_type) {
        using I = typename decltype(index_type)::type;
        gather_rows<T, Index, I><<<grid_for(n), kBlockSize, 0, ctx.stream()>>>(
            static_cast<const T*>(data.raw()), indices.data<I>(), static_cast<T*>(out.raw()),
            static_cast<Index>(n), static_cast<Index>(inner / k), static_cast<Index>(indices.numel()), dim);
      });
    });
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Concat", .run = run_concat});
FOVEA_REGISTER_CUDA_OP({.op_type = "Split", .run = run_split});
FOVEA_REGISTER_CUDA_OP({.op_type = "Slice", .prepare = prepare_slice, .run = run_gather_plan});
FOVEA_REGISTER_CUDA_OP({.op_type = "Gather", .run = run_gather});
FOVEA_REGISTER_CUDA_OP({.op_type = "Transpose", .prepare = prepare_transpose, .run = run_gather_plan});
FOVEA_REGISTER_CUDA_OP({.op_type = "Tile", .prepare = prepare_tile, .run = run_gather_plan});
FOVEA_REGISTER_CUDA_OP({.op_type = "Pad", .prepare = prepare_pad, .run = run_gather_plan});
FOVEA_REGISTER_CUDA_OP({.op_type = "Expand", .prepare = prepare_expand, .run = run_gather_plan});

}  // namespace fovea::runtime::cuda
