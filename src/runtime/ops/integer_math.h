// Integer arithmetic the CPU elementwise ops and their CUDA kernels share (FOVEA_HD): wrapping on
// overflow like the other ONNX runtimes, without the undefined behaviour of signed overflow in
// C++ (computed in the unsigned type of the same size), and Pow by squaring.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/host_device.h"

namespace fovea::runtime::ops {

template <typename T>
FOVEA_HD T wrapping_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}

template <typename T>
FOVEA_HD T wrapping_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}

template <typename T>
FOVEA_HD T wrapping_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

// base^exponent by squaring, wrapping on overflow; a negative exponent gives the truncated
// 1 / base^-exponent (0 unless |base| is 1, and 0 for base 0 rather than a trap).
template <typename T, typename E>
FOVEA_HD T integer_power(T base, E exponent) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) {
      if (base == 1) return T{1};
      if (base == -1) return exponent % 2 == 0 ? T{1} : T{-1};
      return T{0};
    }
  }
  T result{1};
  for (auto e = static_cast<std::uint64_t>(exponent); e != 0; e >>= 1) {
    if ((e & 1) != 0) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
  }
  return result;
}

}  // namespace fovea::runtime::ops
