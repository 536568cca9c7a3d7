// Fused preprocess: NV12 frames (pitched, different sizes) straight to a network input tensor in
// one kernel launch: per-image ROI crop -> resize -> NV12 to RGB/BGR -> (x * scale - mean) / std
// -> NCHW or NHWC -> float32 or float16, with optional letterbox / keep-aspect padding.
//
// | input | output tensor                          | dtype              | resize                |
// |-------|----------------------------------------|--------------------|-----------------------|
// | kNV12 | [N, 3, H, W] (kNCHW) or [N, H, W, 3]   | kFloat32, kFloat16 | bilinear or nearest,  |
// |       | (kNHWC), dense, device memory          |                    | OpenCV geometry       |
//
// Definition (what the CPU reference computes and the composition test checks): the op equals
//   1. NV12 -> RGB at full resolution in float on the 0..255 scale, not clamped, with nearest
//      chroma (luma pixel (x, y) takes the chroma sample (x/2, y/2)), per color_math.h;
//   2. crop to the ROI and resize (ResizeCompat::kOpenCv, params.filter) in float, padding with
//      pad_value where the fit leaves room (run_resize_cpu on kPlanarF32 does exactly this);
//      then clamp to [0, 255] (as a uint8 conversion of the resized YUV would);
//   3. per output channel c: (x * scale - mean[c]) / std[c] (computed as one multiply-add with
//      scale/std and -mean/std); then the dtype cast (round to nearest even for float16).
// The kernel evaluates it per output pixel from the (up to 2x2) source taps it samples, so
// nothing is materialized at full resolution.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "core/cuda_stream.h"
#include "core/image.h"
#include "core/status.h"
#include "image/batch.h"
#include "image/color_math.h"
#include "image/resize_math.h"

namespace fovea::image {

enum class TensorLayout { kNCHW, kNHWC };

struct PreprocessParams {
  int width = 0;  // network input size, the same for every image
  int height = 0;
  TensorLayout layout = TensorLayout::kNCHW;
  DataType dtype = DataType::kFloat16;  // kFloat32 or kFloat16
  ColorMatrix matrix = ColorMatrix::kBt601;
  ColorRange range = ColorRange::kLimited;
  bool bgr = false;                               // channel order of the tensor: RGB (false) or BGR (true)
  ResizeFilter filter = ResizeFilter::kBilinear;  // kBilinear or kNearest
  ResizeFit fit = ResizeFit::kStretch;
  // Per tensor channel (in the tensor's channel order). pad_value is a pixel value (0..255) and is
  // normalized like the image.
  float scale = 1.0f / 255.0f;
  std::array<float, 3> mean{0.0f, 0.0f, 0.0f};
  std::array<float, 3> std{1.0f, 1.0f, 1.0f};
  std::array<float, 3> pad_value{0.0f, 0.0f, 0.0f};
};

struct PreprocessPlan {
  std::vector<ResizePlacement> placements;  // per image: where its ROI landed, and the scale
  std::array<std::int64_t, 4> shape{};      // the output tensor's shape
  std::size_t output_bytes = 0;
  std::size_t workspace_bytes = 0;  // the op needs none
};

// Validates the batch (NV12, even sizes, ROIs inside the images) and params (positive size,
// supported dtype/filter, non-zero std) and computes the placements and the output shape.
Result<PreprocessPlan> plan_preprocess(const ImageBatch& input, const PreprocessParams& params);

// `output` must be a dense tensor of plan.shape and params.dtype, in host memory for the CPU run
// and device memory for the CUDA run (input likewise). The CUDA run is one launch per 32 images.
Status run_preprocess_cpu(const ImageBatch& input, const PreprocessParams& params, const TensorView& output);
Status run_preprocess_cuda(cudaStream_t stream, const ImageBatch& input, const PreprocessParams& params,
                           const TensorView& output);

namespace detail {

// Shared by preprocess_cpu.cpp and preprocess.cu (the kernel and its reference run this code).
struct PreprocessImageArgs {
  const unsigned char* luma;
  const unsigned char* chroma;  // interleaved U, V
  long long luma_pitch;
  long long chroma_pitch;
  int roi_x, roi_y;
  int offset_x, offset_y;  // the placement; its extent is x.dst_size, y.dst_size
  AxisMap x, y;
};

struct PreprocessCommon {
  YuvCoefficients yuv;
  int channel_of_red;  // 0 for RGB, 2 for BGR
  // (x * scale - mean) / std as one multiply-add: x * mul + add (mul = scale / std,
  // add = -mean / std), which differs from the division by float rounding only.
  float mul[3];
  float add[3];
  float pad[3];
};

FOVEA_HD float clamp_255(float v) {
  return v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
}

// The Y, U, V samples of luma pixel (x, y) (absolute coordinates) and its nearest chroma sample.
FOVEA_HD Yuv nv12_sample(const PreprocessImageArgs& a, int x, int y) {
  const float luma = load_readonly(a.luma + y * a.luma_pitch + x);
  const unsigned char* uv = a.chroma + (y >> 1) * a.chroma_pitch + (x & ~1);
#if defined(__CUDA_ARCH__)
  // One 16-bit load for the U, V pair (run_preprocess_cuda checks the chroma rows are 2-aligned).
  const unsigned short pair = __ldg(reinterpret_cast<const unsigned short*>(uv));
  return Yuv{luma, static_cast<float>(pair & 0xff), static_cast<float>(pair >> 8)};
#else
  return Yuv{luma, static_cast<float>(uv[0]), static_cast<float>(uv[1])};
#endif
}

// The normalized values of tensor pixel (ox, oy), in tensor channel order. The taps' Y, U, V are
// blended and converted once: the conversion is affine and the weights sum to 1, so this equals
// blending the converted (unclamped) RGB of the taps, at a third of the arithmetic.
template <ResizeFilter kFilter>
FOVEA_HD void preprocess_pixel(const PreprocessImageArgs& a, const PreprocessCommon& common, int ox, int oy,
                               float out[3]) {
  constexpr int kTaps = kFilter == ResizeFilter::kNearest ? 1 : 2;
  const int dx = ox - a.offset_x;
  const int dy = oy - a.offset_y;
  float rgb[3];
  if (dx < 0 || dy < 0 || dx >= a.x.dst_size || dy >= a.y.dst_size) {
    for (int c = 0; c < 3; ++c) rgb[c] = common.pad[c];
  } else {
    const TapWindow wx = opencv_window_of<kFilter>(a.x, dx);
    const TapWindow wy = opencv_window_of<kFilter>(a.y, dy);
    Yuv sum{0.0f, 0.0f, 0.0f};
    for (int ky = 0; ky < kTaps; ++ky) {
      const float weight_y = opencv_weight_of<kFilter>(a.y, wy, ky);
      const int sy = a.roi_y + clamp_index(wy.first + ky, a.y.src_size);
      for (int kx = 0; kx < kTaps; ++kx) {
        const float w = weight_y * opencv_weight_of<kFilter>(a.x, wx, kx);
        const Yuv p = nv12_sample(a, a.roi_x + clamp_index(wx.first + kx, a.x.src_size), sy);
        sum.y += w * p.y;
        sum.u += w * p.u;
        sum.v += w * p.v;
      }
    }
    const Rgb p = yuv_to_rgb(sum.y, sum.u, sum.v, common.yuv);
    // Tensor channel order: red goes to channel_of_red, blue to the other end.
    rgb[common.channel_of_red] = p.r;
    rgb[1] = p.g;
    rgb[2 - common.channel_of_red] = p.b;
  }
  for (int c = 0; c < 3; ++c) out[c] = clamp_255(rgb[c]) * common.mul[c] + common.add[c];
}

// Built by the run functions from the validated batch, params and plan.
PreprocessCommon preprocess_common(const PreprocessParams& params);
PreprocessImageArgs preprocess_image_args(const ImageBatch& input, const PreprocessParams& params,
                                          const ResizePlacement& placement, int i);
// Checks that `output` is a dense tensor of the plan's shape and the params' dtype in `memory`.
Status check_preprocess_output(const TensorView& output, const PreprocessPlan& plan,
                               const PreprocessParams& params, MemoryKind memory);

}  // namespace detail

}  // namespace fovea::image
