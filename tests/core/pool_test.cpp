#include "core/pool.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace fovea {
namespace {

TEST(BufferPool, ReusesReleasedBlocksAndCounts) {
  Result<BufferPool> pool = BufferPool::create("test", MemoryKind::kHost, 4096);
  ASSERT_TRUE(pool.is_ok());
  void* first_address = nullptr;
  {
    Result<PooledBuffer> first = pool->acquire();
    ASSERT_TRUE(first.is_ok());
    first_address = first->data();
    EXPECT_EQ(first->size(), 4096u);
    EXPECT_EQ(pool->stats().blocks_in_use, 1u);
  }
  EXPECT_EQ(pool->stats().blocks_in_use, 0u);
  Result<PooledBuffer> again = pool->acquire();
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->data(), first_address);
  PoolStats stats = pool->stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.blocks_allocated, 1u);
}

TEST(BufferPool, CapacityBoundsMemory) {
  Result<BufferPool> pool = BufferPool::create("bounded", MemoryKind::kHost, 64, 2);
  ASSERT_TRUE(pool.is_ok());
  Result<PooledBuffer> a = pool->acquire();
  Result<PooledBuffer> b = pool->acquire();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  Result<PooledBuffer> c = pool->acquire();
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("bounded"), std::string::npos);
  a->release();
  EXPECT_TRUE(pool->acquire().is_ok());
}

TEST(BufferPool, HandlesOutliveThePoolObject) {
  PooledBuffer kept;
  {
    Result<BufferPool> pool = BufferPool::create("short-lived", MemoryKind::kHost, 128);
    ASSERT_TRUE(pool.is_ok());
    Result<PooledBuffer> buffer = pool->acquire();
    ASSERT_TRUE(buffer.is_ok());
    kept = std::move(buffer).value();
  }
  static_cast<std::uint8_t*>(kept.data())[127] = 1;  // still valid memory (ASan would catch it)
  kept.release();
  EXPECT_FALSE(kept);
}

TEST(BufferPool, ConcurrentAcquireRelease) {
  Result<BufferPool> pool = BufferPool::create("threads", MemoryKind::kHost, 256, 8);
  ASSERT_TRUE(pool.is_ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        Result<PooledBuffer> buffer = pool->acquire();
        if (!buffer.is_ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(pool->stats().blocks_allocated, 4u);
  EXPECT_EQ(pool->stats().blocks_in_use, 0u);
}

TEST(BufferPool, RejectsZeroBlockSize) {
  EXPECT_EQ(BufferPool::create("zero", MemoryKind::kHost, 0).status().code(), StatusCode::kInvalidArgument);
}

BlockArena arena_of(std::size_t block_bytes) {
  Result<BufferPool> pool = BufferPool::create("arena blocks", MemoryKind::kHost, block_bytes);
  EXPECT_TRUE(pool.is_ok());
  return BlockArena(std::move(pool).value());
}

TEST(BlockArena, PacksAlignedAllocationsIntoOneBlock) {
  BlockArena arena = arena_of(1000);
  Result<BlockArena::Allocation> a = arena.allocate(10);
  Result<BlockArena::Allocation> b = arena.allocate(100);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->bytes.size(), 10u);
  EXPECT_EQ(b->bytes.size(), 100u);
  EXPECT_EQ(b->bytes.data() - a->bytes.data(), 64);  // the next 64-byte boundary after 10 bytes
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->bytes.data()) % 64, 0u);
  EXPECT_EQ(a->owner, b->owner);
  EXPECT_EQ(arena.stats().blocks_allocated, 1u);
}

TEST(BlockArena, ABlockReturnsOnceTheArenaMovedOnAndItsAllocationsAreGone) {
  BlockArena arena = arena_of(256);
  ASSERT_TRUE(arena.allocate(200).is_ok());  // dropped at once: only the arena holds the block
  // Does not fit: the arena leaves its block, which nothing else holds, and gets it back at once.
  BlockArena::Allocation first = arena.allocate(200).value();
  first.bytes.back() = 7;
  EXPECT_EQ(arena.stats().blocks_allocated, 1u);
  BlockArena::Allocation second = arena.allocate(200).value();  // `first` holds the block: a new one
  EXPECT_NE(first.owner, second.owner);
  EXPECT_EQ(first.bytes.back(), 7);
  EXPECT_EQ(arena.stats().blocks_allocated, 2u);
  EXPECT_EQ(arena.stats().blocks_in_use, 2u);
  first = {};
  EXPECT_EQ(arena.stats().blocks_in_use, 1u);
}

TEST(BlockArena, RefusesWhatNoBlockHolds) {
  BlockArena arena = arena_of(256);
  for (const std::size_t size : {std::size_t{0}, std::size_t{257}}) {
    Result<BlockArena::Allocation> allocation = arena.allocate(size);
    ASSERT_FALSE(allocation.is_ok());
    EXPECT_EQ(allocation.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(allocation.status().message().find("arena blocks"), std::string::npos);
  }
  EXPECT_TRUE(arena.allocate(256).is_ok());  // exactly a block
}

}  // namespace
}  // namespace fovea
