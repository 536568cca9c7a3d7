// Box decoders: network outputs to corner boxes [N, B, 4] (and per-class scores [N, B, C]) in the
// layout nms.h takes.
//
// | decoder | input                                   | dtype          | output                        |
// |---------|-----------------------------------------|----------------|-------------------------------|
// | SSD     | loc [N, B, 4] (dx, dy, dw, dh); priors  | float32/float16| boxes [N, B, 4] float32       |
// |         | [B, 4] float32 (center or corner form)  | (loc)          |                               |
// | YOLO    | predictions [N, B, 4 (+1) + C]:         | float32/float16| boxes [N, B, 4], scores       |
// |         | cx, cy, w, h, [objectness], classes     |                | [N, B, C], float32            |
//
// Inputs may be strided (TensorView strides, in elements): YOLOv8's [N, 4 + C, B] output is passed
// as the view [N, B, 4 + C] with strides {(4 + C) * B, 1, B}. Outputs are dense. The CPU run takes
// host memory, the CUDA run device memory. expf differs in the last bits between the CPU and CUDA
// math libraries, so the two agree within kBoxTolerance rather than exactly.
//
// SSD (Caffe/TorchVision variance encoding), with the prior in center form (pcx, pcy, pw, ph):
//   cx = pcx + dx * variance_xy * pw        w = pw * exp(dw * variance_wh)
//   cy = pcy + dy * variance_xy * ph        h = ph * exp(dh * variance_wh)
//   box = (cx - w/2, cy - h/2, cx + w/2, cy + h/2) * (image_width, image_height, image_width, image_height)
// Corner-form priors (x1, y1, x2, y2) are first converted: pcx = (x1 + x2)/2, pw = x2 - x1.
//
// YOLO: box = (cx - w/2, cy - h/2, cx + w/2, cy + h/2) * (scale_x, scale_y, scale_x, scale_y);
// score[c] = objectness * class[c] (class[c] alone without objectness), each through a sigmoid
// first when apply_sigmoid (for raw logits).
#pragma once

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"
#include "post/post_math.h"

namespace fovea::post {

enum class PriorForm { kCenter, kCorner };

struct SsdDecodeParams {
  PriorForm prior_form = PriorForm::kCenter;
  float variance_xy = 0.1f;  // SSD300's variances
  float variance_wh = 0.2f;
  float image_width = 1.0f;  // 1 keeps normalized coordinates; the frame size gives pixels
  float image_height = 1.0f;
};

struct YoloDecodeParams {
  bool has_objectness = true;  // YOLOv5: yes; YOLOv8: no
  bool apply_sigmoid = false;  // true when the scores are logits
  float scale_x = 1.0f;
  float scale_y = 1.0f;
};

struct BoxDecodePlan {
  int batch = 0;
  int boxes = 0;
  int classes = 0;  // YOLO only
};

// loc [N, B, 4], priors [B, 4] → boxes [N, B, 4] (dense float32).
Result<BoxDecodePlan> plan_ssd_decode(const TensorView& loc, const TensorView& priors,
                                      const TensorView& boxes);
Status run_ssd_decode_cpu(const TensorView& loc, const TensorView& priors, const SsdDecodeParams& params,
                          const TensorView& boxes);
Status run_ssd_decode_cuda(cudaStream_t stream, const TensorView& loc, const TensorView& priors,
                           const SsdDecodeParams& params, const TensorView& boxes);

// predictions [N, B, 4 (+1) + C] → boxes [N, B, 4], scores [N, B, C] (dense float32).
Result<BoxDecodePlan> plan_yolo_decode(const TensorView& predictions, const YoloDecodeParams& params,
                                       const TensorView& boxes, const TensorView& scores);
Status run_yolo_decode_cpu(const TensorView& predictions, const YoloDecodeParams& params,
                           const TensorView& boxes, const TensorView& scores);
Status run_yolo_decode_cuda(cudaStream_t stream, const TensorView& predictions,
                            const YoloDecodeParams& params, const TensorView& boxes,
                            const TensorView& scores);

// The per-box math both runs share.
FOVEA_HD Box ssd_decode_box(float dx, float dy, float dw, float dh, Box prior, const SsdDecodeParams& p) {
  float pcx = prior.x1, pcy = prior.y1, pw = prior.x2, ph = prior.y2;
  if (p.prior_form == PriorForm::kCorner) {
    pcx = 0.5f * (prior.x1 + prior.x2);
    pcy = 0.5f * (prior.y1 + prior.y2);
    pw = prior.x2 - prior.x1;
    ph = prior.y2 - prior.y1;
  }
  const float cx = pcx + dx * p.variance_xy * pw;
  const float cy = pcy + dy * p.variance_xy * ph;
  const float half_w = 0.5f * pw * expf(dw * p.variance_wh);
  const float half_h = 0.5f * ph * expf(dh * p.variance_wh);
  return Box{(cx - half_w) * p.image_width, (cy - half_h) * p.image_height, (cx + half_w) * p.image_width,
             (cy + half_h) * p.image_height};
}

FOVEA_HD Box yolo_decode_box(float cx, float cy, float w, float h, const YoloDecodeParams& p) {
  return Box{(cx - 0.5f * w) * p.scale_x, (cy - 0.5f * h) * p.scale_y, (cx + 0.5f * w) * p.scale_x,
             (cy + 0.5f * h) * p.scale_y};
}

FOVEA_HD float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

FOVEA_HD float yolo_score(float objectness, float class_score, const YoloDecodeParams& p) {
  if (p.apply_sigmoid) class_score = sigmoid(class_score);
  if (!p.has_objectness) return class_score;
  return (p.apply_sigmoid ? sigmoid(objectness) : objectness) * class_score;
}

}  // namespace fovea::post
