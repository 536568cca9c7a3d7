// Gaussian and box blur: separable filters over each image's ROI, with OpenCV's border modes.
//
// | input format  | output format | channels filtered           |
// |---------------|---------------|-----------------------------|
// | kRGB8, kBGR8  | same          | 3, each on its own          |
// | kRGBA8        | same          | 4 (alpha blurred too)       |
// | kGRAY8        | same          | 1                           |
// | kPlanarF32    | same          | every plane on its own      |
//
// Each input ROI is blurred as if it were the whole image (the border mode supplies the pixels
// beyond the ROI's edges, as OpenCV's BORDER_ISOLATED does) and written to the output ROI, which must
// have the same size. uint8 results are the float sums rounded once (to_u8), so they match
// cv::GaussianBlur and cv::blur within ±1 (OpenCV rounds fixed-point kernels instead).
// The output must not alias the input: the CUDA kernel reads neighbors that other blocks write.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"
#include "image/color_math.h"

namespace fovea::image {

// OpenCV's names (cv::BorderTypes): for the row abcdefgh,
//   kReplicate  aaa|abcdefgh|hhh    kReflect    cba|abcdefgh|hgf
//   kReflect101 dcb|abcdefgh|gfe    kConstant   vvv|abcdefgh|vvv (v = border_value)
enum class BorderMode { kReplicate, kReflect101, kConstant, kReflect };

enum class BlurKind { kGaussian, kBox };

// Kernels up to 255 taps wide (radius 127): the CUDA kernel keeps its weights in the launch
// parameters (2 KiB of the 4 KiB that kernel arguments may take).
inline constexpr int kMaxBlurKernelSize = 255;

struct BlurParams {
  BlurKind kind = BlurKind::kGaussian;
  int kernel_width = 5;  // odd, 1..kMaxBlurKernelSize
  int kernel_height = 5;
  // Gaussian only, as cv::GaussianBlur: sigma_y <= 0 takes sigma_x; a sigma <= 0 comes from its
  // kernel size (0.3 * ((ksize - 1) * 0.5 - 1) + 0.8).
  double sigma_x = 0.0;
  double sigma_y = 0.0;
  BorderMode border = BorderMode::kReflect101;
  float border_value = 0.0f;  // kConstant only, on the sample scale (0..255 for uint8)
};

struct BlurPlan {
  std::vector<std::array<int, 2>> output_sizes;  // {width, height} of each output ROI
  std::size_t workspace_bytes = 0;               // the CUDA run needs none
};

// The normalized 1-D weights (cv::getGaussianKernel for kGaussian, 1/ksize for kBox).
std::vector<float> blur_weights(BlurKind kind, int ksize, double sigma);

Result<BlurPlan> plan_blur(const ImageBatch& input, const BlurParams& params);
Status run_blur_cpu(const ImageBatch& input, const ImageBatch& output, const BlurParams& params);
Status run_blur_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                     const BlurParams& params);

// Where sample p of a row of `length` samples comes from under `border` (OpenCV's
// borderInterpolate); -1 for kConstant outside the row.
FOVEA_HD int border_index(int p, int length, BorderMode border) {
  if (p >= 0 && p < length) return p;
  if (border == BorderMode::kConstant) return -1;
  if (border == BorderMode::kReplicate || length == 1) return p < 0 ? 0 : length - 1;
  const int delta = border == BorderMode::kReflect101 ? 1 : 0;
  do {  // a kernel wider than the image reflects more than once
    p = p < 0 ? -p - 1 + delta : 2 * length - p - 1 - delta;
  } while (p < 0 || p >= length);
  return p;
}

namespace detail {
// One 2-D plane to filter: a packed image's ROI, or one plane of a planar float image's ROI.
struct PlaneJob {
  const void* src = nullptr;
  std::size_t src_pitch = 0;
  void* dst = nullptr;
  std::size_t dst_pitch = 0;
  int width = 0;
  int height = 0;
};
// Validates the batches and params (plan_blur's checks) before a run.
Status check_blur(const ImageBatch& input, const ImageBatch& output, const BlurParams& params);
// The planes image i contributes: 1 for packed formats, `channels` for kPlanarF32.
int plane_count(const ImageView& view);
PlaneJob plane_job(const ImageBatch& input, const ImageBatch& output, int image, int plane);

// The one rounding step of a filtered sample: uint8 rounds and clamps, float stores as is.
FOVEA_HD void store_sample(unsigned char* p, float v) {
  *p = to_u8(v);
}
FOVEA_HD void store_sample(float* p, float v) {
  *p = v;
}
}  // namespace detail

}  // namespace fovea::image
