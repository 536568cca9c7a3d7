// IEEE half precision on the host: the storage type for float16 tensors and images, and exact
// conversions (the runtime's CPU reference, the image ops' references and the tests share them).
#pragma once

#include <cstdint>

namespace fovea {

// A half stored as its bits; CPU code converts to float to compute.
struct Half {
  std::uint16_t bits = 0;
};
float half_to_float(Half h);
Half float_to_half(float f);  // round to nearest even, saturating to infinity like a hardware cast

}  // namespace fovea
