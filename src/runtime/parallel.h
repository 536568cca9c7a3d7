// parallel_for over a process-wide pool of worker threads, for the CPU reference kernels that are
// heavy enough to matter (convolution, matrix products, pooling over large images).
#pragma once

#include <cstdint>
#include <functional>

namespace fovea::runtime {

// Calls body(begin, end) over disjoint chunks covering [0, count). Runs inline when the work is
// smaller than `min_chunk` items, so small ops pay nothing for threading.
void parallel_for(std::int64_t count, std::int64_t min_chunk,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

// Worker threads in the pool (FOVEA_CPU_THREADS, else the hardware's thread count).
int cpu_thread_count();

}  // namespace fovea::runtime
