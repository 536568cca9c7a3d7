// Background blur in one pass: out = m * frame + (1 - m) * blur(frame) with m = mask / 255, the
// sharp subject over its own blurred background. The CPU reference is run_blur (BlurParams) followed
// by run_blend (foreground = frame, background = the blurred frame). The CUDA kernel never writes the
// blurred frame: it reads the frame and the mask once and writes the output once, and it blurs on the
// tensor cores in half precision, so its bytes are the reference's or one step off (the blend itself
// is exact; blur_composite.cu says why the blur is within 0.3 of the float sum).
//
// | frame / output | mask   | kernel sizes  | borders                                            |
// |----------------|--------|---------------|----------------------------------------------------|
// | kRGB8, kBGR8   | kGRAY8 | odd, 1..31    | all four; kConstant with an integer 0..255 value   |
// | kRGBA8         | kGRAY8 | (both axes)   | (the kernel stages the frame's bytes, border too)  |
//
// Gaussian and box kernels as in blur.h (alpha is blurred and blended too). Every operand's ROI
// selects its region and all ROIs of an image must have the same size. The output must not alias
// the frame (the kernel reads neighbors that other blocks write) nor the mask.
#pragma once

#include "core/cuda_stream.h"
#include "image/batch.h"
#include "image/blur.h"
#include "image/composite.h"

namespace fovea::image {

// The CUDA kernel's band matrices are built for a radius of 3, 7 or 15 (kernels up to 7, 15, 31 taps;
// smaller kernels are padded with zero weights), so 31 is the widest it takes.
inline constexpr int kMaxBlurCompositeKernelSize = 31;

Result<CompositePlan> plan_blur_composite(const ImageBatch& frame, const ImageBatch& mask,
                                          const BlurParams& params);
// The reference: run_blur_cpu into a temporary host image, then run_blend_cpu.
Status run_blur_composite_cpu(const ImageBatch& frame, const ImageBatch& mask, const ImageBatch& output,
                              const BlurParams& params);
Status run_blur_composite_cuda(cudaStream_t stream, const ImageBatch& frame, const ImageBatch& mask,
                               const ImageBatch& output, const BlurParams& params);

namespace detail {
// plan_blur_composite's checks, plus the output's when `output` is not null.
Status check_blur_composite(const ImageBatch& frame, const ImageBatch& mask, const ImageBatch* output,
                            const BlurParams& params);
}  // namespace detail

}  // namespace fovea::image
