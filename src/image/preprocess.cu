// Fused preprocess on the device. Designed for bandwidth: one thread per tensor pixel, so each
// warp writes 32 consecutive elements of every channel plane (NCHW) or 96 consecutive elements
// (NHWC); NV12 is read through the read-only cache (load_readonly = __ldg); per-image arguments
// travel by value in a __grid_constant__ struct, so there is no allocation or copy per launch;
// one launch covers up to 32 images (blockIdx.z = image).
#include <cuda_fp16.h>

#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/preprocess.h"

namespace fovea::image {

namespace {

// 32 images of 104 bytes plus the shared part stay under the classic 4 KiB parameter limit.
constexpr int kImagesPerLaunch = 32;
// 32 x 8 threads: a warp covers 32 consecutive pixels of one tensor row.
constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

struct PreprocessLaunch {
  detail::PreprocessImageArgs images[kImagesPerLaunch];
  detail::PreprocessCommon common;
  void* output;       // the tensor's first element of image `first_image`
  int width, height;  // tensor pixels per image
};
static_assert(sizeof(PreprocessLaunch) <= 4096, "kernel parameters above 4 KiB need a newer driver");

__device__ __forceinline__ void store(float* p, float v) {
  *p = v;
}
__device__ __forceinline__ void store(__half* p, float v) {
  *p = __float2half_rn(v);
}

template <typename Out, TensorLayout kLayout, ResizeFilter kFilter>
__global__ void preprocess_kernel(const __grid_constant__ PreprocessLaunch launch) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= launch.width || y >= launch.height) return;
  float values[3];
  detail::preprocess_pixel<kFilter>(launch.images[blockIdx.z], launch.common, x, y, values);
  const long long plane = static_cast<long long>(launch.width) * launch.height;
  Out* image = static_cast<Out*>(launch.output) + static_cast<long long>(blockIdx.z) * 3 * plane;
  for (int c = 0; c < 3; ++c) {
    const long long pixel = static_cast<long long>(y) * launch.width + x;
    store(image + (kLayout == TensorLayout::kNCHW ? c * plane + pixel : pixel * 3 + c), values[c]);
  }
}

template <typename Out, TensorLayout kLayout, ResizeFilter kFilter>
Status launch_preprocess(cudaStream_t stream, const ImageBatch& input, const PreprocessParams& params,
                         const PreprocessPlan& plan, const TensorView& output) {
  const std::size_t image_elements = 3ULL * static_cast<std::size_t>(params.width) * params.height;
  for (int begin = 0; begin < input.size(); begin += kImagesPerLaunch) {
    const int count = std::min(kImagesPerLaunch, input.size() - begin);
    PreprocessLaunch launch{};
    for (int j = 0; j < count; ++j) {
      launch.images[j] = detail::preprocess_image_args(
          input, params, plan.placements[static_cast<std::size_t>(begin + j)], begin + j);
    }
    launch.common = detail::preprocess_common(params);
    launch.output = static_cast<Out*>(output.data) + static_cast<std::size_t>(begin) * image_elements;
    launch.width = params.width;
    launch.height = params.height;
    const dim3 block(kBlockX, kBlockY);
    const dim3 grid((params.width + kBlockX - 1) / kBlockX, (params.height + kBlockY - 1) / kBlockY,
                    static_cast<unsigned>(count));
    preprocess_kernel<Out, kLayout, kFilter><<<grid, block, 0, stream>>>(launch);
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

template <typename Out>
Status dispatch_layout_filter(cudaStream_t stream, const ImageBatch& input, const PreprocessParams& params,
                              const PreprocessPlan& plan, const TensorView& output) {
  const bool nchw = params.layout == TensorLayout::kNCHW;
  if (params.filter == ResizeFilter::kNearest) {
    return nchw ? launch_preprocess<Out, TensorLayout::kNCHW, ResizeFilter::kNearest>(stream, input, params,
                                                                                      plan, output)
                : launch_preprocess<Out, TensorLayout::kNHWC, ResizeFilter::kNearest>(stream, input, params,
                                                                                      plan, output);
  }
  return nchw ? launch_preprocess<Out, TensorLayout::kNCHW, ResizeFilter::kBilinear>(stream, input, params,
                                                                                     plan, output)
              : launch_preprocess<Out, TensorLayout::kNHWC, ResizeFilter::kBilinear>(stream, input, params,
                                                                                     plan, output);
}

}  // namespace

Status run_preprocess_cuda(cudaStream_t stream, const ImageBatch& input, const PreprocessParams& params,
                           const TensorView& output) {
  FOVEA_NVTX_RANGE("preprocess");
  FOVEA_ASSIGN_OR_RETURN(const PreprocessPlan plan, plan_preprocess(input, params));
  if (!batch_on_device(input)) {
    return make_error(StatusCode::kInvalidArgument,
                      "run_preprocess_cuda: the images are not in device memory");
  }
  FOVEA_TRY(detail::check_preprocess_output(output, plan, params, MemoryKind::kDevice));
  return params.dtype == DataType::kFloat32
             ? dispatch_layout_filter<float>(stream, input, params, plan, output)
             : dispatch_layout_filter<__half>(stream, input, params, plan, output);
}

}  // namespace fovea::image
