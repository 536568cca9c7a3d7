// FOVEA_CHECK: aborts on a broken invariant (a bug in fovea, never bad input).
#pragma once

namespace fovea::detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line, const char* message);
}  // namespace fovea::detail

#define FOVEA_CHECK(cond)                                                \
  do {                                                                   \
    if (!(cond)) {                                                       \
      ::fovea::detail::check_failed(#cond, __FILE__, __LINE__, nullptr); \
    }                                                                    \
  } while (0)

#define FOVEA_CHECK_MSG(cond, msg)                                     \
  do {                                                                 \
    if (!(cond)) {                                                     \
      ::fovea::detail::check_failed(#cond, __FILE__, __LINE__, (msg)); \
    }                                                                  \
  } while (0)
