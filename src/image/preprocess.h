// Fused preprocess: NV12 frames and packed RGB8/BGR8 images (pitched, different sizes, mixed in
// one batch image by image) straight to a network input tensor in one kernel launch: per-image ROI
// crop -> resize -> to RGB/BGR -> (x * scale - mean) / std -> NCHW or NHWC -> float32 or float16,
// with optional letterbox / keep-aspect padding.
//
// | input             | output tensor                        | dtype              | resize                |
// |-------------------|--------------------------------------|--------------------|-----------------------|
// | kNV12 (even size) | [N, 3, H, W] (kNCHW) or [N, H, W, 3] | kFloat32, kFloat16 | bilinear or nearest,  |
// | kRGB8, kBGR8 (any | (kNHWC), dense, device memory        |                    | OpenCV geometry       |
// | size >= 1)        |                                      |                    |                       |
//
// Definition (what the CPU reference computes and the composition test checks): the op equals
//   1. per image, RGB at full resolution in float on the 0..255 scale, not clamped:
//      NV12 -> RGB with nearest chroma (luma pixel (x, y) takes the chroma sample (x/2, y/2)), per
//      color_math.h and params.matrix/range; RGB8/BGR8: the pixel values as floats
//      (params.matrix/range do not apply);
//   2. crop to the ROI and resize (ResizeCompat::kOpenCv, params.filter) in float, padding with
//      pad_value where the fit leaves room (run_resize_cpu on kPlanarF32 does exactly this);
//      then clamp to [0, 255] (as a uint8 conversion of the resized YUV would);
//   3. per output channel c: (x * scale - mean[c]) / std[c]; then the dtype cast (round to
//      nearest even for float16).
// ROIs may start and end anywhere inside their image, odd coordinates included (the pix2pix "AB"
// layout feeds one half of a 512x256 pair as the ROI).
// The kernel evaluates it per output pixel from the (up to 2x2) source taps it samples, so
// nothing is materialized at full resolution; detail::PreprocessCommon says how steps 1 and 3
// are folded into one affine map (equal up to float rounding).
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

// Validates the batch (NV12 of even sizes, RGB8 or BGR8 of any size, ROIs inside the images) and
// params (positive size, supported dtype/filter, non-zero std) and computes the placements and the
// output shape.
Result<PreprocessPlan> plan_preprocess(const ImageBatch& input, const PreprocessParams& params);

// `output` must be a dense tensor of plan.shape and params.dtype, in host memory for the CPU run
// and device memory for the CUDA run (input likewise). The CUDA run is one launch per 32 images.
Status run_preprocess_cpu(const ImageBatch& input, const PreprocessParams& params, const TensorView& output);
Status run_preprocess_cuda(cudaStream_t stream, const ImageBatch& input, const PreprocessParams& params,
                           const TensorView& output);

namespace detail {

// How an image's pixels are stored. A batch mixes them image by image; the kernel branches once
// per image (uniform across a thread block), never per tap. Indexes the per-source PreprocessCommon.
enum class PreprocessSource : int { kNv12, kRgb8, kBgr8 };
inline constexpr int kPreprocessSourceCount = 3;

// Shared by preprocess_cpu.cpp and preprocess.cu (the kernel and its reference run this code).
struct PreprocessImageArgs {
  const unsigned char* luma;    // NV12's luma plane; for RGB8/BGR8 the packed pixels
  const unsigned char* chroma;  // NV12's interleaved U, V; unused for RGB8/BGR8
  long long luma_pitch;
  long long chroma_pitch;
  PreprocessSource source;
  int roi_x, roi_y;
  int offset_x, offset_y;  // the placement; its extent is x.dst_size, y.dst_size
  AxisMap x, y;
};

// The three blended source samples of one tensor pixel: NV12's Y', U', V' (offsets removed), or
// a packed pixel's bytes 0, 1, 2 (R, G, B for RGB8; B, G, R for BGR8).
struct PixelSamples {
  float s[3];
};

// Steps 1 and 3 of the definition folded into one affine map per tensor channel c, applied to
// the blended samples:
//   value_c = bias[c] + from[c][0] * s[0] + from[c][1] * s[1] + from[c][2] * s[2]
// then clamped to [low[c], high[c]], the normalized image of [0, 255]. NV12 blends its samples
// with their offsets removed (Y - y_offset, U - 128, V - 128, exact in float) and the rows hold the
// color matrix times the normalization; because the color conversion is affine and the resize
// weights sum to 1, converting the blend equals blending the converted taps. RGB8/BGR8 rows each
// pick the one byte of their channel (the zero products are exact). Normalizing before clamping to
// the normalized bounds equals clamping first; the results differ from the step-by-step definition
// by float rounding only. The tensor's channel order (RGB or BGR) and the source's byte order are
// baked into the rows, so the kernel does no channel selection.
struct PreprocessCommon {
  float y_offset;  // NV12: 16 (limited range) or 0
  float from[3][3];
  float bias[3];
  float low[3], high[3];
  float pad[3];  // the normalized pad value
};

template <ResizeFilter kFilter>
inline constexpr int kTapCount = kFilter == ResizeFilter::kNearest ? 1 : 2;

// The taps of one output coordinate along one axis: source indices (clamped to the ROI, ROI
// origin added) and their weights. `inside` is false in the padding, where the taps are those of
// the placement's first pixel (valid addresses, never used).
template <ResizeFilter kFilter>
struct AxisTaps {
  int index[kTapCount<kFilter>];
  float weight[kTapCount<kFilter>];
  bool inside;
};

template <ResizeFilter kFilter>
FOVEA_HD AxisTaps<kFilter> axis_taps(const AxisMap& m, int roi_origin, int placed) {
  AxisTaps<kFilter> t{};
  t.inside = placed >= 0 && placed < m.dst_size;
  const TapWindow w = opencv_window_of<kFilter>(m, t.inside ? placed : 0);
  for (int k = 0; k < kTapCount<kFilter>; ++k) {
    t.index[k] = roi_origin + clamp_index(w.first + k, m.src_size);
    t.weight[k] = opencv_weight_of<kFilter>(m, w, k);
  }
  return t;
}

// What every pixel of one tensor row shares: the rows its taps read (luma and chroma for NV12,
// the packed rows for RGB8/BGR8) and their weights. Computed once per row (per thread strip on the
// device), not per pixel.
template <ResizeFilter kFilter>
struct SourceRows {
  const unsigned char* luma[kTapCount<kFilter>];    // packed images: their pixel rows
  const unsigned char* chroma[kTapCount<kFilter>];  // NV12: the nearest chroma row of each luma row
  float weight[kTapCount<kFilter>];
  bool inside;
};

// kPacked: the image is RGB8/BGR8 (one plane of 3-byte pixels), else NV12.
template <ResizeFilter kFilter, bool kPacked>
FOVEA_HD SourceRows<kFilter> source_rows(const PreprocessImageArgs& a, int oy) {
  const AxisTaps<kFilter> t = axis_taps<kFilter>(a.y, a.roi_y, oy - a.offset_y);
  SourceRows<kFilter> r{};
  for (int k = 0; k < kTapCount<kFilter>; ++k) {
    r.luma[k] = a.luma + t.index[k] * a.luma_pitch;
    if constexpr (!kPacked) r.chroma[k] = a.chroma + (t.index[k] >> 1) * a.chroma_pitch;
    r.weight[k] = t.weight[k];
  }
  r.inside = t.inside;
  return r;
}

// The samples of source column x in tap row ky.
template <ResizeFilter kFilter, bool kPacked>
FOVEA_HD PixelSamples source_samples(const SourceRows<kFilter>& rows, int ky, int x, float y_offset) {
  if constexpr (kPacked) {
    const unsigned char* pixel = rows.luma[ky] + 3 * x;
    return PixelSamples{{static_cast<float>(load_readonly(pixel)),
                         static_cast<float>(load_readonly(pixel + 1)),
                         static_cast<float>(load_readonly(pixel + 2))}};
  } else {
    // The luma pixel's nearest chroma sample is the U, V pair at byte x & ~1 of its chroma row.
    const unsigned char* uv = rows.chroma[ky] + (x & ~1);
#if defined(__CUDA_ARCH__)
    // One 16-bit load for the pair (run_preprocess_cuda checks the chroma rows are 2-aligned).
    const unsigned pair = __ldg(reinterpret_cast<const unsigned short*>(uv));
    const float u = static_cast<float>(pair & 0xffu), v = static_cast<float>(pair >> 8);
#else
    const float u = uv[0], v = uv[1];
#endif
    return PixelSamples{
        {static_cast<float>(load_readonly(rows.luma[ky] + x)) - y_offset, u - 128.0f, v - 128.0f}};
  }
}

// The normalized, clamped tensor values of one pixel from its blended samples.
FOVEA_HD void finish_pixel(const PreprocessCommon& k, const PixelSamples& p, float* out, int stride) {
  for (int c = 0; c < 3; ++c) {
    const float v = k.bias[c] + k.from[c][0] * p.s[0] + k.from[c][1] * p.s[1] + k.from[c][2] * p.s[2];
    out[c * stride] = v < k.low[c] ? k.low[c] : (v > k.high[c] ? k.high[c] : v);
  }
}

// The normalized values of tensor pixel (ox, rows' row), in tensor channel order, written to
// out[0], out[stride], out[2 * stride]. Bilinear blends separably: each row across its x taps, then
// the rows (the same weights as resize_pixel's products, grouped differently).
template <ResizeFilter kFilter, bool kPacked>
FOVEA_HD void preprocess_pixel(const PreprocessImageArgs& a, const PreprocessCommon& k,
                               const SourceRows<kFilter>& rows, int ox, float* out, int stride) {
  const AxisTaps<kFilter> cols = axis_taps<kFilter>(a.x, a.roi_x, ox - a.offset_x);
  if (!rows.inside || !cols.inside) {
    for (int c = 0; c < 3; ++c) out[c * stride] = k.pad[c];
    return;
  }
  PixelSamples sum{{0.0f, 0.0f, 0.0f}};
  for (int ky = 0; ky < kTapCount<kFilter>; ++ky) {
    PixelSamples row{{0.0f, 0.0f, 0.0f}};
    for (int kx = 0; kx < kTapCount<kFilter>; ++kx) {
      const PixelSamples tap = source_samples<kFilter, kPacked>(rows, ky, cols.index[kx], k.y_offset);
      for (int s = 0; s < 3; ++s) row.s[s] += cols.weight[kx] * tap.s[s];
    }
    for (int s = 0; s < 3; ++s) sum.s[s] += rows.weight[ky] * row.s[s];
  }
  finish_pixel(k, sum, out, stride);
}

// Built by the run functions from the validated batch, params and plan.
PreprocessSource preprocess_source(PixelFormat format);
PreprocessCommon preprocess_common(const PreprocessParams& params, PreprocessSource source);
PreprocessImageArgs preprocess_image_args(const ImageBatch& input, const PreprocessParams& params,
                                          const ResizePlacement& placement, int i);
// Tensor pixels per CUDA thread (preprocess.cu says why 8).
inline constexpr int kPreprocessStrip = 8;

// Whether an image takes the kernel's fast path for exact 2:1 horizontal downscales (the common
// 1920 -> 960): the image is NV12, the placement spans all `width` tensor columns, the ROI is twice as wide
// and starts at an even column (so both x taps of a tensor pixel share one chroma pair), `width` is a
// multiple of kPreprocessStrip, and the ROI's rows start 16-byte aligned in both planes (so a
// strip's 16 source columns are one vector load per row).
bool halves_columns(const PreprocessImageArgs& a, int width);
// Checks that `output` is a dense tensor of the plan's shape and the params' dtype in `memory`.
Status check_preprocess_output(const TensorView& output, const PreprocessPlan& plan,
                               const PreprocessParams& params, MemoryKind memory);

}  // namespace detail

}  // namespace fovea::image
