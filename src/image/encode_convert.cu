#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/encode_convert.h"

namespace fovea::image {

// Copies every plane of every scratch image into the matching output image, on `stream`.
static Status enqueue_download(cudaStream_t stream, const ImageBatch& scratch, const ImageBatch& output) {
  for (int i = 0; i < scratch.size(); ++i) {
    const ImageView& from = scratch.images[static_cast<std::size_t>(i)];
    const ImageView& to = output.images[static_cast<std::size_t>(i)];
    FOVEA_ASSIGN_OR_RETURN(const FormatLayout layout, format_layout(from.format, from.width, from.height));
    for (int p = 0; p < layout.num_planes; ++p) {
      FOVEA_CUDA_TRY(cudaMemcpy2DAsync(
          to.planes[p].data, to.planes[p].pitch, from.planes[p].data, from.planes[p].pitch,
          static_cast<std::size_t>(layout.planes[p].width_bytes),
          static_cast<std::size_t>(layout.planes[p].height), cudaMemcpyDeviceToHost, stream));
    }
  }
  return Status::ok();
}

Status run_rgb_to_yuv_for_encode_cuda(cudaStream_t stream, const ImageBatch& rgb, const ImageBatch& scratch,
                                      const ImageBatch& output, const EncodeConvertParams& params) {
  FOVEA_NVTX_RANGE("encode_convert");
  FOVEA_TRY(check_rgb_to_yuv_for_encode(rgb, scratch, output, params));
  FOVEA_TRY(run_color_convert_cuda(stream, rgb, scratch, color_convert_params(params)));
  return enqueue_download(stream, scratch, output);
}

}  // namespace fovea::image
