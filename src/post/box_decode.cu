// The box decoders on the GPU: one thread per box, the same per-box math as the CPU reference.
#include <cstdint>

#include "core/cuda_check.h"
#include "post/box_decode.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

constexpr int kThreads = 256;

// A strided rank-3 input as a kernel argument.
template <typename T>
struct Input3 {
  const T* data;
  std::int64_t s0, s1, s2;
  __device__ float at(std::int64_t i0, std::int64_t i1, std::int64_t i2) const {
    return load_float(data + i0 * s0 + i1 * s1 + i2 * s2);
  }
};

template <typename T>
Input3<T> input3(const TensorView& t) {
  return Input3<T>{static_cast<const T*>(t.data), t.strides[0], t.strides[1], t.strides[2]};
}

template <typename T>
__global__ void ssd_decode_kernel(Input3<T> loc, const float* priors, std::int64_t prior_s0,
                                  std::int64_t prior_s1, int batch, int boxes, SsdDecodeParams params,
                                  float* out) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(batch) * boxes) return;
  const std::int64_t n = i / boxes, b = i % boxes;
  const float* p = priors + b * prior_s0;
  const Box prior{p[0], p[prior_s1], p[2 * prior_s1], p[3 * prior_s1]};
  store_box(out + i * 4, ssd_decode_box(loc.at(n, b, 0), loc.at(n, b, 1), loc.at(n, b, 2), loc.at(n, b, 3),
                                        prior, params));
}

template <typename T>
__global__ void yolo_decode_kernel(Input3<T> pred, int batch, int boxes, int classes, YoloDecodeParams params,
                                   float* out_boxes, float* out_scores) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(batch) * boxes) return;
  const std::int64_t n = i / boxes, b = i % boxes;
  store_box(out_boxes + i * 4,
            yolo_decode_box(pred.at(n, b, 0), pred.at(n, b, 1), pred.at(n, b, 2), pred.at(n, b, 3), params));
  const int first_class = params.has_objectness ? 5 : 4;
  const float objectness = params.has_objectness ? pred.at(n, b, 4) : 1.0f;
  for (int c = 0; c < classes; ++c) {
    out_scores[i * classes + c] = yolo_score(objectness, pred.at(n, b, first_class + c), params);
  }
}

int blocks_for(std::int64_t items) {
  return static_cast<int>((items + kThreads - 1) / kThreads);
}

}  // namespace

Status run_ssd_decode_cuda(cudaStream_t stream, const TensorView& loc, const TensorView& priors,
                           const SsdDecodeParams& params, const TensorView& boxes) {
  FOVEA_ASSIGN_OR_RETURN(const BoxDecodePlan plan, plan_ssd_decode(loc, priors, boxes));
  FOVEA_TRY(check_memory(loc, true, "loc"));
  FOVEA_TRY(check_memory(priors, true, "priors"));
  FOVEA_TRY(check_memory(boxes, true, "boxes"));
  const std::int64_t items = static_cast<std::int64_t>(plan.batch) * plan.boxes;
  dispatch_float_dtype(loc.dtype, [&](auto tag) {
    using T = decltype(tag);
    ssd_decode_kernel<T><<<blocks_for(items), kThreads, 0, stream>>>(
        input3<T>(loc), static_cast<const float*>(priors.data), priors.strides[0], priors.strides[1],
        plan.batch, plan.boxes, params, static_cast<float*>(boxes.data));
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status run_yolo_decode_cuda(cudaStream_t stream, const TensorView& predictions,
                            const YoloDecodeParams& params, const TensorView& boxes,
                            const TensorView& scores) {
  FOVEA_ASSIGN_OR_RETURN(const BoxDecodePlan plan, plan_yolo_decode(predictions, params, boxes, scores));
  FOVEA_TRY(check_memory(predictions, true, "predictions"));
  FOVEA_TRY(check_memory(boxes, true, "boxes"));
  FOVEA_TRY(check_memory(scores, true, "scores"));
  const std::int64_t items = static_cast<std::int64_t>(plan.batch) * plan.boxes;
  dispatch_float_dtype(predictions.dtype, [&](auto tag) {
    using T = decltype(tag);
    yolo_decode_kernel<T><<<blocks_for(items), kThreads, 0, stream>>>(
        input3<T>(predictions), plan.batch, plan.boxes, plan.classes, params, static_cast<float*>(boxes.data),
        static_cast<float*>(scores.data));
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace fovea::post
