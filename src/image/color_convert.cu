#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/color_convert.h"

namespace fovea::image {

namespace {

using color_detail::ConvertConstants;
using color_detail::ConvertJob;

// Images per launch: their jobs travel as a kernel parameter, and 32 jobs (112 bytes each) plus the
// constants stay under the 4 KiB parameter limit that every CUDA version and GPU accepts. Larger
// batches take several launches.
constexpr int kMaxImagesPerLaunch = 32;

struct JobBatch {
  ConvertJob jobs[kMaxImagesPerLaunch];
};
static_assert(sizeof(JobBatch) + sizeof(ConvertConstants) <= 4096, "kernel parameters exceed 4 KiB");

// 32 threads along x make a warp read 32 consecutive luma samples (one coalesced transaction);
// 8 rows give 256-thread blocks, a size that keeps every SM busy for 1080p frames.
constexpr int kBlockWidth = 32;
constexpr int kBlockHeight = 8;

// One thread per output pixel (packed and gray outputs); blockIdx.z is the image. The job batch is
// __grid_constant__: indexing a by-value parameter at run time copies it into local memory.
template <PixelFormat Src, PixelFormat Dst>
__global__ void convert_pixels_kernel(const __grid_constant__ JobBatch batch, ConvertConstants k) {
  const ConvertJob& job = batch.jobs[blockIdx.z];
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x < job.width && y < job.height) color_detail::convert_pixel<Src, Dst>(job, k, x, y);
}

// One thread per 2x2 output block (4:2:0 outputs), which owns the block's chroma sample.
template <PixelFormat Src, PixelFormat Dst>
__global__ void convert_blocks_kernel(const __grid_constant__ JobBatch batch, ConvertConstants k) {
  const ConvertJob& job = batch.jobs[blockIdx.z];
  const int bx = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int by = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (bx < job.width / 2 && by < job.height / 2) color_detail::convert_block<Src, Dst>(job, k, bx, by);
}

dim3 grid_for(int width, int height, int images) {
  return dim3(static_cast<unsigned>((width + kBlockWidth - 1) / kBlockWidth),
              static_cast<unsigned>((height + kBlockHeight - 1) / kBlockHeight),
              static_cast<unsigned>(images));
}

// Converts images [first, first + count) of the batch in one launch.
Status launch_chunk(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                    const ConvertConstants& k, PixelFormat output_format, int first, int count) {
  JobBatch batch{};
  int max_width = 0;
  int max_height = 0;
  for (int j = 0; j < count; ++j) {
    const auto i = static_cast<std::size_t>(first + j);
    batch.jobs[j] = color_detail::make_convert_job(input.images[i], input.roi(first + j), output.images[i]);
    max_width = std::max(max_width, batch.jobs[j].width);
    max_height = std::max(max_height, batch.jobs[j].height);
  }
  const dim3 block(kBlockWidth, kBlockHeight);
  const auto per_pixel = [&](auto src, auto dst) {
    convert_pixels_kernel<decltype(src)::value, decltype(dst)::value>
        <<<grid_for(max_width, max_height, count), block, 0, stream>>>(batch, k);
  };
  const auto per_block = [&](auto src, auto dst) {
    convert_blocks_kernel<decltype(src)::value, decltype(dst)::value>
        <<<grid_for(max_width / 2, max_height / 2, count), block, 0, stream>>>(batch, k);
  };
  color_detail::dispatch_conversion(input.images[0].format, output_format, per_pixel, per_block);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

Status run_color_convert_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                              const ColorConvertParams& params) {
  FOVEA_NVTX_RANGE("color_convert");
  FOVEA_TRY(check_color_convert(input, output, params, /*device=*/true));
  const ConvertConstants k = color_detail::make_convert_constants(params);
  for (int first = 0; first < input.size(); first += kMaxImagesPerLaunch) {
    const int count = std::min(kMaxImagesPerLaunch, input.size() - first);
    FOVEA_TRY(launch_chunk(stream, input, output, k, params.output_format, first, count));
  }
  return Status::ok();
}

}  // namespace fovea::image
