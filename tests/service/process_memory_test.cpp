// The process's resident size, and handing the allocator's free pages back (process_memory.h).
#include "service/process_memory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

namespace fovea::service {
namespace {

using std::chrono::steady_clock;

TEST(ProcessMemory, ResidentSizeFollowsTouchedMemory) {
  const std::optional<std::uint64_t> before = resident_memory_bytes();
  ASSERT_TRUE(before.has_value());
  EXPECT_GT(*before, 0u);
  constexpr std::size_t kBytes = 64 << 20;
  const auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);
  const std::optional<std::uint64_t> after = resident_memory_bytes();
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after, *before + kBytes / 2);
}

// Small blocks come from the heap, not their own mappings: freed, they stay resident until trimmed,
// as long as a block above them keeps the heap's top in use.
TEST(ProcessMemory, FreedHeapPagesAreHandedBack) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator keeps freed memory in quarantine by design";
#else
  constexpr std::size_t kBlocks = 48 * 1024;
  constexpr std::size_t kBlockBytes = 2048;  // 96 MiB in all
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(std::make_unique<char[]>(kBlockBytes));
    std::memset(blocks.back().get(), 1, kBlockBytes);
  }
  const auto top = std::make_unique<char[]>(kBlockBytes);  // pins the heap's top
  std::memset(top.get(), 1, kBlockBytes);
  blocks.clear();
  blocks.shrink_to_fit();
  const std::uint64_t freed = resident_memory_bytes().value();
  release_free_heap();
  const std::uint64_t released = resident_memory_bytes().value();
  EXPECT_LT(released + (48u << 20), freed)
      << "freed " << freed << " B resident, after the release " << released;
#endif
}

TEST(ProcessMemory, PeriodicReleaseRunsAndStopsAtOnce) {
  {
    const PeriodicHeapRelease often(std::chrono::milliseconds(10));
    const auto deadline = steady_clock::now() + std::chrono::seconds(5);
    while (often.releases() < 3 && steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GE(often.releases(), 3);
  }
  const auto start = steady_clock::now();
  { const PeriodicHeapRelease rarely(std::chrono::hours(1)); }
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(1)) << "the destructor waited for the period";
}

}  // namespace
}  // namespace fovea::service
