// Resize: each image's source ROI resampled into its output image, optionally keeping the aspect
// ratio (letterbox or top-left) and padding the rest with a per-channel value.
//
// | format      | filters                               | compat        | notes                      |
// |-------------|---------------------------------------|---------------|----------------------------|
// | kRGB8/kBGR8 | nearest, bilinear, area, bicubic      | OpenCV, Pillow| channels kept as they are  |
// | kRGBA8      | same                                  | same          | alpha resampled like color |
// | kGRAY8      | same                                  | same          |                            |
// | kPlanarF32  | same                                  | same          | 1..4 channels, not clamped |
//
// Output image i has input image i's format (and channel count) and its own size; all images of
// a batch share one format. The source ROI is a crop: taps outside it replicate its edge (as
// cv::resize(src(roi)) and Pillow's img.crop(roi).resize(...)). OpenCV's area filter is for
// downscaling; asking it to upscale an axis is an error (use bilinear). The exact arithmetic of
// every filter/compat pair is in image/resize_math.h.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "core/cuda_stream.h"
#include "core/status.h"
#include "image/batch.h"
#include "image/resize_math.h"

namespace fovea::image {

struct ResizeParams {
  ResizeFilter filter = ResizeFilter::kBilinear;
  ResizeCompat compat = ResizeCompat::kOpenCv;
  ResizeFit fit = ResizeFit::kStretch;
  // Fills the output outside the placed ROI, per channel, on the sample scale (0..255 for u8).
  std::array<float, 4> pad_value{0.0f, 0.0f, 0.0f, 0.0f};
};

struct ResizePlan {
  std::vector<ResizePlacement> placements;  // one per image: where its ROI landed, and the scale
  std::size_t workspace_bytes = 0;          // the op needs none
};

// Validates the batches and params and computes each image's placement. Errors: empty batches,
// different batch sizes, unsupported or mixed formats, zero-sized images, empty or out-of-bounds
// ROIs, output ROIs (the output is always written whole), OpenCV area upscaling.
Result<ResizePlan> plan_resize(const ImageBatch& input, const ImageBatch& output, const ResizeParams& params);

// Host memory. Writes every pixel of every output image.
Status run_resize_cpu(const ImageBatch& input, const ImageBatch& output, const ResizeParams& params);

// Device memory, one launch per 16 images; asynchronous on `stream`.
Status run_resize_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                       const ResizeParams& params);

// The per-image arguments shared by the CPU reference and the kernel (after plan_resize).
ResizeImageArgs resize_image_args(const ImageBatch& input, const ImageBatch& output,
                                  const ResizeParams& params, const ResizePlacement& placement, int i);

// Calls f(Pixels{}) with the pixel access type of a (validated) format, so the CPU loop and the
// kernel launch are each written once for all formats.
template <class F>
auto visit_resize_pixels(PixelFormat format, int channels, F&& f) {
  switch (format) {
    case PixelFormat::kGRAY8: return f(PackedU8Pixels<1>{});
    case PixelFormat::kRGBA8: return f(PackedU8Pixels<4>{});
    case PixelFormat::kPlanarF32:
      switch (channels) {
        case 1: return f(PlanarF32Pixels<1>{});
        case 2: return f(PlanarF32Pixels<2>{});
        case 3: return f(PlanarF32Pixels<3>{});
        default: return f(PlanarF32Pixels<4>{});
      }
    default: return f(PackedU8Pixels<3>{});
  }
}

}  // namespace fovea::image
