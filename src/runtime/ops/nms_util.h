// ONNX NonMaxSuppression's arithmetic, written once as FOVEA_HD functions for its CPU kernel
// (selection.cpp) and its CUDA kernel (cuda/ops/nms.cu). The box, IoU and ranking-key math it
// shares with fovea's detection NMS lives in core/box.h.
#pragma once

#include "core/box.h"
#include "core/host_device.h"

namespace fovea::runtime::ops {

// ---- ONNX NonMaxSuppression ----

// A candidate enters NMS when its score is above the threshold (strictly), or always when the
// model gives none. NaN never does: it has no rank (ONNX leaves it undefined), so it is dropped.
FOVEA_HD bool onnx_nms_candidate(float score, bool has_threshold, float threshold) {
  return !is_nan(score) && (!has_threshold || score > threshold);
}

// The box of ONNX's boxes[b][i]: corners (y1, x1, y2, x2) in either order, or with
// center_point_box (x_center, y_center, width, height). Centre boxes of negative size keep their
// negative area, and so never suppress.
FOVEA_HD Box onnx_nms_box(const float* b, bool center_point_box) {
  if (center_point_box) {
    const float half_w = div_rn(b[2], 2.0f);
    const float half_h = div_rn(b[3], 2.0f);
    return Box{sub_rn(b[0], half_w), sub_rn(b[1], half_h), add_rn(b[0], half_w), add_rn(b[1], half_h)};
  }
  return normalized_box(Box{b[1], b[0], b[3], b[2]});
}

// A kept box suppresses a lower-ranked candidate when their IoU is strictly above the threshold;
// boxes without a positive area never suppress nor get suppressed.
FOVEA_HD bool onnx_nms_suppresses(Box kept, Box candidate, float iou_threshold) {
  return box_area(kept) > 0.0f && box_area(candidate) > 0.0f && box_iou(kept, candidate) > iou_threshold;
}

}  // namespace fovea::runtime::ops
