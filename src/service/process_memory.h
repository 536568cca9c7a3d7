// The memory of a long-running fovea (`fovea serve`): what the process holds, for /metrics, and
// handing back what the allocator keeps after it is freed.
//
// glibc's malloc gives each thread that allocates an arena of its own (up to 8 per core) and keeps
// what is freed there for reuse; only the top of an arena's heap is returned by itself. A service
// whose cameras reconnect creates and destroys decoders, their threads and their buffers all day,
// so the freed pages spread over the arenas and the resident size creeps up in steps without a
// leak. malloc_trim(0) returns every whole free page of every arena to the system; calling it now
// and then keeps the resident size at what is in use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace fovea::service {

// The process's resident set size in bytes (/proc/self/statm), or nullopt where it cannot be read.
std::optional<std::uint64_t> resident_memory_bytes();

// Returns the allocator's free pages to the system (glibc's malloc_trim(0)); true when some were.
bool release_free_heap();

// Calls release_free_heap() every `period` on a thread of its own until destroyed; the destructor
// returns at once, whatever the period.
class PeriodicHeapRelease {
 public:
  explicit PeriodicHeapRelease(std::chrono::steady_clock::duration period);
  ~PeriodicHeapRelease();
  PeriodicHeapRelease(const PeriodicHeapRelease&) = delete;
  PeriodicHeapRelease& operator=(const PeriodicHeapRelease&) = delete;

  // How many times it has run so far.
  int releases() const;

 private:
  void run(std::chrono::steady_clock::duration period);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int releases_ = 0;
  std::thread thread_;
};

}  // namespace fovea::service
