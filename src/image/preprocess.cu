// Fused preprocess on the device. Designed for bandwidth: each thread computes a strip of
// consecutive pixels of one tensor row, so the row's source rows and weights are computed once
// per strip and each strip leaves as 16-byte stores; images are read through the read-only cache;
// per-image arguments travel by value in a __grid_constant__ struct, so there is no allocation or
// copy per launch; one launch covers up to 32 images (blockIdx.z = image). Exact 2:1 horizontal
// downscales (1920 -> 960) take a fast path that reads each strip's taps with one 16-byte load
// per source row and plane (detail::halves_columns says when).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/preprocess.h"

namespace fovea::image {

namespace {

using detail::kTapCount;

// 32 images of 112 bytes plus the shared part stay under the classic 4 KiB parameter limit.
constexpr int kImagesPerLaunch = 32;
// Tensor pixels per thread: 8 f16 values of a plane are one 16-byte store, and in the 2:1 fast
// path the strip's 16 source columns are one 16-byte load per plane and row. For 8 x 1080p ->
// 3x544x960 f16 NCHW on an H200 (preprocess_bench, CUDA graph replay), 4 pixels per thread with
// per-pixel row math took 40 us and was ALU-bound (Nsight Compute); these strips with the fast
// path take 20 us, 83% of the device-to-device copy bandwidth (f32: 77%, NHWC: 80%). The general
// path on the same frames: 21.6 us to 3x384x640, 43 us to 3x543x961.
constexpr int kStrip = detail::kPreprocessStrip;
// 32 x 8 threads: a warp covers 256 consecutive pixels of one tensor row (its row math and its
// padding test are warp-uniform).
constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

struct PreprocessLaunch {
  detail::PreprocessImageArgs images[kImagesPerLaunch];
  detail::PreprocessCommon commons[detail::kPreprocessSourceCount];  // indexed by the image's source
  void* output;       // the tensor's first element of image `first_image`
  int width, height;  // tensor pixels per image
};
static_assert(sizeof(PreprocessLaunch) <= 4096, "kernel parameters above 4 KiB need a newer driver");

// Byte-to-float without the integer-to-float conversion (a slow-pipe instruction): __byte_perm
// places bytes of `word` in the low mantissa bits of 2^23 (bit pattern 0x4B000000; selector
// nibbles 4 and 7 pick its 0x00 and 0x4B bytes), which reads as the float 2^23 + value, exactly;
// the caller subtracts 2^23 together with its own offset.
constexpr unsigned kMagicBits = 0x4B000000u;
constexpr float kMagic = 8388608.0f;
__device__ __forceinline__ float magic_float(unsigned word, unsigned selector) {
  return __int_as_float(static_cast<int>(__byte_perm(word, kMagicBits, selector)));
}
__host__ __device__ constexpr unsigned byte_selector(int byte) {
  return 0x7440u | static_cast<unsigned>(byte);
}
__host__ __device__ constexpr unsigned lane16_selector(int lane) {
  return 0x7400u | static_cast<unsigned>(2 * lane + 1) << 4 | static_cast<unsigned>(2 * lane);
}

// The 2:1 fast path's sampling: Y', U', V' (offsets removed, as preprocess_pixel blends them) of
// the kStrip pixels whose taps start at source column `column` (even, 16-byte aligned). Tensor
// pixel i takes columns 2i and 2i+1 (bilinear: both at weight 0.5; nearest: 2i) and their shared
// chroma pair i, so the x blend is exact and equals preprocess_pixel's.
template <ResizeFilter kFilter>
__device__ __forceinline__ void halving_strip(const detail::SourceRows<kFilter>& rows, int column,
                                              float y_offset, detail::PixelSamples (&out)[kStrip]) {
  constexpr bool kBilinear = kFilter == ResizeFilter::kBilinear;
  // Bilinear adds each luma column pair in integers, so its offset counts twice and its row weight
  // takes the 0.5 of the x taps (exact scalings).
  const float luma_bias = kMagic + (kBilinear ? 2.0f : 1.0f) * y_offset;
  const float chroma_bias = kMagic + 128.0f;
#pragma unroll
  for (int ky = 0; ky < kTapCount<kFilter>; ++ky) {
    const uint4 l = __ldg(reinterpret_cast<const uint4*>(rows.luma[ky] + column));
    const uint4 c = __ldg(reinterpret_cast<const uint4*>(rows.chroma[ky] + column));
    const unsigned luma[4] = {l.x, l.y, l.z, l.w};
    const unsigned chroma[4] = {c.x, c.y, c.z, c.w};
    // The chroma pair is both x taps' sample (weights 0.5 + 0.5); the luma pair sum takes the 0.5.
    const float w = rows.weight[ky];
    const float w_luma = kBilinear ? 0.5f * w : w;
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // word j: luma columns 4j..4j+3, chroma pairs 2j, 2j+1
      // Bilinear: the byte pairs summed as two 16-bit lanes (at most 510 each).
      const unsigned sums = (luma[j] & 0x00ff00ffu) + ((luma[j] >> 8) & 0x00ff00ffu);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float y =
            (kBilinear ? magic_float(sums, lane16_selector(h)) : magic_float(luma[j], byte_selector(2 * h))) -
            luma_bias;
        const float u = magic_float(chroma[j], byte_selector(2 * h)) - chroma_bias;
        const float v = magic_float(chroma[j], byte_selector(2 * h + 1)) - chroma_bias;
        float* p = out[2 * j + h].s;
        p[0] = ky == 0 ? w_luma * y : p[0] + w_luma * y;
        p[1] = ky == 0 ? w * u : p[1] + w * u;
        p[2] = ky == 0 ? w * v : p[2] + w * v;
      }
    }
  }
}

__device__ __forceinline__ unsigned half2_bits(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}

// Stores values v[0..count) to dst[0..count); a full run at a 16-byte aligned address goes out as
// 16-byte stores.
template <int kN>
__device__ __forceinline__ void store_run(float* dst, const float* v, int count) {
  static_assert(kN % 4 == 0);
  if (count == kN && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
#pragma unroll
    for (int i = 0; i < kN; i += 4) {
      *reinterpret_cast<float4*>(dst + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      if (i < count) dst[i] = v[i];
    }
  }
}
template <int kN>
__device__ __forceinline__ void store_run(__half* dst, const float* v, int count) {
  static_assert(kN % 8 == 0);
  if (count == kN && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
#pragma unroll
    for (int i = 0; i < kN; i += 8) {
      *reinterpret_cast<uint4*>(dst + i) =
          make_uint4(half2_bits(v[i], v[i + 1]), half2_bits(v[i + 2], v[i + 3]),
                     half2_bits(v[i + 4], v[i + 5]), half2_bits(v[i + 6], v[i + 7]));
    }
  } else {
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      if (i < count) dst[i] = __float2half_rn(v[i]);
    }
  }
}

// The general path's values of one strip (count pixels from column x0 of row y), at
// values[i * pixel_stride + c * channel_stride].
template <ResizeFilter kFilter, bool kPacked>
__device__ __forceinline__ void general_strip(const detail::PreprocessImageArgs& a,
                                              const detail::PreprocessCommon& k, int x0, int y, int count,
                                              float* values, int pixel_stride, int channel_stride) {
  const detail::SourceRows<kFilter> rows = detail::source_rows<kFilter, kPacked>(a, y);
#pragma unroll
  for (int i = 0; i < kStrip; ++i) {
    if (i < count) {
      detail::preprocess_pixel<kFilter, kPacked>(a, k, rows, x0 + i, values + i * pixel_stride,
                                                 channel_stride);
    }
  }
}

// What a launch's images need: every kernel instantiation compiles only its path, so batches of
// NV12 alone run code that has no packed-pixel branch (its registers and schedule stay NV12's).
enum class StripPath {
  kNv12Halving,  // NV12 images that all take the 2:1 fast path (detail::halves_columns)
  kNv12,         // NV12 images, general path
  kAnySource,    // some RGB8/BGR8 images: the general path of each image's source
};

template <typename Out, TensorLayout kLayout, ResizeFilter kFilter, StripPath kPath>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    preprocess_kernel(const __grid_constant__ PreprocessLaunch launch) {
  const int x0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * kStrip;
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x0 >= launch.width || y >= launch.height) return;
  const detail::PreprocessImageArgs& a = launch.images[blockIdx.z];
  const int count = min(kStrip, launch.width - x0);
  // The strip's values in tensor order: NCHW channel c's run at c * kStrip, NHWC pixel-interleaved.
  constexpr bool kPlanar = kLayout == TensorLayout::kNCHW;
  constexpr int kChannelStride = kPlanar ? kStrip : 1;
  constexpr int kPixelStride = kPlanar ? 1 : 3;
  float values[3 * kStrip];
  constexpr auto kNv12 = static_cast<int>(detail::PreprocessSource::kNv12);
  if constexpr (kPath == StripPath::kNv12Halving) {
    const detail::PreprocessCommon& k = launch.commons[kNv12];
    const detail::SourceRows<kFilter> rows = detail::source_rows<kFilter, false>(a, y);
    if (rows.inside) {  // warp-uniform: a warp lies in one tensor row
      detail::PixelSamples yuv[kStrip];
      halving_strip<kFilter>(rows, a.roi_x + 2 * x0, k.y_offset, yuv);
#pragma unroll
      for (int i = 0; i < kStrip; ++i)
        detail::finish_pixel(k, yuv[i], values + i * kPixelStride, kChannelStride);
    } else {
#pragma unroll
      for (int i = 0; i < kStrip; ++i) {
        for (int c = 0; c < 3; ++c) values[c * kChannelStride + i * kPixelStride] = k.pad[c];
      }
    }
  } else if (kPath == StripPath::kNv12 || a.source == detail::PreprocessSource::kNv12) {
    // kAnySource: one branch per thread on the image's source, uniform across the block
    // (blockIdx.z is the image), never a test per tap.
    general_strip<kFilter, false>(a, launch.commons[kNv12], x0, y, count, values, kPixelStride,
                                  kChannelStride);
  } else {
    general_strip<kFilter, true>(a, launch.commons[static_cast<int>(a.source)], x0, y, count, values,
                                 kPixelStride, kChannelStride);
  }
  const long long plane = static_cast<long long>(launch.width) * launch.height;
  Out* image = static_cast<Out*>(launch.output) + static_cast<long long>(blockIdx.z) * 3 * plane;
  const long long pixel = static_cast<long long>(y) * launch.width + x0;
  if constexpr (kPlanar) {
#pragma unroll
    for (int c = 0; c < 3; ++c) store_run<kStrip>(image + c * plane + pixel, values + c * kStrip, count);
  } else {
    store_run<3 * kStrip>(image + pixel * 3, values, 3 * count);
  }
}

template <typename Out, TensorLayout kLayout, ResizeFilter kFilter>
Status launch_preprocess(cudaStream_t stream, const ImageBatch& input, const PreprocessParams& params,
                         const PreprocessPlan& plan, const TensorView& output) {
  const std::size_t image_elements = 3ULL * static_cast<std::size_t>(params.width) * params.height;
  for (int begin = 0; begin < input.size(); begin += kImagesPerLaunch) {
    const int count = std::min(kImagesPerLaunch, input.size() - begin);
    PreprocessLaunch launch{};
    // The fast path serves a launch whose images all qualify, the NV12 path one of NV12 alone.
    bool halving = true, nv12 = true;
    for (int j = 0; j < count; ++j) {
      launch.images[j] = detail::preprocess_image_args(
          input, params, plan.placements[static_cast<std::size_t>(begin + j)], begin + j);
      halving = halving && detail::halves_columns(launch.images[j], params.width);
      nv12 = nv12 && launch.images[j].source == detail::PreprocessSource::kNv12;
    }
    for (int source = 0; source < detail::kPreprocessSourceCount; ++source) {
      launch.commons[source] =
          detail::preprocess_common(params, static_cast<detail::PreprocessSource>(source));
    }
    launch.output = static_cast<Out*>(output.data) + static_cast<std::size_t>(begin) * image_elements;
    launch.width = params.width;
    launch.height = params.height;
    const dim3 block(kBlockX, kBlockY);
    const int strips = (params.width + kStrip - 1) / kStrip;
    const dim3 grid((strips + kBlockX - 1) / kBlockX, (params.height + kBlockY - 1) / kBlockY,
                    static_cast<unsigned>(count));
    if (halving) {
      preprocess_kernel<Out, kLayout, kFilter, StripPath::kNv12Halving><<<grid, block, 0, stream>>>(launch);
    } else if (nv12) {
      preprocess_kernel<Out, kLayout, kFilter, StripPath::kNv12><<<grid, block, 0, stream>>>(launch);
    } else {
      preprocess_kernel<Out, kLayout, kFilter, StripPath::kAnySource><<<grid, block, 0, stream>>>(launch);
    }
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
    // The kernel loads each NV12 U, V pair as one 16-bit word.
    if (view.format == PixelFormat::kNV12 &&
        (reinterpret_cast<std::uintptr_t>(view.planes[1].data) % 2 != 0 || view.planes[1].pitch % 2 != 0)) {
      return make_error(StatusCode::kInvalidArgument,
                        "run_preprocess_cuda: NV12 chroma rows must be 2-byte aligned");
    }
  }
  return params.dtype == DataType::kFloat32
             ? dispatch_layout_filter<float>(stream, input, params, plan, output)
             : dispatch_layout_filter<__half>(stream, input, params, plan, output);
}

}  // namespace fovea::image
