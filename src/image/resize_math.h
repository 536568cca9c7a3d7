// Resampling arithmetic shared by the resize op, the fused preprocess and their CPU references:
// how an output coordinate maps to source taps and their weights, per axis, for each filter in
// its OpenCV-compatible and its Pillow-compatible form. Written once, used on both sides.
//
// Coordinates are local to the source ROI (0..src_size-1) and to the placed output region
// (0..dst_size-1). Tap indices may fall outside the ROI; readers clamp them to its edge
// (replicated border, as cv::resize's BORDER_REPLICATE), so a ROI never samples outside itself.
//
// OpenCV (cv::resize, 4.x):
//   nearest   src = floor(d * src_size / dst_size)                   (INTER_NEAREST, no half pixel)
//   bilinear  f = (d + 0.5) * scale - 0.5; taps floor(f), +1          (INTER_LINEAR)
//   bicubic   same f; taps floor(f)-1 .. +2, Keys a = -0.75           (INTER_CUBIC)
//   area      the overlap of [d, d+1) * scale with each source pixel  (INTER_AREA, downscale only)
//   OpenCV quantizes linear/cubic weights to 11 bits on uint8; fovea keeps float weights, which
//   stays within ±1 of OpenCV.
// Pillow (Image.resize, antialiased: the filter is stretched by the scale when downscaling):
//   support = filter support * max(scale, 1); center = (d + 0.5) * scale;
//   taps [int(center - support + 0.5), int(center + support + 0.5)) inside the source,
//   weight = filter((tap - center + 0.5) / max(scale, 1)), normalized to sum 1.
//   box (kArea) support 0.5, bilinear (triangle) 1, bicubic 2 with a = -0.5;
//   nearest samples floor((d + 0.5) * scale) (Pillow's NEAREST). Pillow rounds its horizontal
//   pass to 8 bits before the vertical one; fovea keeps float between the passes.
#pragma once

#include "core/host_device.h"
#include "image/color_math.h"

namespace fovea::image {

enum class ResizeFilter { kNearest, kBilinear, kArea, kBicubic };
enum class ResizeCompat { kOpenCv, kPil };

// One axis of a resampling: everything a tap lookup needs, precomputed once per image.
struct AxisMap {
  ResizeFilter filter;
  ResizeCompat compat;
  int src_size;            // ROI extent along the axis
  int dst_size;            // placed output extent along the axis
  float scale;             // src_size / dst_size
  float support;           // Pillow: filter support * max(scale, 1)
  float inv_filter_scale;  // Pillow: 1 / max(scale, 1)
};

// The source taps of one output coordinate: indices first .. first+count-1 (unclamped) and what
// the weights need.
struct TapWindow {
  int first;
  int count;
  float position;  // OpenCV linear/cubic: the fractional offset; area: the start; Pillow: center
  float norm;      // multiplies every raw weight (area: 1/cell width; Pillow: 1/sum of weights)
};

FOVEA_HD float pil_filter_support(ResizeFilter filter) {
  return filter == ResizeFilter::kArea ? 0.5f : (filter == ResizeFilter::kBilinear ? 1.0f : 2.0f);
}

FOVEA_HD AxisMap make_axis_map(ResizeFilter filter, ResizeCompat compat, int src_size, int dst_size) {
  const float scale = static_cast<float>(src_size) / static_cast<float>(dst_size);
  const float filter_scale = scale < 1.0f ? 1.0f : scale;
  return AxisMap{filter,
                 compat,
                 src_size,
                 dst_size,
                 scale,
                 pil_filter_support(filter) * filter_scale,
                 1.0f / filter_scale};
}

FOVEA_HD int floor_to_int(float v) {
  const int i = static_cast<int>(v);
  return static_cast<float>(i) > v ? i - 1 : i;
}

// Keys' cubic convolution kernel with parameter a (OpenCV: -0.75, Pillow: -0.5), at distance x.
FOVEA_HD float cubic_kernel(float x, float a) {
  x = x < 0.0f ? -x : x;
  if (x < 1.0f) return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
  if (x < 2.0f) return (((x - 5.0f) * x + 8.0f) * x - 4.0f) * a;
  return 0.0f;
}

// Pillow's filters at distance x (in filter units).
FOVEA_HD float pil_filter(ResizeFilter filter, float x) {
  switch (filter) {
    case ResizeFilter::kArea: return (x > -0.5f && x <= 0.5f) ? 1.0f : 0.0f;
    case ResizeFilter::kBilinear: {
      const float ax = x < 0.0f ? -x : x;
      return ax < 1.0f ? 1.0f - ax : 0.0f;
    }
    default: return cubic_kernel(x, -0.5f);
  }
}

FOVEA_HD float pil_raw_weight(const AxisMap& m, float center, int tap) {
  return pil_filter(m.filter, mul_rn(static_cast<float>(tap) - center + 0.5f, m.inv_filter_scale));
}

FOVEA_HD TapWindow pil_window(const AxisMap& m, int d) {
  if (m.filter == ResizeFilter::kNearest) {
    // floor((d + 0.5) * src / dst) in integers, so no float error moves a boundary.
    const long long s = ((2LL * d + 1) * m.src_size) / (2LL * m.dst_size);
    return TapWindow{static_cast<int>(s < m.src_size ? s : m.src_size - 1), 1, 0.0f, 1.0f};
  }
  const float center = mul_rn(static_cast<float>(d) + 0.5f, m.scale);
  int first = static_cast<int>(center - m.support + 0.5f);
  first = first < 0 ? 0 : first;
  int last = static_cast<int>(center + m.support + 0.5f);
  last = last > m.src_size ? m.src_size : last;
  float sum = 0.0f;
  for (int s = first; s < last; ++s) sum += pil_raw_weight(m, center, s);
  return TapWindow{first, last - first, center, sum != 0.0f ? 1.0f / sum : 0.0f};
}

// The OpenCV window of one filter, known at compile time (the fused preprocess calls these
// directly; tap_window dispatches to them).
template <ResizeFilter kFilter>
FOVEA_HD TapWindow opencv_window_of(const AxisMap& m, int d) {
  if constexpr (kFilter == ResizeFilter::kNearest) {
    // cv::resize computes floor(d * src / dst); integers keep it exact.
    const long long s = (static_cast<long long>(d) * m.src_size) / m.dst_size;
    return TapWindow{static_cast<int>(s < m.src_size ? s : m.src_size - 1), 1, 0.0f, 1.0f};
  } else if constexpr (kFilter == ResizeFilter::kArea) {
    // The source span [f1, f2) of output pixel d; products first, so integer scales stay exact.
    const float f1 =
        static_cast<float>(static_cast<long long>(d) * m.src_size) / static_cast<float>(m.dst_size);
    const float f2 =
        static_cast<float>(static_cast<long long>(d + 1) * m.src_size) / static_cast<float>(m.dst_size);
    const int first = floor_to_int(f1);
    int end = floor_to_int(f2);
    end = static_cast<float>(end) < f2 ? end + 1 : end;
    end = end > m.src_size ? m.src_size : end;
    // OpenCV shrinks the cell at the right border (cellWidth = min(scale, src - f1)).
    const float rest = static_cast<float>(m.src_size) - f1;
    const float cell = m.scale < rest ? m.scale : rest;
    return TapWindow{first, end - first, f1, 1.0f / cell};
  } else {
    const float f = mul_rn(static_cast<float>(d) + 0.5f, m.scale) - 0.5f;
    const int s = floor_to_int(f);
    constexpr bool kCubic = kFilter == ResizeFilter::kBicubic;
    return TapWindow{kCubic ? s - 1 : s, kCubic ? 4 : 2, f - static_cast<float>(s), 1.0f};
  }
}

template <ResizeFilter kFilter>
FOVEA_HD float opencv_weight_of(const AxisMap& m, const TapWindow& w, int k) {
  if constexpr (kFilter == ResizeFilter::kNearest) {
    return 1.0f;
  } else if constexpr (kFilter == ResizeFilter::kBilinear) {
    return k == 0 ? 1.0f - w.position : w.position;
  } else if constexpr (kFilter == ResizeFilter::kBicubic) {
    // OpenCV's interpolateCubic: distances 1+t, t, 1-t, 2-t; the last makes the sum exactly 1.
    const float t = w.position;
    const float c0 = cubic_kernel(1.0f + t, -0.75f);
    const float c1 = cubic_kernel(t, -0.75f);
    const float c2 = cubic_kernel(1.0f - t, -0.75f);
    return k == 0 ? c0 : (k == 1 ? c1 : (k == 2 ? c2 : 1.0f - c0 - c1 - c2));
  } else {
    const float lo = static_cast<float>(w.first + k);
    const float start = lo > w.position ? lo : w.position;
    const float span_end = w.position + m.scale;
    const float end = lo + 1.0f < span_end ? lo + 1.0f : span_end;
    return end > start ? (end - start) * w.norm : 0.0f;
  }
}

FOVEA_HD TapWindow opencv_window(const AxisMap& m, int d) {
  switch (m.filter) {
    case ResizeFilter::kNearest: return opencv_window_of<ResizeFilter::kNearest>(m, d);
    case ResizeFilter::kArea: return opencv_window_of<ResizeFilter::kArea>(m, d);
    case ResizeFilter::kBilinear: return opencv_window_of<ResizeFilter::kBilinear>(m, d);
    default: return opencv_window_of<ResizeFilter::kBicubic>(m, d);
  }
}

FOVEA_HD TapWindow tap_window(const AxisMap& m, int d) {
  return m.compat == ResizeCompat::kOpenCv ? opencv_window(m, d) : pil_window(m, d);
}

// The weight of tap k (0 <= k < window.count); the weights of a window sum to 1.
FOVEA_HD float tap_weight(const AxisMap& m, const TapWindow& w, int k) {
  if (m.compat == ResizeCompat::kPil) {
    return m.filter == ResizeFilter::kNearest ? 1.0f : pil_raw_weight(m, w.position, w.first + k) * w.norm;
  }
  switch (m.filter) {
    case ResizeFilter::kNearest: return opencv_weight_of<ResizeFilter::kNearest>(m, w, k);
    case ResizeFilter::kBilinear: return opencv_weight_of<ResizeFilter::kBilinear>(m, w, k);
    case ResizeFilter::kBicubic: return opencv_weight_of<ResizeFilter::kBicubic>(m, w, k);
    default: return opencv_weight_of<ResizeFilter::kArea>(m, w, k);
  }
}

FOVEA_HD int clamp_index(int i, int size) {
  return i < 0 ? 0 : (i >= size ? size - 1 : i);
}

// Where the resized ROI lands in an output image: the placed region and the scale it was
// resized by. Postprocessing maps an output point back with
//   source = roi origin + (output - offset) / scale.
struct ResizePlacement {
  int offset_x = 0;
  int offset_y = 0;
  int width = 0;  // placed extent; the rest of the output is padding
  int height = 0;
  float scale_x = 1.0f;  // width / roi width
  float scale_y = 1.0f;
};

// How a source ROI is fitted into an output image.
enum class ResizeFit {
  kStretch,            // fill the output, aspect ratio not kept
  kLetterbox,          // keep the aspect ratio, center, pad both sides
  kKeepAspectTopLeft,  // keep the aspect ratio, place at the top-left corner, pad right/bottom
};

inline ResizePlacement fit_placement(ResizeFit fit, int roi_width, int roi_height, int dst_width,
                                     int dst_height) {
  ResizePlacement p{0, 0, dst_width, dst_height, 1.0f, 1.0f};
  if (fit != ResizeFit::kStretch) {
    // Scale by the tighter axis; the other axis rounds to the nearest pixel, at least 1.
    const double sx = static_cast<double>(dst_width) / roi_width;
    const double sy = static_cast<double>(dst_height) / roi_height;
    if (sx <= sy) {
      const long long h = static_cast<long long>(roi_height * sx + 0.5);
      p.height = static_cast<int>(h < 1 ? 1 : (h > dst_height ? dst_height : h));
    } else {
      const long long w = static_cast<long long>(roi_width * sy + 0.5);
      p.width = static_cast<int>(w < 1 ? 1 : (w > dst_width ? dst_width : w));
    }
    if (fit == ResizeFit::kLetterbox) {
      p.offset_x = (dst_width - p.width) / 2;
      p.offset_y = (dst_height - p.height) / 2;
    }
  }
  p.scale_x = static_cast<float>(p.width) / static_cast<float>(roi_width);
  p.scale_y = static_cast<float>(p.height) / static_cast<float>(roi_height);
  return p;
}

// Everything one image of a resize needs, in plain pointers so the kernel and the CPU reference
// share it. Pitches are in bytes; planes as in core/image.h.
inline constexpr int kResizeMaxPlanes = 4;
struct ResizeImageArgs {
  const unsigned char* src[kResizeMaxPlanes];
  long long src_pitch[kResizeMaxPlanes];
  unsigned char* dst[kResizeMaxPlanes];
  long long dst_pitch[kResizeMaxPlanes];
  int roi_x, roi_y;
  int dst_width, dst_height;
  int offset_x, offset_y;  // the placement (see fit_placement); its extent is x.dst_size, y.dst_size
  AxisMap x, y;
};

// Reads through the read-only data cache on the device.
template <typename T>
FOVEA_HD T load_readonly(const T* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// Pixel access per format: packed 8-bit with C interleaved channels (RGB8/BGR8/RGBA8/GRAY8),
// rounded once with to_u8; planar float32 with one plane per channel, stored unrounded.
template <int C>
struct PackedU8Pixels {
  static constexpr int kChannels = C;
  FOVEA_HD static float load(const ResizeImageArgs& a, int x, int y, int c) {
    return static_cast<float>(load_readonly(a.src[0] + y * a.src_pitch[0] + x * C + c));
  }
  FOVEA_HD static void store(const ResizeImageArgs& a, int x, int y, int c, float v) {
    a.dst[0][y * a.dst_pitch[0] + x * C + c] = to_u8(v);
  }
};

template <int C>
struct PlanarF32Pixels {
  static constexpr int kChannels = C;
  FOVEA_HD static float load(const ResizeImageArgs& a, int x, int y, int c) {
    return load_readonly(reinterpret_cast<const float*>(a.src[c] + y * a.src_pitch[c]) + x);
  }
  FOVEA_HD static void store(const ResizeImageArgs& a, int x, int y, int c, float v) {
    reinterpret_cast<float*>(a.dst[c] + y * a.dst_pitch[c])[x] = v;
  }
};

// Output pixel (ox, oy) of one image: the pad value outside the placement, else the weighted sum
// of the source taps (separable weights, multiplied per tap).
template <class Pixels>
FOVEA_HD void resize_pixel(const ResizeImageArgs& a, const float* pad, int ox, int oy) {
  constexpr int kC = Pixels::kChannels;
  float acc[kC];
  const int dx = ox - a.offset_x;
  const int dy = oy - a.offset_y;
  if (dx < 0 || dy < 0 || dx >= a.x.dst_size || dy >= a.y.dst_size) {
    for (int c = 0; c < kC; ++c) acc[c] = pad[c];
  } else {
    for (int c = 0; c < kC; ++c) acc[c] = 0.0f;
    const TapWindow wx = tap_window(a.x, dx);
    const TapWindow wy = tap_window(a.y, dy);
    for (int ky = 0; ky < wy.count; ++ky) {
      const float weight_y = tap_weight(a.y, wy, ky);
      const int sy = a.roi_y + clamp_index(wy.first + ky, a.y.src_size);
      for (int kx = 0; kx < wx.count; ++kx) {
        const float w = weight_y * tap_weight(a.x, wx, kx);
        const int sx = a.roi_x + clamp_index(wx.first + kx, a.x.src_size);
        for (int c = 0; c < kC; ++c) acc[c] += w * Pixels::load(a, sx, sy, c);
      }
    }
  }
  for (int c = 0; c < kC; ++c) Pixels::store(a, ox, oy, c, acc[c]);
}

}  // namespace fovea::image
