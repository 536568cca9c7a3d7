// ONNX NonMaxSuppression on CUDA, for the whole batch and every class in a fixed number of
// launches (no per-class loop, no host round trip), selecting exactly the CPU reference's boxes in
// its order (selection.cpp; ranking and IoU are nms_util.h's, shared with it):
//   1. one key per (batch, class, box): descending score then ascending box index, or a key that
//      sorts last when the box is no candidate (score not above the threshold, NaN);
//   2. a segmented sort orders each (batch, class) segment (core/segmented_sort.cuh: CUB's, in
//      chunks of segments small enough that it never synchronizes the host);
//   3. one block per segment walks its candidates in rank order, a tile of 256 at a time: each
//      thread checks its candidate against the boxes kept so far, computes which later candidates
//      of the tile its box would suppress (a 256-bit mask), and one thread then decides the tile in
//      order on those masks. The walk stops once max_output_boxes_per_class are kept, so the work
//      is bounded by the kept boxes, not by N squared, and any N fits (no mask of N x N bits);
//   4. a one-block scan turns the kept counts into row offsets (batch-major, then class) and writes
//      the row count; a last kernel writes the (batch, class, box) rows.
// The output is planned at bound_nms()'s rows; the op writes the true count to ctx.output_rows(0).
//
//   dtypes: boxes and scores float32 (as the CPU op); limits: batches * classes * boxes < 2^31
#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>

#include <cub/block/block_scan.cuh>

#include "core/segmented_sort.cuh"
#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/nms_util.h"

namespace fovea::runtime::cuda {

namespace {

// A key above every candidate's (descending_score_key's high word is never all ones: that would be
// a NaN score, which is no candidate), so non-candidates sort to the end of their segment.
constexpr std::uint64_t kNoCandidate = ~std::uint64_t{0};
// Candidates decided per step of the selection walk, one per thread: 256 keeps the tile's masks
// (256 x 256 bits) and boxes in 12 KiB of shared memory, and the serial decision per tile short.
constexpr int kTile = 256;
constexpr int kTileWords = kTile / 64;
constexpr int kScanThreads = 1024;  // the largest block: the scan walks the segments in few chunks

struct NmsState final : CudaNodeState {
  int batches = 0;
  int classes = 0;
  int boxes = 0;
  int capacity = 0;  // rows a (batch, class) may keep: the bound's per-class share
  bool center_point_box = false;
  std::size_t sort_bytes = 0;
  // Workspace offsets.
  std::size_t offsets = 0, keys[2] = {}, sort = 0, kept_index = 0, kept_boxes = 0, kept_count = 0;
  std::size_t row_begin = 0, total = 0;

  int segments() const { return batches * classes; }
  std::int64_t items() const { return static_cast<std::int64_t>(segments()) * boxes; }
};

// Rows a (batch, class) can select: max_output_boxes_per_class when it is a plan-time constant
// (absent or empty means 0, as on the CPU), else every box.
std::int64_t per_class_bound(const InferContext& ctx, std::int64_t boxes) {
  if (!ctx.has_input(2)) return 0;
  const Tensor* max_per_class = ctx.input_value(2);
  if (max_per_class == nullptr) return boxes;
  if (max_per_class->numel() == 0) return 0;
  return std::clamp<std::int64_t>(integer_at(*max_per_class, 0), 0, boxes);
}

Result<Shape> bound_nms(const InferContext& ctx, int /*output*/) {
  const Dims* scores = ctx.input_dims(1);
  if (scores == nullptr || !all_known(*scores)) {
    return ctx.error(StatusCode::kUnsupported, "needs the scores' shape at plan time on CUDA");
  }
  const std::int64_t segments = (*scores)[0].value * (*scores)[1].value;
  return Shape{segments * per_class_bound(ctx, (*scores)[2].value), 3};
}

// ---- kernels ----

__global__ void rank_keys_kernel(const float* __restrict__ scores, std::int64_t items, int boxes,
                                 const float* score_threshold, std::uint64_t* __restrict__ keys) {
  const bool has_threshold = score_threshold != nullptr;
  const float threshold = has_threshold ? *score_threshold : 0.0f;
  FOVEA_GRID_STRIDE_LOOP(e, items) {
    const float score = scores[e];
    const auto box = static_cast<std::uint32_t>(e % boxes);
    keys[e] = ops::onnx_nms_candidate(score, has_threshold, threshold) ? descending_score_key(score, box)
                                                                       : kNoCandidate;
  }
}

// CUB's segment ranges: segment s is [offsets[s], offsets[s + 1]).
__global__ void segment_offsets_kernel(int segments, int boxes, int* offsets) {
  FOVEA_GRID_STRIDE_LOOP(s, segments + 1) {
    offsets[s] = static_cast<int>(s * boxes);
  }
}

// How many keys of a sorted segment are candidates: the first kNoCandidate's position.
__device__ int candidate_count(const std::uint64_t* segment, int boxes) {
  int low = 0;
  int high = boxes;
  while (low < high) {
    const int mid = (low + high) / 2;
    if (segment[mid] == kNoCandidate) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  return low;
}

// Thread 0's serial step: in rank order, keeps each open candidate (alive, not suppressed by one
// kept earlier in the tile) and closes those it suppresses, until `room` are kept.
__device__ int decide_tile(const std::uint64_t (*masks)[kTileWords], const std::uint32_t* alive_warps,
                           int room, std::uint64_t* keep) {
  std::uint64_t open[kTileWords];
  for (int w = 0; w < kTileWords; ++w) {
    open[w] = alive_warps[2 * w] | static_cast<std::uint64_t>(alive_warps[2 * w + 1]) << 32;
    keep[w] = 0;
  }
  int kept = 0;
  for (int w = 0; w < kTileWords; ++w) {
    while (open[w] != 0 && kept < room) {
      const int bit = __ffsll(static_cast<long long>(open[w])) - 1;
      keep[w] |= std::uint64_t{1} << bit;
      ++kept;
      open[w] &= ~(std::uint64_t{1} << bit);
      for (int v = w; v < kTileWords; ++v) open[v] &= ~masks[w * 64 + bit][v];
    }
  }
  return kept;
}

struct SelectArgs {
  const float* boxes;
  const std::uint64_t* sorted;
  int num_boxes;
  int classes;
  int capacity;
  bool center_point_box;
  const std::int64_t* max_per_class;  // nullptr: absent (0)
  const float* iou_threshold;         // nullptr: absent (0)
  std::uint32_t* kept_index;          // [segments][capacity]
  Box* kept_boxes;                    // [segments][capacity]
  int* kept_count;                    // [segments]
};

// One block of kTile threads per (batch, class) segment; see the file's comment, step 3.
__global__ void __launch_bounds__(kTile) select_kernel(SelectArgs args) {
  __shared__ Box tile_boxes[kTile];
  __shared__ std::uint64_t masks[kTile][kTileWords];  // row r: the later candidates r suppresses
  __shared__ std::uint32_t alive_warps[kTile / 32];
  __shared__ std::uint64_t keep[kTileWords];
  __shared__ int shared_count;
  __shared__ int tile_kept;
  const int s = blockIdx.x;
  const int t = threadIdx.x;
  const float* boxes = args.boxes + static_cast<std::int64_t>(s / args.classes) * args.num_boxes * 4;
  const std::uint64_t* segment = args.sorted + static_cast<std::int64_t>(s) * args.num_boxes;
  Box* kept = args.kept_boxes + static_cast<std::int64_t>(s) * args.capacity;
  const float threshold = args.iou_threshold != nullptr ? *args.iou_threshold : 0.0f;
  const std::int64_t wanted = args.max_per_class != nullptr ? *args.max_per_class : 0;
  const int limit = static_cast<int>(wanted < 0 ? 0 : (wanted < args.capacity ? wanted : args.capacity));
  if (t == 0) shared_count = candidate_count(segment, args.num_boxes);
  __syncthreads();
  const int count = shared_count;
  int kept_total = 0;
  for (int start = 0; start < count && kept_total < limit; start += kTile) {
    const int tile_count = min(kTile, count - start);
    const bool valid = t < tile_count;
    const std::uint32_t index = valid ? key_index(segment[start + t]) : 0;
    const Box box =
        valid ? ops::onnx_nms_box(boxes + static_cast<std::int64_t>(index) * 4, args.center_point_box)
              : Box{};
    bool alive = valid;
    for (int k = 0; k < kept_total && alive; ++k) alive = !ops::onnx_nms_suppresses(kept[k], box, threshold);
    tile_boxes[t] = box;
    __syncthreads();
    std::uint64_t row[kTileWords] = {};
    if (alive) {
      for (int u = t + 1; u < tile_count; ++u) {
        if (ops::onnx_nms_suppresses(box, tile_boxes[u], threshold))
          row[u / 64] |= std::uint64_t{1} << (u % 64);
      }
    }
    for (int w = 0; w < kTileWords; ++w) masks[t][w] = row[w];
    const unsigned ballot = __ballot_sync(0xffffffffu, alive);
    if (t % 32 == 0) alive_warps[t / 32] = ballot;
    __syncthreads();
    if (t == 0) tile_kept = decide_tile(masks, alive_warps, limit - kept_total, keep);
    __syncthreads();
    const int w = t / 64;
    const std::uint64_t below = keep[w] & ((std::uint64_t{1} << (t % 64)) - 1);
    if ((keep[w] >> (t % 64)) & 1u) {
      int position = kept_total + __popcll(below);
      for (int v = 0; v < w; ++v) position += __popcll(keep[v]);
      args.kept_index[static_cast<std::int64_t>(s) * args.capacity + position] = index;
      kept[position] = box;
    }
    kept_total += tile_kept;
    __syncthreads();  // the kept boxes are visible, and the next tile may overwrite shared memory
  }
  if (t == 0) args.kept_count[s] = kept_total;
}

// Row offsets of each segment in the output (exclusive sum of the kept counts, in segment order:
// batch-major, then class) and the total row count.
__global__ void __launch_bounds__(kScanThreads)
    row_offsets_kernel(const int* kept_count, int segments, std::int64_t* row_begin, std::int64_t* rows) {
  using Scan = cub::BlockScan<std::int64_t, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  std::int64_t carry = 0;
  for (int base = 0; base < segments; base += kScanThreads) {
    const int s = base + static_cast<int>(threadIdx.x);
    std::int64_t before = 0;
    std::int64_t chunk = 0;
    Scan(temp).ExclusiveSum(s < segments ? kept_count[s] : 0, before, chunk);
    if (s < segments) row_begin[s] = carry + before;
    carry += chunk;
    __syncthreads();  // temp is reused by the next chunk
  }
  if (threadIdx.x == 0) *rows = carry;
}

__global__ void write_rows_kernel(const std::uint32_t* kept_index, const int* kept_count,
                                  const std::int64_t* row_begin, int classes, int capacity,
                                  std::int64_t* out) {
  const int s = blockIdx.x;
  for (int k = threadIdx.x; k < kept_count[s]; k += blockDim.x) {
    std::int64_t* row = out + (row_begin[s] + k) * 3;
    row[0] = s / classes;
    row[1] = s % classes;
    row[2] = kept_index[static_cast<std::int64_t>(s) * capacity + k];
  }
}

// ---- host side ----

std::size_t align_up(std::size_t bytes) {
  constexpr std::size_t kAlignment = 256;  // cudaMalloc's: keeps every array of the workspace aligned
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

template <typename T>
T* at(void* base, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

// Segment s is keys [offsets[s], offsets[s + 1]).
Status sort_keys(void* temp, std::size_t& temp_bytes, cub::DoubleBuffer<std::uint64_t>& keys,
                 const NmsState& state, const int* offsets, cudaStream_t stream) {
  const int* ends = offsets == nullptr ? nullptr : offsets + 1;
  return sort_segments(temp, temp_bytes, keys, state.items(), state.segments(), offsets, ends, stream);
}

Status place_workspace(NmsState& state) {
  cub::DoubleBuffer<std::uint64_t> no_keys(nullptr, nullptr);
  FOVEA_TRY(sort_keys(nullptr, state.sort_bytes, no_keys, state, nullptr, nullptr));
  std::size_t offset = 0;
  auto place = [&offset](std::size_t bytes) {
    const std::size_t here = offset;
    offset += align_up(bytes);
    return here;
  };
  const auto segments = static_cast<std::size_t>(state.segments());
  const auto items = static_cast<std::size_t>(state.items());
  const std::size_t kept = segments * static_cast<std::size_t>(state.capacity);
  state.offsets = place((segments + 1) * sizeof(int));
  state.keys[0] = place(items * sizeof(std::uint64_t));
  state.keys[1] = place(items * sizeof(std::uint64_t));
  state.sort = place(state.sort_bytes);
  state.kept_index = place(kept * sizeof(std::uint32_t));
  state.kept_boxes = place(kept * sizeof(Box));
  state.kept_count = place(segments * sizeof(int));
  state.row_begin = place(segments * sizeof(std::int64_t));
  state.total = offset;
  return Status::ok();
}

Result<CudaPrepared> prepare_nms(CudaKernelContext& ctx) {
  const Tensor& scores = ctx.input(1);
  if (scores.numel() >= INT_MAX) {
    return ctx.error(StatusCode::kUnsupported, "ranks fewer than 2^31 scores on CUDA, not ",
                     std::to_string(scores.numel()));
  }
  auto state = std::make_unique<NmsState>();
  state->batches = static_cast<int>(scores.dim(0));
  state->classes = static_cast<int>(scores.dim(1));
  state->boxes = static_cast<int>(scores.dim(2));
  const InferContext inference = ctx.inference();
  state->capacity = static_cast<int>(per_class_bound(inference, state->boxes));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t center, ctx.node().attr_int("center_point_box", 0));
  state->center_point_box = center != 0;
  if (state->capacity == 0 || state->segments() == 0) return CudaPrepared{std::move(state)};
  FOVEA_TRY(place_workspace(*state));
  const std::size_t workspace = state->total;
  return CudaPrepared{std::move(state), workspace};
}

// Device pointer to a scalar input's value, or nullptr when the input is absent or empty.
template <typename T>
const T* scalar_input(const CudaKernelContext& ctx, int i) {
  return ctx.has_input(i) && ctx.input(i).numel() > 0 ? static_cast<const T*>(ctx.input(i).raw()) : nullptr;
}

Status run_nms(CudaKernelContext& ctx) {
  const NmsState& state = ctx.state<NmsState>();
  std::int64_t* rows = ctx.output_rows(0);
  FOVEA_CHECK(rows != nullptr);  // the executor gives every data-dependent output a row count
  cudaStream_t stream = ctx.stream();
  if (state.capacity == 0 || state.segments() == 0) {
    FOVEA_CUDA_TRY(cudaMemsetAsync(rows, 0, sizeof(std::int64_t), stream));
    return Status::ok();
  }
  void* workspace = ctx.workspace();
  auto* offsets = at<int>(workspace, state.offsets);
  auto* kept_index = at<std::uint32_t>(workspace, state.kept_index);
  auto* kept_count = at<int>(workspace, state.kept_count);
  auto* row_begin = at<std::int64_t>(workspace, state.row_begin);
  const auto* boxes = static_cast<const float*>(ctx.input(0).raw());
  const auto* scores = static_cast<const float*>(ctx.input(1).raw());
  cub::DoubleBuffer<std::uint64_t> keys(at<std::uint64_t>(workspace, state.keys[0]),
                                        at<std::uint64_t>(workspace, state.keys[1]));

  rank_keys_kernel<<<grid_for(state.items()), kBlockSize, 0, stream>>>(
      scores, state.items(), state.boxes, scalar_input<float>(ctx, 4), keys.Current());
  FOVEA_CUDA_TRY_LAUNCH();
  segment_offsets_kernel<<<grid_for(state.segments() + 1), kBlockSize, 0, stream>>>(state.segments(),
                                                                                    state.boxes, offsets);
  FOVEA_CUDA_TRY_LAUNCH();
  std::size_t sort_bytes = state.sort_bytes;
  FOVEA_TRY(sort_keys(at<void>(workspace, state.sort), sort_bytes, keys, state, offsets, stream));

  const SelectArgs args{boxes,
                        keys.Current(),
                        state.boxes,
                        state.classes,
                        state.capacity,
                        state.center_point_box,
                        scalar_input<std::int64_t>(ctx, 2),
                        scalar_input<float>(ctx, 3),
                        kept_index,
                        at<Box>(workspace, state.kept_boxes),
                        kept_count};
  select_kernel<<<state.segments(), kTile, 0, stream>>>(args);
  FOVEA_CUDA_TRY_LAUNCH();
  row_offsets_kernel<<<1, kScanThreads, 0, stream>>>(kept_count, state.segments(), row_begin, rows);
  FOVEA_CUDA_TRY_LAUNCH();
  write_rows_kernel<<<state.segments(), kBlockSize, 0, stream>>>(
      kept_index, kept_count, row_begin, state.classes, state.capacity,
      static_cast<std::int64_t*>(ctx.output(0).raw()));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP(
    {.op_type = "NonMaxSuppression", .prepare = prepare_nms, .run = run_nms, .bound_output = bound_nms});

}  // namespace fovea::runtime::cuda
