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
// math libraries; the decoders use exp_rn below (single-rounded operations only), so the CPU and
// CUDA runs compute the same bits. Tests still compare them within kBoxTolerance.
//
// SSD (Caffe/TorchVision variance encoding), with the prior in center form (pcx, pcy, pw, ph):
//   cx = pcx + dx * variance_xy * pw        w = pw * exp(dw * variance_wh)
//   cy = pcy + dy * variance_xy * ph        h = ph * exp(dh * variance_wh)
//   box = (cx - w/2, cy - h/2, cx + w/2, cy + h/2) * (image_width, image_height, image_width, image_height)
// Corner-form priors (x1, y1, x2, y2) are first converted: pcx = (x1 + x2)/2, pw = x2 - x1.
//
// SSD with coder kTorchvision: torchvision.models.detection._utils.BoxCoder.decode_single with
// weights (weight_xy, weight_xy, weight_wh, weight_wh) = (10, 10, 5, 5) for SSD300/SSDLite, in its
// order of operations (each one rounded on its own, as PyTorch's elementwise kernels do):
//   w = x2 - x1, cx = x1 + 0.5 * w (corner priors; center priors give cx, w directly)
//   dx = loc_x / weight_xy, dw = min(loc_w / weight_wh, max_log_scale)   (bbox_xform_clip = log(1000/16))
//   pcx = dx * w + cx, pw = exp(dw) * w, box = (pcx - 0.5 * pw, ..., pcx + 0.5 * pw, ...)
// then scaled by (image_width, image_height) like the variance coder (1 for torchvision's pixel
// anchors).
//
// YOLO: box = (cx - w/2, cy - h/2, cx + w/2, cy + h/2) * (scale_x, scale_y, scale_x, scale_y);
// score[c] = objectness * class[c] (class[c] alone without objectness), each through a sigmoid
// first when apply_sigmoid (for raw logits).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"
#include "post/post_math.h"

namespace fovea::post {

enum class PriorForm { kCenter, kCorner };

// kVariance: Caffe SSD (multiply by the variances); kTorchvision: torchvision's BoxCoder.
enum class SsdBoxCoder { kVariance, kTorchvision };

struct SsdDecodeParams {
  PriorForm prior_form = PriorForm::kCenter;
  float variance_xy = 0.1f;  // SSD300's variances
  float variance_wh = 0.2f;
  float image_width = 1.0f;  // 1 keeps normalized coordinates; the frame size gives pixels
  float image_height = 1.0f;
  SsdBoxCoder coder = SsdBoxCoder::kVariance;
  // kTorchvision only: SSD's BoxCoder(weights=(10.0, 10.0, 5.0, 5.0)) and bbox_xform_clip =
  // math.log(1000.0 / 16) (torchvision/models/detection/ssd.py and _utils.py).
  float weight_xy = 10.0f;
  float weight_wh = 5.0f;
  float max_log_scale = 4.135166556742356f;
};

// torchvision's SSD300-VGG16 / SSDLite320 decoding: corner anchors in input pixels.
inline SsdDecodeParams torchvision_ssd_decode_params() {
  SsdDecodeParams p;
  p.prior_form = PriorForm::kCorner;
  p.coder = SsdBoxCoder::kTorchvision;
  return p;
}

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

// exp(x) from single-rounded float operations only, so host and device compute the same bits
// (expf differs between the CPU and CUDA math libraries). Within 2 ulp of exp over the float range:
// x = k ln2 + r with |r| <= ln2/2 (Cody-Waite: k * kLn2Hi is exact for |k| <= 255), exp(r) by its
// Taylor polynomial of degree 7 (truncation error r^8/8! < 6e-9 relative), times 2^k in two exact
// power-of-two steps. NaN gives NaN, +inf inf, -inf 0.
FOVEA_HD float exp_rn(float x) {
  if (is_nan(x)) return x;
  if (x > 88.72283935546875f) return bits_to_float(0x7f800000u);  // above log(FLT_MAX): inf
  if (x < -104.0f) return 0.0f;                                   // below half the least subnormal
  constexpr float kLog2e = 1.44269502162933349609375f;
  constexpr float kLn2Hi = 0.693145751953125f;         // 0x3f317200: 15 significant bits
  constexpr float kLn2Lo = 1.428606765330187045e-06f;  // ln 2 - kLn2Hi
  const float k = rintf(mul_rn(x, kLog2e));
  const float r = sub_rn(sub_rn(x, mul_rn(k, kLn2Hi)), mul_rn(k, kLn2Lo));
  float p = 1.0f / 5040.0f;
  p = add_rn(mul_rn(p, r), 1.0f / 720.0f);
  p = add_rn(mul_rn(p, r), 1.0f / 120.0f);
  p = add_rn(mul_rn(p, r), 1.0f / 24.0f);
  p = add_rn(mul_rn(p, r), 1.0f / 6.0f);
  p = add_rn(mul_rn(p, r), 0.5f);
  p = add_rn(mul_rn(p, r), 1.0f);
  p = add_rn(mul_rn(p, r), 1.0f);
  const int ki = static_cast<int>(k);  // -150..128
  const int k1 = ki / 2, k2 = ki - k1;
  p = mul_rn(p, bits_to_float(static_cast<std::uint32_t>(k1 + 127) << 23));
  return mul_rn(p, bits_to_float(static_cast<std::uint32_t>(k2 + 127) << 23));
}

// The per-box math both runs share.
FOVEA_HD Box ssd_decode_box(float dx, float dy, float dw, float dh, Box prior, const SsdDecodeParams& p) {
  float pcx = prior.x1, pcy = prior.y1, pw = prior.x2, ph = prior.y2;
  if (p.prior_form == PriorForm::kCorner) {
    pw = sub_rn(prior.x2, prior.x1);
    ph = sub_rn(prior.y2, prior.y1);
    if (p.coder == SsdBoxCoder::kTorchvision) {
      pcx = add_rn(prior.x1, mul_rn(0.5f, pw));
      pcy = add_rn(prior.y1, mul_rn(0.5f, ph));
    } else {
      pcx = mul_rn(0.5f, add_rn(prior.x1, prior.x2));
      pcy = mul_rn(0.5f, add_rn(prior.y1, prior.y2));
    }
  }
  float cx, cy, half_w, half_h;
  if (p.coder == SsdBoxCoder::kTorchvision) {
    cx = add_rn(mul_rn(div_rn(dx, p.weight_xy), pw), pcx);
    cy = add_rn(mul_rn(div_rn(dy, p.weight_xy), ph), pcy);
    // fminf would turn a NaN delta into the clip value; torch.clamp keeps NaN.
    const float sw = div_rn(dw, p.weight_wh), sh = div_rn(dh, p.weight_wh);
    half_w = mul_rn(0.5f, mul_rn(exp_rn(sw > p.max_log_scale ? p.max_log_scale : sw), pw));
    half_h = mul_rn(0.5f, mul_rn(exp_rn(sh > p.max_log_scale ? p.max_log_scale : sh), ph));
  } else {
    cx = add_rn(pcx, mul_rn(mul_rn(dx, p.variance_xy), pw));
    cy = add_rn(pcy, mul_rn(mul_rn(dy, p.variance_xy), ph));
    half_w = mul_rn(mul_rn(0.5f, pw), exp_rn(mul_rn(dw, p.variance_wh)));
    half_h = mul_rn(mul_rn(0.5f, ph), exp_rn(mul_rn(dh, p.variance_wh)));
  }
  return Box{mul_rn(sub_rn(cx, half_w), p.image_width), mul_rn(sub_rn(cy, half_h), p.image_height),
             mul_rn(add_rn(cx, half_w), p.image_width), mul_rn(add_rn(cy, half_h), p.image_height)};
}

FOVEA_HD Box yolo_decode_box(float cx, float cy, float w, float h, const YoloDecodeParams& p) {
  const float half_w = mul_rn(0.5f, w), half_h = mul_rn(0.5f, h);
  return Box{mul_rn(sub_rn(cx, half_w), p.scale_x), mul_rn(sub_rn(cy, half_h), p.scale_y),
             mul_rn(add_rn(cx, half_w), p.scale_x), mul_rn(add_rn(cy, half_h), p.scale_y)};
}

FOVEA_HD float sigmoid(float x) {
  return div_rn(1.0f, add_rn(1.0f, exp_rn(-x)));
}

FOVEA_HD float yolo_score(float objectness, float class_score, const YoloDecodeParams& p) {
  if (p.apply_sigmoid) class_score = sigmoid(class_score);
  if (!p.has_objectness) return class_score;
  return mul_rn(p.apply_sigmoid ? sigmoid(objectness) : objectness, class_score);
}

}  // namespace fovea::post
