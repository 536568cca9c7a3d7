// Tensor to RGB8 images on the GPU: one thread per pixel in blocks of 32 x 8 pixels, blockIdx.z the
// image. A warp reads 32 consecutive values of each channel plane and writes 96 consecutive bytes.
#include <algorithm>

#include "core/cuda_check.h"
#include "post/post_math.h"
#include "post/tensor_args.h"
#include "post/tensor_image.h"

namespace fovea::post {

namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

struct OutputImages {
  unsigned char* data[kTensorImagesPerLaunch];
  long long pitch[kTensorImagesPerLaunch];
};
static_assert(sizeof(OutputImages) + sizeof(detail::TensorImageMap) + sizeof(void*) + 3 * sizeof(int) <= 4096,
              "kernel parameters above 4 KiB need a newer driver");

// __grid_constant__: images are picked by blockIdx.z, and indexing a by-value parameter at run time
// copies the whole argument into each thread's local memory.
template <typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    tensor_image_kernel(const T* input, int channels, int height, int width, detail::TensorImageMap map,
                        const __grid_constant__ OutputImages images) {
  const int x = static_cast<int>(blockIdx.x) * kBlockX + static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(blockIdx.y) * kBlockY + static_cast<int>(threadIdx.y);
  if (x >= width || y >= height) return;
  const long long plane = static_cast<long long>(height) * width;
  const T* pixel = input + blockIdx.z * channels * plane + static_cast<long long>(y) * width + x;
  unsigned char* out = images.data[blockIdx.z] + y * images.pitch[blockIdx.z] + 3 * x;
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    out[c] =
        detail::tensor_value_to_u8(load_float(pixel + map.channel[c] * plane), map.scale[c], map.offset[c]);
  }
}

}  // namespace

Status run_tensor_to_image_cuda(cudaStream_t stream, const TensorView& input, const TensorImageParams& params,
                                std::span<const ImageView> outputs) {
  FOVEA_ASSIGN_OR_RETURN(const TensorImagePlan plan, plan_tensor_to_image(input, params, outputs));
  FOVEA_TRY(detail::check_tensor_image_memory(input, outputs, true));
  const detail::TensorImageMap map = detail::tensor_image_map(params, plan.channels);
  const long long image_elements = static_cast<long long>(plan.channels) * plan.height * plan.width;
  const dim3 block(kBlockX, kBlockY);
  for (int first = 0; first < plan.batch; first += kTensorImagesPerLaunch) {
    const int count = std::min(kTensorImagesPerLaunch, plan.batch - first);
    OutputImages images{};
    for (int i = 0; i < count; ++i) {
      const ImageView& view = outputs[static_cast<std::size_t>(first + i)];
      images.data[i] = static_cast<unsigned char*>(view.planes[0].data);
      images.pitch[i] = static_cast<long long>(view.planes[0].pitch);
    }
    const dim3 grid((plan.width + kBlockX - 1) / kBlockX, (plan.height + kBlockY - 1) / kBlockY,
                    static_cast<unsigned>(count));
    dispatch_float_dtype(input.dtype, [&](auto tag) {
      using T = decltype(tag);
      tensor_image_kernel<T>
          <<<grid, block, 0, stream>>>(static_cast<const T*>(input.data) + first * image_elements,
                                       plan.channels, plan.height, plan.width, map, images);
    });
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

}  // namespace fovea::post
