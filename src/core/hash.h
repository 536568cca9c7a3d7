// Small deterministic hashes for reproducible synthetic media (test clips, the demo clip).
#pragma once

#include <cstdint>

namespace fovea {

// MurmurHash3's 32-bit finalizer: every input bit affects every output bit.
inline std::uint32_t murmur_finalize(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

}  // namespace fovea
