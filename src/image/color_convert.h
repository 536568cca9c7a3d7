// Color conversion between the YUV formats decoders produce, the packed RGB formats networks and
// overlays use, and GRAY. The ROI applies to the input; each output image has its ROI's size.
//
// | input \ output        | RGB8, BGR8, RGBA8              | GRAY8                       | NV12, P016,
// YUV420P    |
// |-----------------------|--------------------------------|-----------------------------|------------------------|
// | NV12, P016, YUV420P   | matrix + range, nearest chroma | the Y plane, to full range  | - | | RGB8, BGR8,
// RGBA8     | channel reorder, alpha 255     | luma (the matrix's weights) | matrix + range, 2x2 avg | |
// GRAY8                 | replicated, alpha 255          | copy                        | - |
//
// Chroma upsampling (4:2:0 -> RGB) is nearest: the 2x2 block of luma samples at (2i, 2j) shares the
// chroma sample (i, j) (image coordinates, so a ROI at an odd offset keeps the image's pairing).
// This is what OpenCV's cvtColor(NV12/I420) does, and libswscale with
// SWS_POINT | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND. Chroma downsampling (RGB -> 4:2:0) averages
// the block's four chroma values (OpenCV's RGB2YUV_I420 takes the top-left pixel's instead, which
// aliases; the two agree on blocks of one color). P016 samples are 16-bit,
// MSB-aligned (see color_math.h for the scale). GRAY8 is always full range: from YUV, the Y plane
// is expanded from limited range when `range` is kLimited and copied when it is kFull.
//
// Memory: run_color_convert_cpu needs host-accessible images (host or pinned), run_color_convert_cuda
// device-accessible ones (device or pinned). Neither allocates; neither synchronizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"
#include "image/batch.h"
#include "image/color_math.h"

namespace fovea::image {

struct ColorConvertParams {
  PixelFormat output_format = PixelFormat::kRGB8;
  ColorMatrix matrix = ColorMatrix::kBt601;
  ColorRange range = ColorRange::kLimited;  // of the YUV side (input or output)
};

struct ColorConvertPlan {
  struct Size {
    int width = 0;
    int height = 0;
  };
  std::vector<Size> output_sizes;  // one per input image: its ROI's size
  std::size_t workspace_bytes = 0;
};

// Whether the table above has a conversion from `input` to `output`.
bool color_conversion_supported(PixelFormat input, PixelFormat output);

// Validates the input batch and the conversion; returns the output size of every image.
Result<ColorConvertPlan> plan_color_convert(const ImageBatch& input, const ColorConvertParams& params);

// `output` holds one image per input image, in params.output_format, of the planned size, without
// ROIs.
Status run_color_convert_cpu(const ImageBatch& input, const ImageBatch& output,
                             const ColorConvertParams& params);

#if defined(FOVEA_HAVE_CUDA)
Status run_color_convert_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                              const ColorConvertParams& params);
#endif

// Checks `output` against the plan of `input` (count, format, sizes, no ROIs) and that both batches
// live in memory the implementation can reach (`device`: device or pinned; else host or pinned).
Status check_color_convert(const ImageBatch& input, const ImageBatch& output,
                           const ColorConvertParams& params, bool device);

// ---------------------------------------------------------------------------------------------
// Per-pixel code shared by the CPU reference and the CUDA kernels, so both compute the same values.
namespace color_detail {

inline constexpr int kMaxConvertPlanes = 3;

// One image of a conversion, in the raw form a kernel takes: planes, the ROI origin in the input
// and the output size.
struct ConvertJob {
  const std::uint8_t* src[kMaxConvertPlanes];
  std::size_t src_pitch[kMaxConvertPlanes];
  std::uint8_t* dst[kMaxConvertPlanes];
  std::size_t dst_pitch[kMaxConvertPlanes];
  int roi_x;
  int roi_y;
  int width;   // of the output
  int height;  // of the output
};

struct ConvertConstants {
  YuvCoefficients yuv;
  ColorMatrix matrix;
  ColorRange range;
};

ConvertJob make_convert_job(const ImageView& input, const Roi& roi, const ImageView& output);
ConvertConstants make_convert_constants(const ColorConvertParams& params);

FOVEA_HD constexpr bool is_yuv420(PixelFormat f) {
  return f == PixelFormat::kNV12 || f == PixelFormat::kP016 || f == PixelFormat::kYUV420P;
}
FOVEA_HD constexpr int packed_channels(PixelFormat f) {
  return f == PixelFormat::kRGBA8 ? 4 : (f == PixelFormat::kGRAY8 ? 1 : 3);
}

// Calls fn(std::integral_constant<PixelFormat, F>{}) for the F among Formats that equals `format`
// and returns what fn returns (a bool); false when none does. Turns a run-time format into a
// template argument.
template <PixelFormat... Formats, typename Fn>
bool with_format(PixelFormat format, Fn&& fn) {
  return ((format == Formats && fn(std::integral_constant<PixelFormat, Formats>{})) || ...);
}

// The table in the header comment, as the one dispatch every implementation uses: calls
// pixel_fn(src, dst) for packed and gray outputs, block_fn(src, dst) for 4:2:0 outputs (src and dst
// are integral_constant tags); false when the table has no such conversion.
template <typename PixelFn, typename BlockFn>
bool dispatch_conversion(PixelFormat input, PixelFormat output, PixelFn&& pixel_fn, BlockFn&& block_fn) {
  using enum PixelFormat;
  if (is_yuv420(output)) {
    return with_format<kRGB8, kBGR8, kRGBA8>(input, [&](auto src) {
      return with_format<kNV12, kP016, kYUV420P>(output, [&](auto dst) {
        block_fn(src, dst);
        return true;
      });
    });
  }
  return with_format<kNV12, kP016, kYUV420P, kRGB8, kBGR8, kRGBA8, kGRAY8>(input, [&](auto src) {
    return with_format<kRGB8, kBGR8, kRGBA8, kGRAY8>(output, [&](auto dst) {
      pixel_fn(src, dst);
      return true;
    });
  });
}

struct Rgb8 {
  std::uint8_t r, g, b;
};

FOVEA_HD const std::uint8_t* src_row(const ConvertJob& job, int plane, int y) {
  return job.src[plane] + static_cast<std::size_t>(y) * job.src_pitch[plane];
}
FOVEA_HD std::uint8_t* dst_row(const ConvertJob& job, int plane, int y) {
  return job.dst[plane] + static_cast<std::size_t>(y) * job.dst_pitch[plane];
}

// A sample of plane `plane` at (x, y) on the 8-bit scale; P016's 16-bit samples divide by 256.
template <PixelFormat F>
FOVEA_HD float load_yuv_sample(const ConvertJob& job, int plane, int x, int y) {
  if constexpr (F == PixelFormat::kP016) {
    return static_cast<float>(reinterpret_cast<const std::uint16_t*>(src_row(job, plane, y))[x]) *
           (1.0f / 256.0f);
  } else {
    return static_cast<float>(src_row(job, plane, y)[x]);
  }
}

// Y, U, V of input pixel (x, y) (image coordinates), with the chroma of its 2x2 block.
template <PixelFormat F>
FOVEA_HD Yuv load_yuv420(const ConvertJob& job, int x, int y) {
  const float luma = load_yuv_sample<F>(job, 0, x, y);
  const int cx = x / 2;
  const int cy = y / 2;
  if constexpr (F == PixelFormat::kYUV420P) {
    return Yuv{luma, load_yuv_sample<F>(job, 1, cx, cy), load_yuv_sample<F>(job, 2, cx, cy)};
  } else {
    return Yuv{luma, load_yuv_sample<F>(job, 1, 2 * cx, cy), load_yuv_sample<F>(job, 1, 2 * cx + 1, cy)};
  }
}

// Input pixel (x, y) of a packed or gray image as RGB (gray replicated).
template <PixelFormat F>
FOVEA_HD Rgb8 load_rgb(const ConvertJob& job, int x, int y) {
  const std::uint8_t* p = src_row(job, 0, y) + static_cast<std::size_t>(x) * packed_channels(F);
  if constexpr (F == PixelFormat::kBGR8) {
    return Rgb8{p[2], p[1], p[0]};
  } else if constexpr (F == PixelFormat::kGRAY8) {
    return Rgb8{p[0], p[0], p[0]};
  } else {
    return Rgb8{p[0], p[1], p[2]};
  }
}

template <PixelFormat F>
FOVEA_HD void store_rgb(std::uint8_t* row, int x, Rgb8 c) {
  std::uint8_t* p = row + static_cast<std::size_t>(x) * packed_channels(F);
  if constexpr (F == PixelFormat::kBGR8) {
    p[0] = c.b;
    p[1] = c.g;
    p[2] = c.r;
  } else {
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
    if constexpr (F == PixelFormat::kRGBA8) p[3] = 255;
  }
}

// Luma of an RGB pixel with the matrix's weights, on the full 0..255 scale.
FOVEA_HD std::uint8_t rgb_to_gray(Rgb8 c, ColorMatrix matrix) {
  return to_u8(rgb_to_yuv(c.r, c.g, c.b, matrix, ColorRange::kFull).y);
}

// Output pixel (x, y) of a packed or gray output: input pixel (roi_x + x, roi_y + y) converted.
template <PixelFormat Src, PixelFormat Dst>
FOVEA_HD void convert_pixel(const ConvertJob& job, const ConvertConstants& k, int x, int y) {
  const int sx = job.roi_x + x;
  const int sy = job.roi_y + y;
  std::uint8_t* out = dst_row(job, 0, y);
  if constexpr (is_yuv420(Src)) {
    const Yuv s = load_yuv420<Src>(job, sx, sy);
    if constexpr (Dst == PixelFormat::kGRAY8) {
      out[x] = to_u8((s.y - k.yuv.y_offset) * k.yuv.y_scale);
    } else {
      const Rgb c = yuv_to_rgb(s.y, s.u, s.v, k.yuv);
      store_rgb<Dst>(out, x, Rgb8{to_u8(c.r), to_u8(c.g), to_u8(c.b)});
    }
  } else {
    const Rgb8 c = load_rgb<Src>(job, sx, sy);
    if constexpr (Dst == PixelFormat::kGRAY8) {
      out[x] = Src == PixelFormat::kGRAY8 ? c.r : rgb_to_gray(c, k.matrix);
    } else {
      store_rgb<Dst>(out, x, c);
    }
  }
}

template <PixelFormat F>
FOVEA_HD void store_yuv_sample(std::uint8_t* row, int x, float v) {
  if constexpr (F == PixelFormat::kP016) {
    const float scaled = v * 256.0f;
    const float clamped = scaled < 0.0f ? 0.0f : (scaled > 65535.0f ? 65535.0f : scaled);
    reinterpret_cast<std::uint16_t*>(row)[x] = static_cast<std::uint16_t>(clamped + 0.5f);
  } else {
    row[x] = to_u8(v);
  }
}

// The 2x2 output block at (2 * bx, 2 * by) of a 4:2:0 output: four luma samples and the average of
// the four pixels' chroma.
template <PixelFormat Src, PixelFormat Dst>
FOVEA_HD void convert_block(const ConvertJob& job, const ConvertConstants& k, int bx, int by) {
  float u_sum = 0.0f;
  float v_sum = 0.0f;
  for (int dy = 0; dy < 2; ++dy) {
    const int y = 2 * by + dy;
    std::uint8_t* y_row = dst_row(job, 0, y);
    for (int dx = 0; dx < 2; ++dx) {
      const int x = 2 * bx + dx;
      const Rgb8 c = load_rgb<Src>(job, job.roi_x + x, job.roi_y + y);
      const Yuv s = rgb_to_yuv(c.r, c.g, c.b, k.matrix, k.range);
      store_yuv_sample<Dst>(y_row, x, s.y);
      u_sum += s.u;
      v_sum += s.v;
    }
  }
  const float u = u_sum * 0.25f;
  const float v = v_sum * 0.25f;
  if constexpr (Dst == PixelFormat::kYUV420P) {
    store_yuv_sample<Dst>(dst_row(job, 1, by), bx, u);
    store_yuv_sample<Dst>(dst_row(job, 2, by), bx, v);
  } else {
    std::uint8_t* uv_row = dst_row(job, 1, by);
    store_yuv_sample<Dst>(uv_row, 2 * bx, u);
    store_yuv_sample<Dst>(uv_row, 2 * bx + 1, v);
  }
}

}  // namespace color_detail
}  // namespace fovea::image
