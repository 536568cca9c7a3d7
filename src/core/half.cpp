#include "core/half.h"

#include <bit>
#include <cmath>

namespace fovea {

float half_to_float(Half h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) {  // infinity or NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

Half float_to_half(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity stays infinity, NaN stays a quiet NaN
    return {static_cast<std::uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u))};
  }
  if (magnitude >= 0x477ff000u) {  // rounds to above 65504: infinity
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  }
  if (magnitude < 0x38800000u) {  // below the smallest normal half: a subnormal, rounded to even
    const float value = std::bit_cast<float>(magnitude);
    const float scaled = value * 16777216.0f;  // 2^24: one unit of the subnormal mantissa
    const auto rounded = static_cast<std::uint16_t>(std::nearbyint(scaled));
    return {static_cast<std::uint16_t>(sign | rounded)};
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t rebased = magnitude - (112u << 23);
  const std::uint32_t round_bit = (rebased >> 13) & 1u;
  const std::uint32_t rounded = (rebased + 0xfffu + round_bit) >> 13;
  return {static_cast<std::uint16_t>(sign | rounded)};
}

}  // namespace fovea
