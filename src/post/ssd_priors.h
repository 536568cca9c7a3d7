// SSD default boxes (priors) as torchvision's DefaultBoxGenerator makes them
// (torchvision/models/detection/anchor_utils.py), for SSD exports whose graph stops at the head
// (bbox_regression, cls_logits) and so carries no priors: [A, 4] corners x1, y1, x2, y2 in input
// pixels, the anchors SSD.forward hands to its BoxCoder. CPU only; computed once per model.
//
// Order and arithmetic follow torchvision: per feature map k, per cell (row-major), per width-height
// pair: (s_k, s_k), (s'_k, s'_k) with s'_k = sqrt(s_k * s_k+1), then (s_k sqrt(ar), s_k / sqrt(ar))
// and its transpose per aspect ratio; pairs computed in double and stored as float32, clamped to
// [0, 1] when clip; centers ((i + 0.5) / f_k) in float32 with f_k = image size / step (or the grid
// size without steps); corners (c -+ 0.5 * wh) * image size in float32.
#pragma once

#include <vector>

#include "core/status.h"

namespace fovea::post {

struct DefaultBoxConfig {
  std::vector<std::vector<double>> aspect_ratios;  // per feature map
  std::vector<double> scales;                      // feature maps + 1 (the last is s_K+1)
  std::vector<int> steps;                          // per feature map, or empty
  std::vector<int> grid_heights, grid_widths;      // the head's feature map sizes
  bool clip = true;
};

// torchvision.models.detection.ssd300_vgg16 at 300 x 300 (8,732 anchors).
DefaultBoxConfig ssd300_vgg16_default_boxes();
// torchvision.models.detection.ssdlite320_mobilenet_v3_large at 320 x 320 (3,234 anchors):
// min_ratio 0.2, max_ratio 0.95, feature maps 20, 10, 5, 3, 2, 1.
DefaultBoxConfig ssdlite320_default_boxes();

// [A * 4] floats. Refuses inconsistent configs (list lengths, empty grids).
Result<std::vector<float>> default_boxes(const DefaultBoxConfig& config, int image_width, int image_height);

}  // namespace fovea::post
