// The arithmetic of the spatial ops that read an image at computed positions or across channels,
// shared by the CPU reference (spatial.cpp) and the CUDA kernels (cuda/ops/spatial.cu): plans
// built once on the host from the node and its concrete shapes, and per-output-element functions
// (FOVEA_HD) templated on the compute type C (float or double; CUDA's float16 computes in float) and
// on a `load(offset) -> C` that reads the input, so both sides compute each element the same way.
//
//   RoiAlign     RoiAlignPlan    bilinear samples averaged (or maxed) over each bin of a box
//   GridSample   GridSamplePlan  one sample per output pixel at a normalized grid position
//   LRN          LrnPlan         a window of squared values across channels
//   MaxUnpool    MaxUnpoolPlan   values scattered to their MaxPool indices
//
// RoiAlign and GridSample follow onnxruntime, which the ONNX reference implementation copies:
// RoiAlign's max mode takes the largest weighted corner of each sample (not the largest
// interpolated value), GridSample's nearest mode rounds halves to even.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

// ---- RoiAlign ----

struct RoiAlignPlan {
  std::int64_t channels = 0;
  std::int64_t height = 0;  // the input's
  std::int64_t width = 0;
  std::int64_t out_height = 1;
  std::int64_t out_width = 1;
  std::int64_t sampling_ratio = 0;  // 0: ceil(roi size / output size) samples per bin side
  float spatial_scale = 1.0f;
  bool half_pixel = true;  // coordinate_transformation_mode (opset 16; before: output_half_pixel)
  bool max_mode = false;
};
// X [N, C, H, W], rois [R, 4], batch_indices [R]; the output is [R, C, out_height, out_width].
Result<RoiAlignPlan> roi_align_plan(const InferContext& ctx, const Shape& x, const Shape& rois);

// The bilinear weights and plane offsets of one sample at (y, x); all weights 0 outside the image.
template <typename C>
struct BilinearSample {
  std::int64_t offsets[4] = {};
  C weights[4] = {};
};
template <typename C>
FOVEA_HD BilinearSample<C> roi_align_sample(C y, C x, std::int64_t height, std::int64_t width) {
  BilinearSample<C> s;
  if (y < C(-1) || y > C(height) || x < C(-1) || x > C(width)) return s;
  if (y < C(0)) y = C(0);
  if (x < C(0)) x = C(0);
  auto y_low = static_cast<std::int64_t>(y);
  auto x_low = static_cast<std::int64_t>(x);
  std::int64_t y_high = y_low + 1;
  std::int64_t x_high = x_low + 1;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = C(y_low);
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = C(x_low);
  }
  const C ly = y - C(y_low);
  const C lx = x - C(x_low);
  const C hy = C(1) - ly;
  const C hx = C(1) - lx;
  s.offsets[0] = y_low * width + x_low;
  s.offsets[1] = y_low * width + x_high;
  s.offsets[2] = y_high * width + x_low;
  s.offsets[3] = y_high * width + x_high;
  s.weights[0] = hy * hx;
  s.weights[1] = hy * lx;
  s.weights[2] = ly * hx;
  s.weights[3] = ly * lx;
  return s;
}

// Output element (ph, pw) of one channel plane for the box (x1, y1, x2, y2) in input coordinates
// before spatial_scale; load(o) reads offset o of that plane.
template <typename C, typename Load>
FOVEA_HD C roi_align_value(const RoiAlignPlan& plan, const C box[4], std::int64_t ph, std::int64_t pw,
                           Load load) {
  const C offset = plan.half_pixel ? C(0.5) : C(0);
  const C scale = C(plan.spatial_scale);
  const C start_w = box[0] * scale - offset;
  const C start_h = box[1] * scale - offset;
  C roi_w = box[2] * scale - offset - start_w;
  C roi_h = box[3] * scale - offset - start_h;
  if (!plan.half_pixel) {  // the legacy mode forces boxes of at least one pixel
    roi_w = roi_w > C(1) ? roi_w : C(1);
    roi_h = roi_h > C(1) ? roi_h : C(1);
  }
  const C bin_h = roi_h / C(plan.out_height);
  const C bin_w = roi_w / C(plan.out_width);
  const auto grid_h = plan.sampling_ratio > 0 ? plan.sampling_ratio
                                              : static_cast<std::int64_t>(ceil(roi_h / C(plan.out_height)));
  const auto grid_w = plan.sampling_ratio > 0 ? plan.sampling_ratio
                                              : static_cast<std::int64_t>(ceil(roi_w / C(plan.out_width)));
  const std::int64_t count = grid_h * grid_w > 1 ? grid_h * grid_w : 1;
  C result = C(0);
  bool first = true;
  for (std::int64_t iy = 0; iy < grid_h; ++iy) {
    const C y = start_h + C(ph) * bin_h + (C(iy) + C(0.5)) * bin_h / C(grid_h);
    for (std::int64_t ix = 0; ix < grid_w; ++ix) {
      const C x = start_w + C(pw) * bin_w + (C(ix) + C(0.5)) * bin_w / C(grid_w);
      const BilinearSample<C> s = roi_align_sample(y, x, plan.height, plan.width);
      if (plan.max_mode) {
        for (int k = 0; k < 4; ++k) {
          const C term = s.weights[k] * load(s.offsets[k]);
          if (first || term > result) result = term;
          first = false;
        }
      } else {
        for (int k = 0; k < 4; ++k) result += s.weights[k] * load(s.offsets[k]);
      }
    }
  }
  return plan.max_mode ? result : result / C(count);
}

// ---- GridSample ----

enum class GridSampleMode : std::uint8_t { kBilinear, kNearest, kBicubic };
enum class GridSamplePadding : std::uint8_t { kZeros, kBorder, kReflection };
struct GridSamplePlan {
  GridSampleMode mode = GridSampleMode::kBilinear;
  GridSamplePadding padding = GridSamplePadding::kZeros;
  bool align_corners = false;
  std::int64_t channels = 0;
  std::int64_t height = 0;  // the input's
  std::int64_t width = 0;
  std::int64_t out_height = 0;  // the grid's
  std::int64_t out_width = 0;
};
// X [N, C, H, W] and grid [N, H_out, W_out, 2]; the output is [N, C, H_out, W_out].
Result<GridSamplePlan> grid_sample_plan(const InferContext& ctx, const Shape& x, const Shape& grid);

// A normalized coordinate in [-1, 1] as a pixel position along a side of `size` pixels.
template <typename C>
FOVEA_HD C grid_denormalize(C n, std::int64_t size, bool align_corners) {
  return align_corners ? (n + C(1)) / C(2) * C(size - 1) : ((n + C(1)) * C(size) - C(1)) / C(2);
}

// x folded back into [low, high] by reflecting at the bounds as often as needed.
template <typename C>
FOVEA_HD C grid_reflect(C x, C low, C high) {
  const C range = high - low;
  if (range <= C(0)) return low;  // a side of one pixel with align_corners
  if (x < low) {
    const C d = low - x;
    const auto n = static_cast<std::int64_t>(d / range);
    const C r = d - C(n) * range;
    return n % 2 == 0 ? low + r : high - r;
  }
  if (x > high) {
    const C d = x - high;
    const auto n = static_cast<std::int64_t>(d / range);
    const C r = d - C(n) * range;
    return n % 2 == 0 ? high - r : low + r;
  }
  return x;
}

// The lowest and highest positions inside the image along a side: pixel centres with
// align_corners, pixel edges without.
template <typename C>
FOVEA_HD C grid_low(const GridSamplePlan& plan) {
  return plan.align_corners ? C(0) : C(-0.5);
}
template <typename C>
FOVEA_HD C grid_high(const GridSamplePlan& plan, std::int64_t size) {
  return plan.align_corners ? C(size - 1) : C(size) - C(0.5);
}

// The pixel at integer (row, col) under the padding mode; load(o) reads the channel plane.
template <typename C, typename Load>
FOVEA_HD C grid_pixel(const GridSamplePlan& plan, std::int64_t row, std::int64_t col, Load load) {
  switch (plan.padding) {
    case GridSamplePadding::kZeros:
      if (row < 0 || row >= plan.height || col < 0 || col >= plan.width) return C(0);
      break;
    case GridSamplePadding::kBorder:
      col = col < 0 ? 0 : (col >= plan.width ? plan.width - 1 : col);
      row = row < 0 ? 0 : (row >= plan.height ? plan.height - 1 : row);
      break;
    case GridSamplePadding::kReflection:
      col =
          static_cast<std::int64_t>(grid_reflect(C(col), grid_low<C>(plan), grid_high<C>(plan, plan.width)));
      row =
          static_cast<std::int64_t>(grid_reflect(C(row), grid_low<C>(plan), grid_high<C>(plan, plan.height)));
      break;
  }
  return load(row * plan.width + col);
}

// Keys' cubic convolution coefficients (A = -0.75) for the four taps around a fraction t.
template <typename C>
FOVEA_HD void grid_cubic_coefficients(C t, C coefficients[4]) {
  const C a = C(-0.75);
  t = t < C(0) ? -t : t;
  const C t1 = t + C(1);
  const C t2 = C(1) - t;
  const C t3 = C(2) - t;
  coefficients[0] = ((a * t1 - C(5) * a) * t1 + C(8) * a) * t1 - C(4) * a;
  coefficients[1] = ((a + C(2)) * t - (a + C(3))) * t * t + C(1);
  coefficients[2] = ((a + C(2)) * t2 - (a + C(3))) * t2 * t2 + C(1);
  coefficients[3] = ((a * t3 - C(5) * a) * t3 + C(8) * a) * t3 - C(4) * a;
}

// The sample at normalized grid position (gx, gy) of one channel plane.
template <typename C, typename Load>
FOVEA_HD C grid_sample_value(const GridSamplePlan& plan, C gx, C gy, Load load) {
  C x = grid_denormalize(gx, plan.width, plan.align_corners);
  C y = grid_denormalize(gy, plan.height, plan.align_corners);
  if (plan.mode == GridSampleMode::kNearest) {
    x = nearbyint(x);
    y = nearbyint(y);
  }
  const C low = grid_low<C>(plan);
  const C x_high = grid_high<C>(plan, plan.width);
  const C y_high = grid_high<C>(plan, plan.height);
  if (x < low || x > x_high || y < low || y > y_high) {
    if (plan.padding == GridSamplePadding::kBorder) {
      x = x < C(0) ? C(0) : (x > C(plan.width - 1) ? C(plan.width - 1) : x);
      y = y < C(0) ? C(0) : (y > C(plan.height - 1) ? C(plan.height - 1) : y);
    } else if (plan.padding == GridSamplePadding::kReflection) {
      x = grid_reflect(x, low, x_high);
      y = grid_reflect(y, low, y_high);
    }
  }
  if (plan.mode == GridSampleMode::kNearest) {
    return grid_pixel<C>(plan, static_cast<std::int64_t>(y), static_cast<std::int64_t>(x), load);
  }
  const C x0 = floor(x);
  const C y0 = floor(y);
  const auto col = static_cast<std::int64_t>(x0);
  const auto row = static_cast<std::int64_t>(y0);
  if (plan.mode == GridSampleMode::kBilinear) {
    const C dx = x - x0;
    const C dy = y - y0;
    const C top =
        (C(1) - dx) * grid_pixel<C>(plan, row, col, load) + dx * grid_pixel<C>(plan, row, col + 1, load);
    const C bottom = (C(1) - dx) * grid_pixel<C>(plan, row + 1, col, load) +
                     dx * grid_pixel<C>(plan, row + 1, col + 1, load);
    return (C(1) - dy) * top + dy * bottom;
  }
  C coefficients[4];
  grid_cubic_coefficients(x - x0, coefficients);
  C rows[4];
  for (int i = 0; i < 4; ++i) {
    rows[i] = C(0);
    for (int j = 0; j < 4; ++j) {
      rows[i] += coefficients[j] * grid_pixel<C>(plan, row - 1 + i, col - 1 + j, load);
    }
  }
  grid_cubic_coefficients(y - y0, coefficients);
  return coefficients[0] * rows[0] + coefficients[1] * rows[1] + coefficients[2] * rows[2] +
         coefficients[3] * rows[3];
}

// ---- LRN ----

struct LrnPlan {
  std::int64_t channels = 0;
  std::int64_t plane = 1;   // elements per channel (the spatial dims)
  std::int64_t before = 0;  // channels of the window before and after the centre
  std::int64_t after = 0;
  float alpha_over_size = 0;
  float beta = 0;
  float bias = 0;
};
// X [N, C, d1, ...]; the output has its shape.
Result<LrnPlan> lrn_plan(const InferContext& ctx, const Shape& x);

// Output element o: x / (bias + alpha / size * sum of squares in the channel window) ^ beta.
template <typename C, typename Load>
FOVEA_HD C lrn_value(const LrnPlan& plan, std::int64_t o, Load load) {
  const std::int64_t c = (o / plan.plane) % plan.channels;
  const std::int64_t first = c - plan.before < 0 ? 0 : c - plan.before;
  const std::int64_t last = c + plan.after >= plan.channels ? plan.channels - 1 : c + plan.after;
  C squares = C(0);
  for (std::int64_t k = first; k <= last; ++k) {
    const C v = load(o + (k - c) * plan.plane);
    squares += v * v;
  }
  return load(o) / pow(C(plan.bias) + C(plan.alpha_over_size) * squares, C(plan.beta));
}

// ---- MaxUnpool ----

// Indices address the whole tensor of the unpooled shape that kernel_shape, strides and pads give,
// as MaxPool's Indices output does. An output_shape input may ask for a larger output (the sizes
// MaxPool floored away): each index keeps its coordinates, so the extra rows and columns stay 0.
struct MaxUnpoolPlan {
  int rank = 0;
  std::int64_t unpooled[kMaxTensorRank] = {};  // the shape the indices address
  std::int64_t out[kMaxTensorRank] = {};       // the output's (output_shape when given)
};
// `output_shape` is that input's value, or nullptr when absent.
Result<MaxUnpoolPlan> max_unpool_plan(const InferContext& ctx, const Shape& x, const Tensor* output_shape);
inline Shape max_unpool_output_shape(const MaxUnpoolPlan& plan) {
  return Shape(plan.out, plan.out + plan.rank);
}

// The output offset of index `index`; -1 when it is outside the unpooled shape.
FOVEA_HD std::int64_t max_unpool_offset(const MaxUnpoolPlan& plan, std::int64_t index) {
  std::int64_t offset = 0;
  std::int64_t stride = 1;
  for (int d = plan.rank - 1; d >= 0; --d) {
    offset += (index % plan.unpooled[d]) * stride;
    index /= plan.unpooled[d];
    stride *= plan.out[d];
  }
  return index == 0 ? offset : -1;
}

}  // namespace fovea::runtime::ops
