// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, shared by the CPU reference
// (quantize.cpp) and the CUDA kernels (cuda/ops/quantize.cu): the layout that gives each element of
// x its scale and zero point, and the per-element arithmetic (FOVEA_HD), written once so that both
// sides produce the same integers bit for bit.
//
//   QuantizeLinear         y = saturate(round_half_to_even(x / scale) + zero_point)
//   DequantizeLinear       y = (x - zero_point) * scale
//   DynamicQuantizeLinear  range [min(0, min x), max(0, max x)], scale = (max - min) / 255 (1 when
//                          the range is empty: every element is 0), zero_point =
//                          round_half_to_even(clamp(-min / scale, 0, 255)), then QuantizeLinear to uint8
//
// All arithmetic is float32 with one rounding per operation (x / scale divides, never multiplies by
// a reciprocal), as ONNX's reference computes it; float16 x and scales are widened to float32 first,
// as ONNX Runtime does (the reference divides float16 by float16, rounding the quotient to float16
// before rounding it to an integer: the two differ only where that rounding lands on a .5 tie).
// Saturation compares in float, so quotients beyond int32 saturate too, and NaN gives the low end
// of the range (fmaxf ignores NaN), as the reference's int32 conversion does on x86. The range of
// DynamicQuantizeLinear skips NaN elements (fminf/fmaxf), so any order of reduction gives the same
// range.
#pragma once

#include <math.h>

#include <cstdint>
#include <type_traits>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

// How element i of x finds its scale and zero point (the same index in both).
//   per tensor  one scale (a scalar, or a 1-D scale of one element, as the reference reads it)
//   per axis    a 1-D scale along `axis`: index (i / inner) % axis_dim
//   blocked     (opset 21 block_size) a scale of x's shape except dim `axis`, which is
//               ceil(axis_dim / block): `block` consecutive elements along the axis share one
enum class QuantMode : std::uint8_t { kPerTensor, kPerAxis, kBlocked };

struct QuantLayout {
  QuantMode mode = QuantMode::kPerTensor;
  std::int64_t inner = 1;     // product of x's dims after the axis
  std::int64_t axis_dim = 1;  // x's dim along the axis
  std::int64_t block = 1;     // blocked: elements along the axis per scale
  std::int64_t blocks = 1;    // blocked: the scale's dim along the axis
  // x has fewer than 2^32 elements: the divisions run in 32 bits, several times cheaper than the
  // 64-bit ones a GPU emulates (they would bound a per-axis kernel, not memory).
  bool narrow = false;

  FOVEA_HD std::int64_t scale_index(std::int64_t i) const {
    if (mode == QuantMode::kPerTensor) return 0;
    return narrow ? index_in(static_cast<std::uint32_t>(i)) : index_in(i);
  }

 private:
  template <typename I>
  FOVEA_HD std::int64_t index_in(I i) const {
    const auto in = static_cast<I>(inner);
    const auto dim = static_cast<I>(axis_dim);
    if (mode == QuantMode::kPerAxis) return static_cast<std::int64_t>((i / in) % dim);
    const I row = i / in;  // outer * axis_dim + position along the axis
    const I outer = row / dim;
    const I along = row - outer * dim;
    return static_cast<std::int64_t>((outer * static_cast<I>(blocks) + along / static_cast<I>(block)) * in +
                                     (i - row * in));
  }
};

// The layout of the node's scale (input 1) over x (input 0), from the axis and block_size
// attributes; checks the scale's shape against x's and the zero point's (input 2) against the
// scale's. Dims unknown at shape inference are not checked; run() and CUDA's prepare() call it
// again with every dim known.
Result<QuantLayout> quant_layout(const InferContext& ctx);

// Round half to even (rintf under the default rounding mode, on the host and on the device).
template <typename Q>
FOVEA_HD Q quantize_value(float x, float scale, Q zero_point) {
  static_assert(sizeof(Q) == 1 && std::is_integral_v<Q>, "fovea quantizes to int8 and uint8");
  constexpr float kLow = std::is_signed_v<Q> ? -128.0f : 0.0f;
  constexpr float kHigh = std::is_signed_v<Q> ? 127.0f : 255.0f;
  // |quotient| < 2^24 adds exactly; beyond, it saturates whatever the sum rounds to.
  const float shifted = add_rn(rintf(div_rn(x, scale)), static_cast<float>(zero_point));
  return static_cast<Q>(fminf(fmaxf(shifted, kLow), kHigh));
}

// x - zero_point is exact in float for 8-bit x; an int32 x (whose zero point is 0 per the spec) is
// rounded to float first, as the reference's astype(float32) does.
template <typename X>
FOVEA_HD float dequantize_value(X x, X zero_point, float scale) {
  return mul_rn(sub_rn(static_cast<float>(x), static_cast<float>(zero_point)), scale);
}

// DynamicQuantizeLinear's range: a plain aggregate (CUDA reduces it in shared memory). It starts
// at [0, 0] (zero_range), which is how the formula's min(0, .) and max(0, .) enter.
struct QuantRange {
  float low;
  float high;
};

FOVEA_HD QuantRange zero_range() {
  return QuantRange{0.0f, 0.0f};
}

FOVEA_HD QuantRange widen_range(QuantRange range, float x) {
  return QuantRange{fminf(range.low, x), fmaxf(range.high, x)};
}

FOVEA_HD QuantRange merge_ranges(QuantRange a, QuantRange b) {
  return QuantRange{fminf(a.low, b.low), fmaxf(a.high, b.high)};
}

struct DynamicQuantParams {
  float scale = 1.0f;
  std::uint8_t zero_point = 0;
};

// ONNX's reference: an empty range (every element 0) gets scale 1 and zero point 0 (y is then 0)
// rather than dividing by a scale of 0; the zero point is clamped to [0, 255] before it is rounded.
FOVEA_HD DynamicQuantParams dynamic_quant_params(QuantRange range) {
  if (range.high == range.low) return DynamicQuantParams{};
  constexpr float kLevels = 255.0f;  // uint8's qmax - qmin
  const float scale = div_rn(sub_rn(range.high, range.low), kLevels);
  const float zero_point = fminf(fmaxf(sub_rn(0.0f, div_rn(range.low, scale)), 0.0f), kLevels);
  return DynamicQuantParams{scale, static_cast<std::uint8_t>(rintf(zero_point))};
}

}  // namespace fovea::runtime::ops
