#include "trace/clock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace fovea::trace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t current_thread_id() {
  // The syscall costs about 100 ns; ranges ask for it on every begin.
  thread_local const std::uint64_t id = static_cast<std::uint64_t>(syscall(SYS_gettid));
  return id;
}

}  // namespace fovea::trace
