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
//   1. NV12 -> RGB at full resolution in float on the 0..255 scale, clamped to [0, 255], with
//      nearest chroma (luma pixel (x, y) takes the chroma sample (x/2, y/2)), per color_math.h;
//   2. crop to the ROI and resize (ResizeCompat::kOpenCv, params.filter) in float, padding with
//      pad_value where the fit leaves room (run_resize_cpu on kPlanarF32 does exactly this);
//   3. per output channel c: (x * scale - mean[c]) / std[c]; then the dtype cast (round to
//      nearest even for float16).
// The kernel evaluates it per output pixel: it converts each of the (up to 2x2) source taps it
// samples and blends them, so nothing is materialized at full resolution.
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
  float scale;
  float mean[3];
  float std[3];
  float pad[3];
};

FOVEA_HD float clamp_255(float v) {
  return v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
}

// The clamped RGB of luma pixel (x, y) (absolute coordinates) with its nearest chroma sample.
FOVEA_HD Rgb nv12_pixel_rgb(const PreprocessImageArgs& a, const YuvCoefficients& yuv, int x, int y) {
  const float luma = load_readonly(a.luma + y * a.luma_pitch + x);
  const unsigned char* uv = a.chroma + (y >> 1) * a.chroma_pitch + (x & ~1);
  const Rgb rgb = yuv_to_rgb(luma, load_readonly(uv), load_readonly(uv + 1), yuv);
  return Rgb{clamp_255(rgb.r), clamp_255(rgb.g), clamp_255(rgb.b)};
}

// The normalized values of tensor pixel (ox, oy), in tensor channel order.
template <ResizeFilter kFilter>
FOVEA_HD void preprocess_pixel(const PreprocessImageArgs& a, const PreprocessCommon& common, int ox, int oy,
                               float out[3]) {
  constexpr int kTaps = kFilter == ResizeFilter::kNearest ? 1 : 2;
  const int dx = ox - a.offset_x;
  const int dy = oy - a.offset_y;
  float rgb[3] = {0.0f, 0.0f, 0.0f};
  if (dx < 0 || dy < 0 || dx >= a.x.dst_size || dy >= a.y.dst_size) {
    for (int c = 0; c < 3; ++c) rgb[c] = common.pad[c];
  } else {
    const TapWindow wx = tap_window(a.x, dx);
    const TapWindow wy = tap_window(a.y, dy);
    for (int ky = 0; ky < kTaps; ++ky) {
      const float weight_y = tap_weight(a.y, wy, ky);
      const int sy = a.roi_y + clamp_index(wy.first + ky, a.y.src_size);
      for (int kx = 0; kx < kTaps; ++kx) {
        const float w = weight_y * tap_weight(a.x, wx, kx);
        const Rgb p = nv12_pixel_rgb(a, common.yuv, a.roi_x + clamp_index(wx.first + kx, a.x.src_size), sy);
        // Tensor channel order: red goes to channel_of_red, blue to the other end.
        rgb[common.channel_of_red] += w * p.r;
        rgb[1] += w * p.g;
        rgb[2 - common.channel_of_red] += w * p.b;
      }
    }
  }
  for (int c = 0; c < 3; ++c) out[c] = (rgb[c] * common.scale - common.mean[c]) / common.std[c];
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
