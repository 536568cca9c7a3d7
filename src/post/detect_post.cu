// The detection postprocess on the GPU: one decode kernel writes the frame boxes and the scores NMS
// sees into the workspace, post::nms does the rest, all enqueued on the caller's stream (no host
// round trip, no allocation). The arithmetic is detect_post_math.h's, shared with the CPU reference.
#include <cstdint>
#include <string>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "post/detect_post.h"
#include "post/detect_post_math.h"

namespace fovea::post {

namespace {

using detail::DetectArgs;
using detail::DetectTensors;

// Kernel parameters above 4 KiB need CUDA 12.1 and Volta or newer (32,764 bytes); __grid_constant__
// keeps the kernels reading the table in place instead of copying it per thread.
static_assert(sizeof(DetectArgs) < 32000, "DetectArgs must fit in the kernel parameter space");

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// SSD with softmax: one warp per anchor, lanes over the classes (coalesced rows of C logits); the
// max, the sum (detail::softmax_sum's order) and the best class are butterfly reductions.
template <typename T>
__global__ void ssd_softmax_kernel(const __grid_constant__ DetectArgs a, DetectTensors<T> t, float* boxes,
                                   float* scores) {
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (warp >= static_cast<std::int64_t>(a.batch) * a.rows) return;  // the whole warp leaves together
  const int n = static_cast<int>(warp / a.rows), b = static_cast<int>(warp % a.rows);
  Box box{};
  const bool kept =
      detail::frame_box(detail::raw_box(a, t, n, b), a.mappings[n], a.min_width, a.min_height, box);
  if (lane == 0) store_box(boxes + warp * 4, box);
  float max = detail::negative_infinity();
  for (int c = lane; c < a.classes; c += kWarp) max = fmaxf(max, detail::raw_score(a, t, n, b, c));
  for (int o = kWarp / 2; o > 0; o /= 2) max = fmaxf(max, __shfl_xor_sync(kFullMask, max, o));
  float sum = 0.0f;
  for (int c = lane; c < a.classes; c += kWarp) {
    sum = add_rn(sum, exp_rn(sub_rn(detail::raw_score(a, t, n, b, c), max)));
  }
  for (int o = kWarp / 2; o > 0; o /= 2) sum = add_rn(sum, __shfl_xor_sync(kFullMask, sum, o));
  int best = -1;
  if (a.best_class_only) {
    float best_score = 0.0f;
    for (int c = lane; c < a.classes; c += kWarp) {
      const float s = detail::ssd_probability(detail::raw_score(a, t, n, b, c), max, sum);
      if (c != a.background_class && detail::better_class(s, c, best_score, best)) {
        best = c;
        best_score = s;
      }
    }
    for (int o = kWarp / 2; o > 0; o /= 2) {
      const float other_score = __shfl_xor_sync(kFullMask, best_score, o);
      const int other = __shfl_xor_sync(kFullMask, best, o);
      if (other >= 0 && detail::better_class(other_score, other, best_score, best)) {
        best = other;
        best_score = other_score;
      }
    }
  }
  float* out = scores + warp * a.score_columns;
  for (int c = lane; c < a.classes; c += kWarp) {
    const float s = detail::ssd_probability(detail::raw_score(a, t, n, b, c), max, sum);
    out[c] = detail::counted_score(a, kept, best, c, s);
  }
}

// Every other layout: one thread per candidate, looping over the classes (YOLOv8's [N, 4 + C, A]
// and DetectNet's planes are read coalesced across the threads).
template <typename T>
__global__ void decode_kernel(const __grid_constant__ DetectArgs a, DetectTensors<T> t, float* boxes,
                              float* scores) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(a.batch) * a.candidates) return;
  const int n = static_cast<int>(i / a.candidates), b = static_cast<int>(i % a.candidates);
  Box box{};
  const bool kept =
      detail::frame_box(detail::raw_box(a, t, n, b), a.mappings[n], a.min_width, a.min_height, box);
  store_box(boxes + i * 4, box);
  float* out = scores + i * a.score_columns;
  if (a.kind == DetectLayoutKind::kNmsOutputs) {
    const int c = detail::nms_output_class(a, t, n, b);
    out[0] = c >= 0 ? detail::counted_score(a, kept, -1, c, detail::raw_score(a, t, n, b, 0))
                    : detail::negative_infinity();
    return;
  }
  int best = -1;
  if (a.best_class_only) {
    if (a.kind == DetectLayoutKind::kDetectNet) {
      best = detail::detectnet_best_class(a, t, n, b);
    } else {
      float best_score = 0.0f;
      for (int c = 0; c < a.classes; ++c) {
        const float s = detail::raw_score(a, t, n, b, c);
        if (c != a.background_class && detail::better_class(s, c, best_score, best)) {
          best = c;
          best_score = s;
        }
      }
    }
  }
  for (int c = 0; c < a.classes; ++c) {
    out[c] = detail::counted_score(a, kept, best, c, detail::raw_score(a, t, n, b, c));
  }
}

// kNmsOutputs: the detections' class ids from the model's class output.
template <typename T>
__global__ void nms_output_classes_kernel(const __grid_constant__ DetectArgs a, DetectTensors<T> t, int top_k,
                                          DetectionList output) {
  const int n = blockIdx.x;
  for (int i = threadIdx.x; i < output.counts[n]; i += blockDim.x) {
    Detection& d = output.detections[static_cast<std::int64_t>(n) * top_k + i];
    d.class_id = detail::nms_output_class(a, t, n, d.box_index);
  }
}

int blocks_for(std::int64_t threads) {
  return static_cast<int>((threads + kThreads - 1) / kThreads);
}

template <typename T>
Status launch(cudaStream_t stream, const DetectPostPlan& plan, const DetectInputs& inputs,
              const DetectArgs& args, float* boxes, float* scores) {
  const DetectTensors<T> tensors = detail::detect_tensors<T>(plan, inputs);
  if (args.kind == DetectLayoutKind::kSsd && args.softmax) {
    const std::int64_t threads = static_cast<std::int64_t>(args.batch) * args.rows * kWarp;
    ssd_softmax_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(args, tensors, boxes, scores);
  } else {
    const std::int64_t threads = static_cast<std::int64_t>(args.batch) * args.candidates;
    decode_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(args, tensors, boxes, scores);
  }
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

template <typename T>
Status launch_classes(cudaStream_t stream, const DetectPostPlan& plan, const DetectInputs& inputs,
                      const DetectArgs& args, const DetectionList& output) {
  nms_output_classes_kernel<T><<<args.batch, 128, 0, stream>>>(args, detail::detect_tensors<T>(plan, inputs),
                                                               plan.detections_per_image, output);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

Status run_detect_post_cuda(cudaStream_t stream, const DetectPostPlan& plan, const DetectInputs& inputs,
                            void* d_workspace, std::size_t workspace_bytes, const DetectionList& output) {
  FOVEA_NVTX_RANGE("detect_post");
  FOVEA_ASSIGN_OR_RETURN(const DetectArgs args, detail::make_detect_args(plan, inputs, true));
  if (workspace_bytes < plan.workspace_bytes || d_workspace == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "detect: workspace of ", std::to_string(workspace_bytes),
                      " bytes, the plan needs ", std::to_string(plan.workspace_bytes));
  }
  FOVEA_ASSIGN_OR_RETURN(const NmsPlan nms_plan, plan_nms(plan.nms_shape, plan.nms_params));
  const detail::DetectWorkspace w = detail::detect_workspace_layout(plan.nms_shape, nms_plan.workspace_bytes);
  char* base = static_cast<char*>(d_workspace);
  auto* boxes = reinterpret_cast<float*>(base + w.boxes);
  auto* scores = reinterpret_cast<float*>(base + w.scores);
  const bool half = plan.layout.dtype == DataType::kFloat16;
  FOVEA_TRY(half ? launch<std::uint16_t>(stream, plan, inputs, args, boxes, scores)
                 : launch<float>(stream, plan, inputs, args, boxes, scores));
  FOVEA_TRY(run_nms_cuda(stream, plan.nms_shape, plan.nms_params, boxes, scores, base + w.nms, w.nms_bytes,
                         output));
  if (plan.layout.kind == DetectLayoutKind::kNmsOutputs) {
    FOVEA_TRY(half ? launch_classes<std::uint16_t>(stream, plan, inputs, args, output)
                   : launch_classes<float>(stream, plan, inputs, args, output));
  }
  return Status::ok();
}

}  // namespace fovea::post
