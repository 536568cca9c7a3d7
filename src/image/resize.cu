// Resize on the device: one thread per output pixel, one launch per chunk of images
// (blockIdx.z = image), per-image arguments passed by value in a __grid_constant__ struct so a
// launch allocates nothing. The per-pixel arithmetic is resize_pixel (image/resize_math.h), the
// same function the CPU reference runs.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/resize.h"

namespace fovea::image {

namespace {

// 16 images of 208 bytes keep the launch arguments under the classic 4 KiB parameter limit.
constexpr int kImagesPerLaunch = 16;
// 32 x 8 threads: a warp covers 32 consecutive output pixels of a row (coalesced stores).
constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

struct ResizeLaunch {
  ResizeImageArgs images[kImagesPerLaunch];
  float pad[4];
};
static_assert(sizeof(ResizeLaunch) <= 4096, "kernel parameters above 4 KiB need a newer driver");

template <class Pixels>
__global__ void resize_kernel(const __grid_constant__ ResizeLaunch launch) {
  const ResizeImageArgs& a = launch.images[blockIdx.z];
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= a.dst_width || y >= a.dst_height) return;
  resize_pixel<Pixels>(a, launch.pad, x, y);
}

// One launch per chunk of up to kImagesPerLaunch images.
template <class Pixels>
Status launch_resize(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                     const ResizeParams& params, const ResizePlan& plan) {
  for (int begin = 0; begin < input.size(); begin += kImagesPerLaunch) {
    const int count = std::min(kImagesPerLaunch, input.size() - begin);
    ResizeLaunch launch{};
    std::copy(params.pad_value.begin(), params.pad_value.end(), launch.pad);
    int max_width = 0;
    int max_height = 0;
    for (int j = 0; j < count; ++j) {
      const int i = begin + j;
      launch.images[j] =
          resize_image_args(input, output, params, plan.placements[static_cast<std::size_t>(i)], i);
      max_width = std::max(max_width, launch.images[j].dst_width);
      max_height = std::max(max_height, launch.images[j].dst_height);
    }
    const dim3 block(kBlockX, kBlockY);
    const dim3 grid((max_width + kBlockX - 1) / kBlockX, (max_height + kBlockY - 1) / kBlockY,
                    static_cast<unsigned>(count));
    resize_kernel<Pixels><<<grid, block, 0, stream>>>(launch);
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

}  // namespace

Status run_resize_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                       const ResizeParams& params) {
  FOVEA_NVTX_RANGE("resize");
  FOVEA_ASSIGN_OR_RETURN(const ResizePlan plan, plan_resize(input, output, params));
  if (!batch_on_device(input)) {
    return make_error(StatusCode::kInvalidArgument, "run_resize_cuda: the images are not in device memory");
  }
  return visit_resize_pixels(input.images[0].format, input.images[0].channels, [&](auto pixels) {
    return launch_resize<decltype(pixels)>(stream, input, output, params, plan);
  });
}

}  // namespace fovea::image
