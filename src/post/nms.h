// Detection postprocessing after box decoding: score threshold → class-aware NMS → top-k per image,
// for a whole batch in one pass.
//
// | input  | layout        | dtype   | memory (CUDA run)  |
// |--------|---------------|---------|--------------------|
// | boxes  | [N, B, 4]     | float32 | device             | corners x1, y1, x2, y2 (shared by the classes)
// | scores | [N, B, C]     | float32 | device             | per-class probabilities (after softmax/sigmoid)
// | output | [N, top_k]    | Detection, dense; counts [N] int32, device
//
// The result, per image (the definition the CPU reference implements in plain loops):
//   1. Candidates are the (box, class) pairs with score > score_threshold, class != background_class.
//      NaN scores fail the comparison and are dropped; -inf is dropped; +inf ranks first.
//   2. Per class, candidates are ranked by score, descending; equal scores rank by the flat index
//      box * C + class, ascending (so the lower box index first). Only the first
//      max_candidates_per_class of each class go on (Caffe SSD's and TensorRT's per-class top-k).
//   3. Greedy NMS per class in rank order: a candidate is kept unless a kept candidate of the same
//      class has IoU > iou_threshold with it (strictly: IoU exactly at the threshold keeps both).
//      IoU is box_iou (post_math.h) on boxes normalized so that x1 <= x2 and y1 <= y2; zero-area
//      boxes have IoU 0 with everything (never suppress nor get suppressed); identical boxes of
//      positive area have IoU 1.
//   4. The kept candidates of all classes are ranked by the same rule (score, then flat index) and
//      the first top_k are the output, in that order, with their boxes normalized.
// CPU and CUDA compute IoU with the same function and the same float operations, so their outputs
// are identical: same detections, same order, same bits.
//
// The CUDA run (no per-class loop, no host round trip): one kernel gathers candidates of all
// (image, class) segments with 64-bit keys (descending score, ascending flat index); a CUB segmented
// sort orders each segment; a kernel computes, per segment, 64-bit masks of the lower-ranked
// candidates each one suppresses; a kernel walks each segment's masks in rank order (one block per
// segment) and appends survivors to their image's list; a second segmented sort orders each image's
// survivors; a kernel writes the first top_k.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda_stream.h"
#include "core/status.h"
#include "post/post_math.h"

namespace fovea::post {

struct NmsShape {
  int batch = 0;    // N
  int boxes = 0;    // B, boxes per image
  int classes = 0;  // C, score columns per box (background included when it has a column)
};

// Classes per launch are bounded by the candidate kernel's shared-memory counters (4 bytes each in
// the 48 KiB a block gets without opting in).
inline constexpr int kMaxNmsClasses = 12000;

// The selection kernel keeps a block of 65 mask rows of ceil(max_candidates_per_class / 64) words in
// the 48 KiB of shared memory a block gets without opting in: at most 94 words.
inline constexpr int kMaxCandidatesPerClass = 94 * 64;

struct NmsParams {
  float score_threshold = 0.05f;
  float iou_threshold = 0.5f;
  int top_k = 200;  // detections per image, over all classes
  // 1024 keeps all candidates of realistic inputs (SSD300 has ~100-400 per class at 0.05) while
  // bounding the suppression masks: 1024 x 16 words of 8 bytes per (image, class).
  int max_candidates_per_class = 1024;
  int background_class = -1;  // a class column to ignore (SSD's 0), or -1
};

struct Detection {
  std::int32_t image = 0;
  std::int32_t class_id = 0;
  std::int32_t box_index = 0;  // the box (prior/anchor) it came from, 0..B-1
  float score = 0.0f;
  Box box;  // normalized: x1 <= x2, y1 <= y2
};

// Where a run writes: detections[n * top_k + i] for i < counts[n].
struct DetectionList {
  Detection* detections = nullptr;  // [N * top_k]
  std::int32_t* counts = nullptr;   // [N]
};

struct NmsPlan {
  std::size_t workspace_bytes = 0;  // for run_nms_cuda (device memory, 256-byte aligned)
  int detections_per_image = 0;     // top_k: the stride of DetectionList::detections
};

// Validates the shape and params (bad ones give kInvalidArgument).
Status check_nms(const NmsShape& shape, const NmsParams& params);
// Validates and sizes the CUDA run's workspace; in a CUDA build this asks CUB for its sort's
// temporary storage, which needs a device (kDeviceError without one). CPU-only builds report 0.
Result<NmsPlan> plan_nms(const NmsShape& shape, const NmsParams& params);

// The reference: host pointers; `output` must hold N * top_k detections and N counts.
Status run_nms_cpu(const NmsShape& shape, const NmsParams& params, const float* boxes, const float* scores,
                   const DetectionList& output);

// Device pointers; `workspace` holds plan.workspace_bytes (256-byte aligned, as cudaMalloc gives).
// Enqueues everything on `stream`; the host does not wait.
Status run_nms_cuda(cudaStream_t stream, const NmsShape& shape, const NmsParams& params, const float* d_boxes,
                    const float* d_scores, void* d_workspace, std::size_t workspace_bytes,
                    const DetectionList& output);

// Enqueues the copy of a device DetectionList into host memory (pinned, for the copy to be
// asynchronous) on `stream`; the host reads it after the stream or an event says it is done.
Status copy_detections_to_host(cudaStream_t stream, const NmsShape& shape, const NmsParams& params,
                               const DetectionList& device, const DetectionList& host);

}  // namespace fovea::post
