// Box and ranking arithmetic written once, as FOVEA_HD functions, for every place that compares
// detections: ONNX NonMaxSuppression (runtime: the CPU kernel and the CUDA kernel), fovea's own
// detection NMS (post/nms.h) and the trackers' IoU association.
//   - ranking keys: one 64-bit key per candidate orders (score, index) totally, so CPU sorts, CUB
//     sorts and every tie agree;
//   - IoU: every float operation rounds on its own (the *_rn helpers keep nvcc from fusing a
//     multiply and an add into an FMA), so the CPU references and the kernels make bit-identical
//     suppression decisions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace fovea {

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
// NMS ranking. The score must not be NaN (callers drop NaN first).
FOVEA_HD std::uint64_t descending_score_key(float score, std::uint32_t index) {
  return static_cast<std::uint64_t>(~float_order_bits(score)) << 32 | index;
}
FOVEA_HD float key_score(std::uint64_t key) {
  return float_from_order_bits(~static_cast<std::uint32_t>(key >> 32));
}
FOVEA_HD std::uint32_t key_index(std::uint64_t key) {
  return static_cast<std::uint32_t>(key & 0xffffffffu);
}

// Boxes are corners: (x1, y1) top-left, (x2, y2) bottom-right once normalized.
struct Box {
  float x1 = 0.0f;
  float y1 = 0.0f;
  float x2 = 0.0f;
  float y2 = 0.0f;
  bool operator==(const Box&) const = default;
};

// Boxes given with x1 > x2 or y1 > y2 get their corners swapped (a decoder with a negative width
// produces them, and ONNX allows either corner order) instead of a negative area.
FOVEA_HD Box normalized_box(Box b) {
  return Box{fminf(b.x1, b.x2), fminf(b.y1, b.y2), fmaxf(b.x1, b.x2), fmaxf(b.y1, b.y2)};
}

FOVEA_HD float box_area(Box b) {
  return mul_rn(sub_rn(b.x2, b.x1), sub_rn(b.y2, b.y1));
}

// Intersection over union, every operation rounded on its own. A pair whose union is not positive
// (both empty, or NaN/infinite coordinates) has IoU 0. The result is symmetric in x and y, which
// lets ONNX's (y, x) boxes use it unchanged.
FOVEA_HD float box_iou(Box a, Box b) {
  const float inter_w = fmaxf(0.0f, sub_rn(fminf(a.x2, b.x2), fmaxf(a.x1, b.x1)));
  const float inter_h = fmaxf(0.0f, sub_rn(fminf(a.y2, b.y2), fmaxf(a.y1, b.y1)));
  const float inter = mul_rn(inter_w, inter_h);
  const float union_area = sub_rn(add_rn(box_area(a), box_area(b)), inter);
  return union_area > 0.0f ? div_rn(inter, union_area) : 0.0f;
}

}  // namespace fovea
