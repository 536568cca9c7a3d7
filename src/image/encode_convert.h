// Conversion for encoding: RGB frames on the device become NV12 or YUV420P in pinned host memory,
// for CPU encoders (libx264) on GPUs without NVENC. The conversion runs on the device into a
// scratch batch the caller owns, then the planes are copied into the pinned host batch, all on the
// caller's stream; the host data is ready when that stream is (the caller waits on an event).
//
// | input              | scratch and output | conversion                                        |
// |--------------------|--------------------|---------------------------------------------------|
// | RGB8, BGR8, RGBA8  | NV12, YUV420P      | color_convert.h (matrix + range, 2x2 chroma avg)  |
//
// ROIs apply to the input; scratch and output images have the ROI's size. The CPU reference
// converts straight into the output.
#pragma once

#include "core/cuda_stream.h"
#include "core/status.h"
#include "image/batch.h"
#include "image/color_convert.h"

namespace fovea::image {

struct EncodeConvertParams {
  PixelFormat output_format = PixelFormat::kNV12;
  ColorMatrix matrix = ColorMatrix::kBt709;  // HD video is tagged BT.709
  ColorRange range = ColorRange::kLimited;   // what encoders and players assume by default
};

inline ColorConvertParams color_convert_params(const EncodeConvertParams& params) {
  return ColorConvertParams{params.output_format, params.matrix, params.range};
}

// The scratch and output sizes (one per input image; no workspace beyond the scratch batch).
Result<ColorConvertPlan> plan_rgb_to_yuv_for_encode(const ImageBatch& rgb, const EncodeConvertParams& params);

// `output` in host or pinned memory.
Status run_rgb_to_yuv_for_encode_cpu(const ImageBatch& rgb, const ImageBatch& output,
                                     const EncodeConvertParams& params);

// `rgb` and `scratch` in device memory, `output` in pinned host memory; scratch and output hold
// params.output_format images of the planned sizes. Enqueues the conversion and the copies on
// `stream` and returns without waiting for them.
#if defined(FOVEA_HAVE_CUDA)
Status run_rgb_to_yuv_for_encode_cuda(cudaStream_t stream, const ImageBatch& rgb, const ImageBatch& scratch,
                                      const ImageBatch& output, const EncodeConvertParams& params);
#endif

// Checks the batches of run_rgb_to_yuv_for_encode_cuda: formats, sizes and memory kinds.
Status check_rgb_to_yuv_for_encode(const ImageBatch& rgb, const ImageBatch& scratch, const ImageBatch& output,
                                   const EncodeConvertParams& params);

}  // namespace fovea::image
