#include "service/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>

namespace fovea::service {

std::optional<std::uint64_t> resident_memory_bytes() {
  // statm: size resident shared text lib data dt, in pages.
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size_pages = 0;
  std::uint64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return std::nullopt;
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return std::nullopt;
  return resident_pages * static_cast<std::uint64_t>(page);
}

bool release_free_heap() {
  return malloc_trim(0) != 0;
}

PeriodicHeapRelease::PeriodicHeapRelease(std::chrono::steady_clock::duration period)
    : thread_([this, period] { run(period); }) {}

PeriodicHeapRelease::~PeriodicHeapRelease() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int PeriodicHeapRelease::releases() const {
  const std::lock_guard lock(mutex_);
  return releases_;
}

void PeriodicHeapRelease::run(std::chrono::steady_clock::duration period) {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    release_free_heap();
    lock.lock();
    ++releases_;
  }
}

}  // namespace fovea::service
