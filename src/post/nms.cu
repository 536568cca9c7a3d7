// Batched class-aware NMS on the GPU: gather → segmented sort → IoU masks → greedy selection →
// segmented sort per image → top-k. See nms.h for the definition and the pipeline.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "core/segmented_sort.cuh"
#include "post/nms.h"

namespace fovea::post {

namespace {

// A segment is one (image, class); its candidates live in a slot of B keys (every box may pass).
constexpr int kMaskBits = 64;  // the suppression masks are 64-bit words
// Candidate gathering: 256 threads x 8 scores per block, so a block reads 8 KiB of scores
// (coalesced) and the per-class shared counters are amortized over 2048 scores.
constexpr int kGatherThreads = 256;
constexpr int kGatherItems = 8;
constexpr int kGatherTile = kGatherThreads * kGatherItems;
constexpr int kWriteThreads = 256;

__host__ __device__ int mask_words(int count) {
  return (count + kMaskBits - 1) / kMaskBits;
}

std::size_t align_up(std::size_t bytes) {
  constexpr std::size_t kAlignment = 256;  // cudaMalloc's alignment: keeps every array aligned
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

struct NmsLayout {
  int segments = 0;            // N * C
  int capacity = 0;            // candidates per segment that enter NMS: min(max_candidates_per_class, B)
  int words = 0;               // mask words per candidate row: ceil(capacity / 64)
  std::int64_t kept_slot = 0;  // survivors an image can have: C * capacity
  std::size_t segment_counts = 0, image_counts = 0, segment_begin = 0, segment_end = 0;
  std::size_t image_begin = 0, image_end = 0, candidate_keys[2] = {}, candidate_sort = 0, masks = 0;
  std::size_t kept_keys[2] = {}, kept_sort = 0, total = 0;
  std::size_t candidate_sort_bytes = 0, kept_sort_bytes = 0;
};

std::int64_t candidate_items(const NmsShape& shape) {
  return static_cast<std::int64_t>(shape.batch) * shape.classes * shape.boxes;
}

Result<NmsLayout> nms_layout(const NmsShape& shape, const NmsParams& params) {
  NmsLayout layout;
  layout.segments = shape.batch * shape.classes;
  layout.capacity = std::min(params.max_candidates_per_class, shape.boxes);
  layout.words = mask_words(layout.capacity);
  layout.kept_slot = static_cast<std::int64_t>(shape.classes) * layout.capacity;
  cub::DoubleBuffer<std::uint64_t> no_keys(nullptr, nullptr);
  FOVEA_TRY(sort_segments(nullptr, layout.candidate_sort_bytes, no_keys, candidate_items(shape),
                          layout.segments, nullptr, nullptr, nullptr));
  FOVEA_TRY(sort_segments(nullptr, layout.kept_sort_bytes, no_keys, shape.batch * layout.kept_slot,
                          shape.batch, nullptr, nullptr, nullptr));
  std::size_t offset = 0;
  auto place = [&offset](std::size_t bytes) {
    const std::size_t at = offset;
    offset += align_up(bytes);
    return at;
  };
  const auto segments = static_cast<std::size_t>(layout.segments);
  const auto batch = static_cast<std::size_t>(shape.batch);
  const auto candidates = static_cast<std::size_t>(candidate_items(shape));
  const auto kept = batch * static_cast<std::size_t>(layout.kept_slot);
  layout.segment_counts = place(segments * sizeof(std::uint32_t));
  layout.image_counts = place(batch * sizeof(std::uint32_t));
  layout.segment_begin = place(segments * sizeof(int));
  layout.segment_end = place(segments * sizeof(int));
  layout.image_begin = place(batch * sizeof(int));
  layout.image_end = place(batch * sizeof(int));
  layout.candidate_keys[0] = place(candidates * sizeof(std::uint64_t));
  layout.candidate_keys[1] = place(candidates * sizeof(std::uint64_t));
  layout.candidate_sort = place(layout.candidate_sort_bytes);
  layout.masks =
      place(segments * static_cast<std::size_t>(layout.capacity) * layout.words * sizeof(std::uint64_t));
  layout.kept_keys[0] = place(kept * sizeof(std::uint64_t));
  layout.kept_keys[1] = place(kept * sizeof(std::uint64_t));
  layout.kept_sort = place(layout.kept_sort_bytes);
  layout.total = offset;
  return layout;
}

template <typename T>
T* at(void* base, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

__device__ Box load_box(const float* boxes, std::int64_t index) {
  const float* b = boxes + index * 4;
  return normalized_box(Box{b[0], b[1], b[2], b[3]});
}

// Appends every (box, class) score above the threshold to its segment's slot as a key. Block-local
// counters per class turn thousands of global atomics into one per class per block.
__global__ void gather_candidates_kernel(const float* scores, int boxes, int classes, float score_threshold,
                                         int background_class, std::uint32_t* segment_counts,
                                         std::uint64_t* keys) {
  extern __shared__ std::uint32_t class_slots[];  // local counts, then global bases, per class
  const int image = blockIdx.y;
  const std::int64_t per_image = static_cast<std::int64_t>(boxes) * classes;
  const float* image_scores = scores + image * per_image;
  for (int c = threadIdx.x; c < classes; c += blockDim.x) class_slots[c] = 0;
  __syncthreads();
  float score[kGatherItems];
  std::uint32_t rank[kGatherItems];
  const std::int64_t tile_start = static_cast<std::int64_t>(blockIdx.x) * kGatherTile;
  for (int k = 0; k < kGatherItems; ++k) {
    const std::int64_t e = tile_start + k * kGatherThreads + threadIdx.x;
    score[k] = e < per_image ? image_scores[e] : 0.0f;
    const int c = static_cast<int>(e % classes);
    const bool pass = e < per_image && score[k] > score_threshold && c != background_class;
    rank[k] = pass ? atomicAdd(&class_slots[c], 1u) : UINT32_MAX;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < classes; c += blockDim.x) {
    if (class_slots[c] != 0) class_slots[c] = atomicAdd(&segment_counts[image * classes + c], class_slots[c]);
  }
  __syncthreads();
  for (int k = 0; k < kGatherItems; ++k) {
    if (rank[k] == UINT32_MAX) continue;
    const std::int64_t e = tile_start + k * kGatherThreads + threadIdx.x;
    const int c = static_cast<int>(e % classes);
    const std::int64_t slot = (static_cast<std::int64_t>(image) * classes + c) * boxes;
    keys[slot + class_slots[c] + rank[k]] = descending_score_key(score[k], static_cast<std::uint32_t>(e));
  }
}

// CUB's segment ranges: [i * slot, i * slot + min(count, limit)).
__global__ void slot_ranges_kernel(const std::uint32_t* counts, int n, std::int64_t slot, int* begin,
                                   int* end) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  begin[i] = static_cast<int>(i * slot);
  end[i] = static_cast<int>(i * slot + counts[i]);
}

// Block (row block rb, segment s), one thread per row candidate i: bit t of word cb says that i
// suppresses candidate cb * 64 + t (only lower-ranked ones, j > i, are ever set).
__global__ void iou_masks_kernel(const float* boxes, const std::uint64_t* sorted, const std::uint32_t* counts,
                                 int num_boxes, int classes, int capacity, int words, float iou_threshold,
                                 std::uint64_t* masks) {
  __shared__ Box columns[kMaskBits];
  const int s = blockIdx.y;
  const int count = min(static_cast<int>(counts[s]), capacity);
  const int rb = blockIdx.x;
  if (rb * kMaskBits >= count) return;
  const float* image_boxes = boxes + static_cast<std::int64_t>(s / classes) * num_boxes * 4;
  const std::uint64_t* segment = sorted + static_cast<std::int64_t>(s) * num_boxes;
  const int i = rb * kMaskBits + threadIdx.x;
  const Box row = i < count ? load_box(image_boxes, key_index(segment[i]) / classes) : Box{};
  std::uint64_t* row_masks = masks + (static_cast<std::int64_t>(s) * capacity + i) * words;
  for (int cb = rb; cb < mask_words(count); ++cb) {
    const int j = cb * kMaskBits + threadIdx.x;
    if (j < count) columns[threadIdx.x] = load_box(image_boxes, key_index(segment[j]) / classes);
    __syncthreads();
    if (i < count) {
      const int columns_here = min(kMaskBits, count - cb * kMaskBits);
      std::uint64_t bits = 0;
      for (int t = cb == rb ? threadIdx.x + 1 : 0; t < columns_here; ++t) {
        if (suppresses(row, columns[t], iou_threshold)) bits |= std::uint64_t{1} << t;
      }
      row_masks[cb] = bits;
    }
    __syncthreads();
  }
}

// One block per segment walks its candidates in rank order, 64 at a time: the 64 rows' masks come
// into shared memory in one coalesced load, one thread decides the 64 in order on the diagonal word
// (the only serial part), then the block ORs the kept rows into the words to the right. Survivors
// are appended to their image's list.
__global__ void select_kernel(const std::uint64_t* sorted, const std::uint32_t* counts,
                              const std::uint64_t* masks, int num_boxes, int classes, int capacity, int words,
                              std::int64_t kept_slot, std::uint32_t* image_counts, std::uint64_t* kept) {
  extern __shared__ std::uint64_t shared_words[];
  std::uint64_t* removed = shared_words;       // [words]
  std::uint64_t* tile = shared_words + words;  // [64][words]
  __shared__ std::uint64_t keep_bits;
  __shared__ std::uint32_t out_base;
  const int s = blockIdx.x;
  const int image = s / classes;
  const int count = min(static_cast<int>(counts[s]), capacity);
  const int used_words = mask_words(count);
  const std::uint64_t* segment = sorted + static_cast<std::int64_t>(s) * num_boxes;
  const std::uint64_t* segment_masks = masks + static_cast<std::int64_t>(s) * capacity * words;
  for (int w = threadIdx.x; w < used_words; w += blockDim.x) removed[w] = 0;
  for (int rb = 0; rb < used_words; ++rb) {
    const int rows = min(kMaskBits, count - rb * kMaskBits);
    const int tile_words = used_words - rb;  // words left of the diagonal are never read
    for (int idx = threadIdx.x; idx < rows * tile_words; idx += blockDim.x) {
      const int r = idx / tile_words;
      const int w = rb + idx % tile_words;
      tile[r * words + w] = segment_masks[static_cast<std::int64_t>(rb * kMaskBits + r) * words + w];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint64_t word = removed[rb];
      std::uint64_t keep = 0;
      for (int r = 0; r < rows; ++r) {
        if (((word >> r) & 1u) == 0) {
          keep |= std::uint64_t{1} << r;
          word |= tile[r * words + rb];
        }
      }
      keep_bits = keep;
      out_base = keep != 0 ? atomicAdd(&image_counts[image], static_cast<std::uint32_t>(__popcll(keep))) : 0;
    }
    __syncthreads();
    const std::uint64_t keep = keep_bits;
    for (int w = rb + 1 + threadIdx.x; w < used_words; w += blockDim.x) {
      std::uint64_t acc = 0;
      for (int r = 0; r < rows; ++r) {
        if ((keep >> r) & 1u) acc |= tile[r * words + w];
      }
      removed[w] |= acc;
    }
    const int r = threadIdx.x;
    if (r < rows && ((keep >> r) & 1u)) {
      const int position = __popcll(keep & ((std::uint64_t{1} << r) - 1));
      kept[image * kept_slot + out_base + position] = segment[rb * kMaskBits + r];
    }
    __syncthreads();
  }
}

// The first top_k of each image's sorted survivors, as Detections (scores read back from the input
// so their bits are the caller's, -0 included).
__global__ void write_detections_kernel(const float* boxes, const float* scores, const std::uint64_t* kept,
                                        const std::uint32_t* image_counts, int num_boxes, int classes,
                                        std::int64_t kept_slot, int top_k, Detection* detections,
                                        std::int32_t* out_counts) {
  const int image = blockIdx.x;
  const int count = min(static_cast<int>(image_counts[image]), top_k);
  if (threadIdx.x == 0) out_counts[image] = count;
  const float* image_boxes = boxes + static_cast<std::int64_t>(image) * num_boxes * 4;
  const float* image_scores = scores + static_cast<std::int64_t>(image) * num_boxes * classes;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    const std::uint32_t flat = key_index(kept[image * kept_slot + i]);
    const int box = static_cast<int>(flat / classes);
    detections[static_cast<std::int64_t>(image) * top_k + i] = Detection{
        image, static_cast<int>(flat % classes), box, image_scores[flat], load_box(image_boxes, box)};
  }
}

int blocks_for(std::int64_t items, int threads) {
  return static_cast<int>((items + threads - 1) / threads);
}

}  // namespace

Result<NmsPlan> plan_nms(const NmsShape& shape, const NmsParams& params) {
  FOVEA_TRY(check_nms(shape, params));
  FOVEA_ASSIGN_OR_RETURN(const NmsLayout layout, nms_layout(shape, params));
  return NmsPlan{layout.total, params.top_k};
}

Status run_nms_cuda(cudaStream_t stream, const NmsShape& shape, const NmsParams& params, const float* d_boxes,
                    const float* d_scores, void* d_workspace, std::size_t workspace_bytes,
                    const DetectionList& output) {
  FOVEA_NVTX_RANGE("nms");
  FOVEA_TRY(check_nms(shape, params));
  FOVEA_ASSIGN_OR_RETURN(NmsLayout layout, nms_layout(shape, params));
  if (workspace_bytes < layout.total) {
    // fmt's compile-time format strings do not build under nvcc; std::to_string does.
    return make_error(StatusCode::kInvalidArgument, "nms: workspace of ", std::to_string(workspace_bytes),
                      " bytes, the plan needs ", std::to_string(layout.total));
  }
  auto* segment_counts = at<std::uint32_t>(d_workspace, layout.segment_counts);
  auto* image_counts = at<std::uint32_t>(d_workspace, layout.image_counts);
  auto* segment_begin = at<int>(d_workspace, layout.segment_begin);
  auto* segment_end = at<int>(d_workspace, layout.segment_end);
  auto* image_begin = at<int>(d_workspace, layout.image_begin);
  auto* image_end = at<int>(d_workspace, layout.image_end);
  auto* masks = at<std::uint64_t>(d_workspace, layout.masks);
  FOVEA_CUDA_TRY(cudaMemsetAsync(segment_counts, 0, layout.segments * sizeof(std::uint32_t), stream));
  FOVEA_CUDA_TRY(cudaMemsetAsync(image_counts, 0, shape.batch * sizeof(std::uint32_t), stream));

  cub::DoubleBuffer<std::uint64_t> candidates(at<std::uint64_t>(d_workspace, layout.candidate_keys[0]),
                                              at<std::uint64_t>(d_workspace, layout.candidate_keys[1]));
  const std::int64_t per_image = static_cast<std::int64_t>(shape.boxes) * shape.classes;
  const dim3 gather_grid(blocks_for(per_image, kGatherTile), shape.batch);
  gather_candidates_kernel<<<gather_grid, kGatherThreads, shape.classes * sizeof(std::uint32_t), stream>>>(
      d_scores, shape.boxes, shape.classes, params.score_threshold, params.background_class, segment_counts,
      candidates.Current());
  FOVEA_CUDA_TRY_LAUNCH();
  slot_ranges_kernel<<<blocks_for(layout.segments, 256), 256, 0, stream>>>(
      segment_counts, layout.segments, shape.boxes, segment_begin, segment_end);
  FOVEA_CUDA_TRY_LAUNCH();
  FOVEA_TRY(sort_segments(at<void>(d_workspace, layout.candidate_sort), layout.candidate_sort_bytes,
                          candidates, candidate_items(shape), layout.segments, segment_begin, segment_end,
                          stream));

  const dim3 mask_grid(layout.words, layout.segments);
  iou_masks_kernel<<<mask_grid, kMaskBits, 0, stream>>>(d_boxes, candidates.Current(), segment_counts,
                                                        shape.boxes, shape.classes, layout.capacity,
                                                        layout.words, params.iou_threshold, masks);
  FOVEA_CUDA_TRY_LAUNCH();

  cub::DoubleBuffer<std::uint64_t> kept(at<std::uint64_t>(d_workspace, layout.kept_keys[0]),
                                        at<std::uint64_t>(d_workspace, layout.kept_keys[1]));
  const std::size_t select_shared =
      (1 + kMaskBits) * static_cast<std::size_t>(layout.words) * sizeof(std::uint64_t);
  select_kernel<<<layout.segments, kMaskBits, select_shared, stream>>>(
      candidates.Current(), segment_counts, masks, shape.boxes, shape.classes, layout.capacity, layout.words,
      layout.kept_slot, image_counts, kept.Current());
  FOVEA_CUDA_TRY_LAUNCH();
  slot_ranges_kernel<<<blocks_for(shape.batch, 256), 256, 0, stream>>>(
      image_counts, shape.batch, layout.kept_slot, image_begin, image_end);
  FOVEA_CUDA_TRY_LAUNCH();
  FOVEA_TRY(sort_segments(at<void>(d_workspace, layout.kept_sort), layout.kept_sort_bytes, kept,
                          shape.batch * layout.kept_slot, shape.batch, image_begin, image_end, stream));

  write_detections_kernel<<<shape.batch, kWriteThreads, 0, stream>>>(
      d_boxes, d_scores, kept.Current(), image_counts, shape.boxes, shape.classes, layout.kept_slot,
      params.top_k, output.detections, output.counts);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status copy_detections_to_host(cudaStream_t stream, const NmsShape& shape, const NmsParams& params,
                               const DetectionList& device, const DetectionList& host) {
  const std::size_t detections = static_cast<std::size_t>(shape.batch) * params.top_k;
  FOVEA_CUDA_TRY(cudaMemcpyAsync(host.detections, device.detections, detections * sizeof(Detection),
                                 cudaMemcpyDeviceToHost, stream));
  FOVEA_CUDA_TRY(cudaMemcpyAsync(host.counts, device.counts, shape.batch * sizeof(std::int32_t),
                                 cudaMemcpyDeviceToHost, stream));
  return Status::ok();
}

}  // namespace fovea::post
