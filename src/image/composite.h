// Mask compositing: a blend of two images by a mask (a sharp subject over a blurred background),
// and a colored mask overlay.
//
// | op      | images (same format)          | mask   | formula (m = mask / 255)                   |
// |---------|-------------------------------|--------|--------------------------------------------|
// | blend   | kRGB8, kBGR8, kRGBA8, kNV12   | kGRAY8 | out = m * foreground + (1 - m) * background |
// | overlay | kRGB8, kBGR8, kRGBA8, kNV12   | kGRAY8 | out = (1 - a m) * image + a m * color       |
//
// Every operand's ROI selects its region and all of an op's ROIs must have the same size (even
// origin and size for kNV12). NV12 chroma takes the mean of the mask's 2x2 block (rounded). The
// overlay leaves RGBA's alpha as it is and converts its RGB color to Y'CbCr for kNV12 with the
// configured matrix and range. Outputs may alias an input image (every pixel is read before it is
// written by the same thread), not the mask.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"
#include "image/color_math.h"

namespace fovea::image {

struct CompositePlan {
  std::vector<std::array<int, 2>> output_sizes;  // {width, height} of each output ROI
  std::size_t workspace_bytes = 0;               // the CUDA runs need none
};

struct OverlayParams {
  std::array<std::uint8_t, 3> color{0, 255, 0};  // R, G, B
  float alpha = 0.5f;                            // 0..1
  ColorMatrix matrix = ColorMatrix::kBt709;      // kNV12 only
  ColorRange range = ColorRange::kLimited;
};

Result<CompositePlan> plan_blend(const ImageBatch& foreground, const ImageBatch& background,
                                 const ImageBatch& mask);
Status run_blend_cpu(const ImageBatch& foreground, const ImageBatch& background, const ImageBatch& mask,
                     const ImageBatch& output);
Status run_blend_cuda(cudaStream_t stream, const ImageBatch& foreground, const ImageBatch& background,
                      const ImageBatch& mask, const ImageBatch& output);

Result<CompositePlan> plan_overlay(const ImageBatch& image, const ImageBatch& mask,
                                   const OverlayParams& params);
Status run_overlay_cpu(const ImageBatch& image, const ImageBatch& mask, const ImageBatch& output,
                       const OverlayParams& params);
Status run_overlay_cuda(cudaStream_t stream, const ImageBatch& image, const ImageBatch& mask,
                        const ImageBatch& output, const OverlayParams& params);

namespace detail {

// One plane of one image: rows of `elements` bytes, `channels` bytes per pixel, the mask sampled
// at full resolution (subsample 1) or as 2x2 means (NV12 chroma).
struct CompositeJob {
  const std::uint8_t* a = nullptr;  // foreground, or the overlaid image
  std::size_t a_pitch = 0;
  const std::uint8_t* b = nullptr;  // background (blend only)
  std::size_t b_pitch = 0;
  const std::uint8_t* mask = nullptr;
  std::size_t mask_pitch = 0;
  std::uint8_t* out = nullptr;
  std::size_t out_pitch = 0;
  int elements = 0;
  int rows = 0;
  int channels = 1;
  int subsample = 1;
  float color[4] = {};       // overlay: the color of each channel in the plane's own space
  int colored_channels = 0;  // overlay: channels from here on are copied (RGBA's alpha)
};

inline constexpr int kMaxCompositePlanes = 2;

// The planes of image i; `b` may be null (overlay). Returns how many were written to `jobs`.
int composite_jobs(const ImageBatch& a, const ImageBatch* b, const ImageBatch& mask, const ImageBatch& output,
                   int image, const OverlayParams& params, CompositeJob* jobs);
Status check_blend(const ImageBatch& foreground, const ImageBatch& background, const ImageBatch& mask,
                   const ImageBatch* output);
Status check_overlay(const ImageBatch& image, const ImageBatch& mask, const ImageBatch* output,
                     const OverlayParams& params);

FOVEA_HD int mask_sample(const CompositeJob& job, int element, int row) {
  const int x = element / job.channels;
  if (job.subsample == 1) return job.mask[row * job.mask_pitch + x];
  const std::uint8_t* top = job.mask + 2 * row * job.mask_pitch + 2 * x;
  const std::uint8_t* bottom = top + job.mask_pitch;
  return (top[0] + top[1] + bottom[0] + bottom[1] + 2) / 4;
}

// out = m * fg + (1 - m) * bg with m = mask / 255, rounded: exact integers, so the CPU and the GPU
// agree bit for bit. Equal to to_u8(x / 255.0f) for every x in 0..65025 (no x / 255 lies within
// float error of a .5 tie: the nearest are 0.002 away), without the division and conversions.
// Shared with the fused background blur (blur_composite.h).
FOVEA_HD std::uint8_t blend_u8(int m, int fg, int bg) {
  return static_cast<std::uint8_t>((m * fg + (255 - m) * bg + 127) / 255);
}

FOVEA_HD std::uint8_t blend_element(const CompositeJob& job, int element, int row) {
  return blend_u8(mask_sample(job, element, row), job.a[row * job.a_pitch + element],
                  job.b[row * job.b_pitch + element]);
}

FOVEA_HD std::uint8_t overlay_element(const CompositeJob& job, float alpha, int element, int row) {
  const int channel = element % job.channels;
  const float v = job.a[row * job.a_pitch + element];
  if (channel >= job.colored_channels) return static_cast<std::uint8_t>(v);
  const float am = alpha * (static_cast<float>(mask_sample(job, element, row)) / 255.0f);
  return to_u8((1.0f - am) * v + am * job.color[channel]);
}

}  // namespace detail

}  // namespace fovea::image
