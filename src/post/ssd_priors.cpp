// torchvision's DefaultBoxGenerator in plain loops (ssd_priors.h).
#include "post/ssd_priors.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace fovea::post {

DefaultBoxConfig ssd300_vgg16_default_boxes() {
  DefaultBoxConfig c;
  c.aspect_ratios = {{2}, {2, 3}, {2, 3}, {2, 3}, {2}, {2}};
  c.scales = {0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05};
  c.steps = {8, 16, 32, 64, 100, 300};
  c.grid_heights = c.grid_widths = {38, 19, 10, 5, 3, 1};
  return c;
}

DefaultBoxConfig ssdlite320_default_boxes() {
  DefaultBoxConfig c;
  c.aspect_ratios.assign(6, {2, 3});
  const double min_ratio = 0.2, max_ratio = 0.95;
  for (int k = 0; k < 6; ++k) c.scales.push_back(min_ratio + (max_ratio - min_ratio) * k / (6 - 1.0));
  c.scales.push_back(1.0);
  c.grid_heights = c.grid_widths = {20, 10, 5, 3, 2, 1};
  return c;
}

Result<std::vector<float>> default_boxes(const DefaultBoxConfig& c, int image_width, int image_height) {
  const std::size_t maps = c.aspect_ratios.size();
  if (maps == 0 || c.scales.size() != maps + 1 || c.grid_heights.size() != maps ||
      c.grid_widths.size() != maps || (!c.steps.empty() && c.steps.size() != maps) || image_width <= 0 ||
      image_height <= 0) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("default boxes: {} feature maps need {} scales, {} grid sizes and {} steps "
                                  "(or none), and a positive image size",
                                  maps, maps + 1, maps, maps));
  }
  std::vector<float> boxes;
  for (std::size_t k = 0; k < maps; ++k) {
    const int fh = c.grid_heights[k], fw = c.grid_widths[k];
    if (fh <= 0 || fw <= 0 || (!c.steps.empty() && c.steps[k] <= 0)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("default boxes: feature map {} has an empty grid or step", k));
    }
    std::vector<std::pair<float, float>> wh;
    const double s = c.scales[k], s_prime = std::sqrt(c.scales[k] * c.scales[k + 1]);
    wh.emplace_back(static_cast<float>(s), static_cast<float>(s));
    wh.emplace_back(static_cast<float>(s_prime), static_cast<float>(s_prime));
    for (double ar : c.aspect_ratios[k]) {
      const double root = std::sqrt(ar);
      wh.emplace_back(static_cast<float>(s * root), static_cast<float>(s / root));
      wh.emplace_back(static_cast<float>(s / root), static_cast<float>(s * root));
    }
    if (c.clip) {
      for (auto& [w, h] : wh) {
        w = std::clamp(w, 0.0f, 1.0f);
        h = std::clamp(h, 0.0f, 1.0f);
      }
    }
    const float f_x = c.steps.empty() ? static_cast<float>(fw)
                                      : static_cast<float>(static_cast<double>(image_width) / c.steps[k]);
    const float f_y = c.steps.empty() ? static_cast<float>(fh)
                                      : static_cast<float>(static_cast<double>(image_height) / c.steps[k]);
    const auto size_x = static_cast<float>(image_width), size_y = static_cast<float>(image_height);
    for (int y = 0; y < fh; ++y) {
      for (int x = 0; x < fw; ++x) {
        const float cx = (static_cast<float>(x) + 0.5f) / f_x, cy = (static_cast<float>(y) + 0.5f) / f_y;
        for (const auto& [w, h] : wh) {
          boxes.insert(boxes.end(), {(cx - 0.5f * w) * size_x, (cy - 0.5f * h) * size_y,
                                     (cx + 0.5f * w) * size_x, (cy + 0.5f * h) * size_y});
        }
      }
    }
  }
  return boxes;
}

}  // namespace fovea::post
