// The clocks of the tests that bound their waits and check wall-clock times: the seconds a wait
// has taken (steady clock, which no clock adjustment moves) and the wall clock in microseconds since
// the Unix epoch, the unit of a live frame's capture time.
#pragma once

#include <chrono>
#include <cstdint>

namespace fovea::testing {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline std::int64_t unix_time_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace fovea::testing
