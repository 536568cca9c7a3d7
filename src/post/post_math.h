// Arithmetic shared by the postprocessing kernels and their CPU references (FOVEA_HD), written so
// both sides compute bit-identical results where the ops promise exact parity (argmax, masks, NMS):
//   - the *_rn helpers of core/host_device.h keep nvcc from fusing a multiply and an add into one
//     FMA, so IoUs and bilinear weights round the same way on both sides;
//   - float16 inputs are read through an exact bit conversion rather than the CUDA intrinsic;
//   - ranking uses 64-bit keys that order (value, index) totally, so sorts agree on ties.
// The ranking keys and the box IoU are shared with ONNX NonMaxSuppression and the trackers, so
// they live once in core/box.h.
#pragma once

#include <cstdint>

#include "core/box.h"
#include "core/host_device.h"

namespace fovea::post {

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

// A box written out as the four floats x1, y1, x2, y2 (the boxes tensors' layout).
FOVEA_HD void store_box(float* out, Box b) {
  out[0] = b.x1;
  out[1] = b.y1;
  out[2] = b.x2;
  out[3] = b.y2;
}

// Argmax's comparison: a beats b when it is larger, and any number beats NaN. Callers scan in
// ascending index and replace only when strictly better, so ties go to the lower index.
FOVEA_HD bool beats(float a, float b) {
  return a > b || (is_nan(b) && !is_nan(a));
}

// A box suppresses a lower-ranked one when their IoU is strictly above the threshold (as
// torchvision.ops.nms): IoU exactly at the threshold keeps both.
FOVEA_HD bool suppresses(Box a, Box b, float iou_threshold) {
  return box_iou(a, b) > iou_threshold;
}

}  // namespace fovea::post
