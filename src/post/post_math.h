// Arithmetic shared by the postprocessing kernels and their CPU references (FOVEA_HD), written so
// both sides compute bit-identical results where the ops promise exact parity (argmax, masks, NMS):
//   - the *_rn helpers of core/host_device.h keep nvcc from fusing a multiply and an add into one
//     FMA, so IoUs and bilinear weights round the same way on both sides;
//   - float16 inputs are read through an exact bit conversion rather than the CUDA intrinsic;
//   - ranking uses 64-bit keys that order (value, index) totally, so sorts agree on ties.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace fovea::post {

FOVEA_HD float bits_to_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}
FOVEA_HD std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof f);
  return bits;
#endif
}

// IEEE binary16 bits to float. Every half is exactly representable as a float, so this is exact.
FOVEA_HD float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) {
    return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  }
  if (exponent == 0) {
    // Zero and subnormals: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  // Rebias the exponent from 15 to 127.
  return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// Element loads for the dtypes the ops accept: float (float32) and std::uint16_t (float16 bits).
FOVEA_HD float load_float(const float* p) {
  return *p;
}
FOVEA_HD float load_float(const std::uint16_t* p) {
  return half_bits_to_float(*p);
}

FOVEA_HD bool is_nan(float f) {
  return f != f;
}

// Maps floats to unsigned integers in the same order (-inf lowest, +inf highest); -0 and +0 both
// map to +0's value so that equal scores compare equal.
FOVEA_HD std::uint32_t float_order_bits(float f) {
  const std::uint32_t bits = f == 0.0f ? 0u : float_to_bits(f);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}
FOVEA_HD float float_from_order_bits(std::uint32_t order) {
  return bits_to_float((order & 0x80000000u) != 0 ? order & 0x7fffffffu : ~order);
}

// Ascending order of these keys is descending score, then ascending index: the tie rule of every
// ranking in src/post. The score must not be NaN (callers drop NaN first).
FOVEA_HD std::uint64_t descending_score_key(float score, std::uint32_t index) {
  return static_cast<std::uint64_t>(~float_order_bits(score)) << 32 | index;
}
FOVEA_HD float key_score(std::uint64_t key) {
  return float_from_order_bits(~static_cast<std::uint32_t>(key >> 32));
}
FOVEA_HD std::uint32_t key_index(std::uint64_t key) {
  return static_cast<std::uint32_t>(key & 0xffffffffu);
}

// Argmax's comparison: a beats b when it is larger, and any number beats NaN. Callers scan in
// ascending index and replace only when strictly better, so ties go to the lower index.
FOVEA_HD bool beats(float a, float b) {
  return a > b || (is_nan(b) && !is_nan(a));
}

// Boxes are corners in pixels or normalized units: (x1, y1) top-left, (x2, y2) bottom-right.
struct Box {
  float x1 = 0.0f;
  float y1 = 0.0f;
  float x2 = 0.0f;
  float y2 = 0.0f;
};

// NMS normalizes boxes given with x1 > x2 or y1 > y2 by swapping the corners (a decoder with a
// negative width produces them) instead of treating them as negative areas.
FOVEA_HD Box normalized_box(Box b) {
  return Box{fminf(b.x1, b.x2), fminf(b.y1, b.y2), fmaxf(b.x1, b.x2), fmaxf(b.y1, b.y2)};
}

// Intersection over union of two normalized boxes, in float with every operation rounded on its
// own. Zero-area pairs (union 0) have IoU 0, so they never suppress each other; a NaN union (NaN
// coordinates) also gives 0.
FOVEA_HD float box_iou(Box a, Box b) {
  const float inter_w = fmaxf(0.0f, sub_rn(fminf(a.x2, b.x2), fmaxf(a.x1, b.x1)));
  const float inter_h = fmaxf(0.0f, sub_rn(fminf(a.y2, b.y2), fmaxf(a.y1, b.y1)));
  const float inter = mul_rn(inter_w, inter_h);
  const float area_a = mul_rn(sub_rn(a.x2, a.x1), sub_rn(a.y2, a.y1));
  const float area_b = mul_rn(sub_rn(b.x2, b.x1), sub_rn(b.y2, b.y1));
  const float union_area = sub_rn(add_rn(area_a, area_b), inter);
  return union_area > 0.0f ? div_rn(inter, union_area) : 0.0f;
}

// A box suppresses a lower-ranked one when their IoU is strictly above the threshold (as
// torchvision.ops.nms): IoU exactly at the threshold keeps both.
FOVEA_HD bool suppresses(Box a, Box b, float iou_threshold) {
  return box_iou(a, b) > iou_threshold;
}

}  // namespace fovea::post
