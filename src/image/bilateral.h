// Joint bilateral filter: refines a mask along the edges of the frame it was computed from (as
// the CV-CUDA segmentation sample does after upscaling a low-resolution class mask).
//
// | mask   | guide                          | output | color distance                     |
// |--------|--------------------------------|--------|------------------------------------|
// | kGRAY8 | kRGB8, kBGR8, kRGBA8 (alpha unused) | kGRAY8 | sum of absolute channel differences |
// | kGRAY8 | kGRAY8                         | kGRAY8 | absolute difference                |
//
// out(p) = sum_q w(p, q) mask(q) / sum_q w(p, q) over the disc |q - p| <= radius, with
// w = exp(-|q - p|^2 / (2 sigma_space^2) - d(guide(q), guide(p))^2 / (2 sigma_color^2)), the
// weights of cv::bilateralFilter (OpenCV's color distance is the same L1 sum) taken from the guide.
// Pixels beyond the ROI come from `border` (not kConstant). All three ROIs must have the same
// size; the output must not alias the mask.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"
#include "image/blur.h"

namespace fovea::image {

struct BilateralParams {
  int diameter = 9;           // <= 0: 2 * round(1.5 * sigma_space) + 1, as OpenCV
  float sigma_color = 50.0f;  // > 0, on the 0..255 scale
  float sigma_space = 5.0f;   // > 0, in pixels
  BorderMode border = BorderMode::kReflect101;
};

struct BilateralPlan {
  std::vector<std::array<int, 2>> output_sizes;  // {width, height} of each output ROI
  std::size_t workspace_bytes = 0;               // the CUDA run needs none
};

Result<BilateralPlan> plan_joint_bilateral(const ImageBatch& mask, const ImageBatch& guide,
                                           const BilateralParams& params);
Status run_joint_bilateral_cpu(const ImageBatch& mask, const ImageBatch& guide, const ImageBatch& output,
                               const BilateralParams& params);
Status run_joint_bilateral_cuda(cudaStream_t stream, const ImageBatch& mask, const ImageBatch& guide,
                                const ImageBatch& output, const BilateralParams& params);

namespace detail {

struct BilateralJob {
  const std::uint8_t* mask = nullptr;
  std::size_t mask_pitch = 0;
  const std::uint8_t* guide = nullptr;
  std::size_t guide_pitch = 0;
  std::uint8_t* out = nullptr;
  std::size_t out_pitch = 0;
  int width = 0;
  int height = 0;
  int guide_bytes = 1;     // bytes per guide pixel
  int guide_channels = 1;  // channels in the color distance
};

// The filter's constants, derived once from the params.
struct BilateralKernel {
  int radius = 0;
  float space_coeff = 0.0f;  // 1 / (2 sigma_space^2)
  float color_coeff = 0.0f;  // 1 / (2 sigma_color^2)
  BorderMode border = BorderMode::kReflect101;
};

Status check_bilateral(const ImageBatch& mask, const ImageBatch& guide, const ImageBatch* output,
                       const BilateralParams& params);
BilateralKernel bilateral_kernel(const BilateralParams& params);
BilateralJob bilateral_job(const ImageBatch& mask, const ImageBatch& guide, const ImageBatch& output,
                           int image);

// The value of a mask that is constant over the pixel's disc, or -1. Where it is constant the
// filter's result is that value (a weighted mean of equal values, which to_u8 rounds back to it
// exactly), so the weights need not be computed: for a segmentation mask that is everywhere but
// near the edges, which is what makes refining a 1080p mask cheap.
FOVEA_HD int constant_mask_value(const BilateralJob& job, const BilateralKernel& k, int x, int y) {
  const int value = job.mask[y * job.mask_pitch + x];
  for (int dy = -k.radius; dy <= k.radius; ++dy) {
    const std::uint8_t* row = job.mask + border_index(y + dy, job.height, k.border) * job.mask_pitch;
    for (int dx = -k.radius; dx <= k.radius; ++dx) {
      if (dx * dx + dy * dy > k.radius * k.radius) continue;
      if (row[border_index(x + dx, job.width, k.border)] != value) return -1;
    }
  }
  return value;
}

FOVEA_HD std::uint8_t joint_bilateral_pixel(const BilateralJob& job, const BilateralKernel& k, int x, int y) {
  if (const int constant = constant_mask_value(job, k, x, y); constant >= 0) {
    return static_cast<std::uint8_t>(constant);
  }
  const std::uint8_t* center = job.guide + y * job.guide_pitch + x * job.guide_bytes;
  float sum = 0.0f;
  float weights = 0.0f;
  for (int dy = -k.radius; dy <= k.radius; ++dy) {
    const int sy = border_index(y + dy, job.height, k.border);
    for (int dx = -k.radius; dx <= k.radius; ++dx) {
      if (dx * dx + dy * dy > k.radius * k.radius) continue;
      const int sx = border_index(x + dx, job.width, k.border);
      const std::uint8_t* g = job.guide + sy * job.guide_pitch + sx * job.guide_bytes;
      int distance = 0;
      for (int c = 0; c < job.guide_channels; ++c)
        distance += g[c] > center[c] ? g[c] - center[c] : center[c] - g[c];
      const float w = expf(-static_cast<float>(dx * dx + dy * dy) * k.space_coeff -
                           static_cast<float>(distance * distance) * k.color_coeff);
      sum += w * static_cast<float>(job.mask[sy * job.mask_pitch + sx]);
      weights += w;
    }
  }
  return to_u8(sum / weights);  // the center's weight is 1, so weights >= 1
}

}  // namespace detail

}  // namespace fovea::image
