// Fused preprocess on the device. Designed for bandwidth: one thread per 4 tensor pixels, so each
// warp writes 128 consecutive elements of every channel plane (NCHW) or 384 consecutive elements
// (NHWC); NV12 is read through the read-only cache (load_readonly = __ldg); per-image arguments
// travel by value in a __grid_constant__ struct, so there is no allocation or copy per launch;
// one launch covers up to 32 images (blockIdx.z = image).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/preprocess.h"

namespace fovea::image {

namespace {

// 32 images of 104 bytes plus the shared part stay under the classic 4 KiB parameter limit.
constexpr int kImagesPerLaunch = 32;
// Each thread computes 4 consecutive pixels of a row: the row's taps and weights are computed
// once, more loads are in flight per thread, and an NCHW plane gets one 8-byte (f16) or 16-byte
// (f32) store. For 8 x 1080p -> 3x544x960 f16 on an H200 (preprocess_bench), 1 pixel per thread
// took 61 us and 4 took 56 us (before YUV blending: 40 us); Nsight Compute shows the kernel bound
// by integer/ALU instructions, not memory.
constexpr int kPixelsPerThread = 4;
// 32 x 8 threads: a warp covers 128 consecutive pixels of one tensor row.
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

// Stores kPixelsPerThread values of one channel to consecutive elements, 8- or 16-byte aligned.
__device__ __forceinline__ void store_vector(float* p, const float (*values)[3], int c) {
  *reinterpret_cast<float4*>(p) = make_float4(values[0][c], values[1][c], values[2][c], values[3][c]);
}
__device__ __forceinline__ void store_vector(__half* p, const float (*values)[3], int c) {
  const __half2 lo = __floats2half2_rn(values[0][c], values[1][c]);
  const __half2 hi = __floats2half2_rn(values[2][c], values[3][c]);
  uint2 bits;
  bits.x = *reinterpret_cast<const unsigned*>(&lo);
  bits.y = *reinterpret_cast<const unsigned*>(&hi);
  *reinterpret_cast<uint2*>(p) = bits;
}

template <typename Out, TensorLayout kLayout, ResizeFilter kFilter>
__global__ void preprocess_kernel(const __grid_constant__ PreprocessLaunch launch) {
  const int x0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * kPixelsPerThread;
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x0 >= launch.width || y >= launch.height) return;
  const detail::PreprocessImageArgs& a = launch.images[blockIdx.z];
  const int count = min(kPixelsPerThread, launch.width - x0);
  float values[kPixelsPerThread][3];
#pragma unroll
  for (int i = 0; i < kPixelsPerThread; ++i) {
    if (i < count) detail::preprocess_pixel<kFilter>(a, launch.common, x0 + i, y, values[i]);
  }
  const long long plane = static_cast<long long>(launch.width) * launch.height;
  Out* image = static_cast<Out*>(launch.output) + static_cast<long long>(blockIdx.z) * 3 * plane;
  const long long pixel = static_cast<long long>(y) * launch.width + x0;
  for (int c = 0; c < 3; ++c) {
    if constexpr (kLayout == TensorLayout::kNCHW) {
      Out* dst = image + c * plane + pixel;
      if (count == kPixelsPerThread &&
          reinterpret_cast<std::uintptr_t>(dst) % (sizeof(Out) * kPixelsPerThread) == 0) {
        store_vector(dst, values, c);
      } else {
        for (int i = 0; i < count; ++i) store(dst + i, values[i][c]);
      }
    } else {
      for (int i = 0; i < count; ++i) store(image + (pixel + i) * 3 + c, values[i][c]);
    }
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
    const int threads_x = (params.width + kPixelsPerThread - 1) / kPixelsPerThread;
    const dim3 grid((threads_x + kBlockX - 1) / kBlockX, (params.height + kBlockY - 1) / kBlockY,
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
  for (const ImageView& view : input.images) {
    // The kernel loads each U, V pair as one 16-bit word.
    if (reinterpret_cast<std::uintptr_t>(view.planes[1].data) % 2 != 0 || view.planes[1].pitch % 2 != 0) {
      return make_error(StatusCode::kInvalidArgument,
                        "run_preprocess_cuda: NV12 chroma rows must be 2-byte aligned");
    }
  }
  return params.dtype == DataType::kFloat32
             ? dispatch_layout_filter<float>(stream, input, params, plan, output)
             : dispatch_layout_filter<__half>(stream, input, params, plan, output);
}

}  // namespace fovea::image
