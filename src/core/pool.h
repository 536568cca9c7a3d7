// Fixed-size buffer pools for device, pinned-host and plain host memory. A pool hands out
// PooledBuffer handles; a handle returns its block to the free list when it is destroyed, so
// steady-state work allocates nothing. Thread-safe. A pool may be given a capacity, which bounds
// memory: acquire() then fails with kResourceExhausted instead of allocating more.
//
// GPU hazard: a device block released while a stream still reads it can be reused by the next
// acquirer. Release a block only after the work using it has completed or is ordered before the
// next user's work (the same stream, or an event the next user waits on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/image.h"
#include "core/status.h"

namespace fovea {

struct PoolStats {
  std::uint64_t hits = 0;    // acquires served from the free list
  std::uint64_t misses = 0;  // acquires that had to allocate
  std::size_t blocks_allocated = 0;
  std::size_t blocks_in_use = 0;
};

class BufferPool;

class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer();

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  MemoryKind memory() const { return memory_; }
  explicit operator bool() const { return data_ != nullptr; }
  // Returns the block to its pool now (the destructor does the same).
  void release();

 private:
  friend class BufferPool;
  struct Shared;
  PooledBuffer(std::shared_ptr<Shared> pool, void* data, std::size_t size, MemoryKind memory)
      : pool_(std::move(pool)), data_(data), size_(size), memory_(memory) {}

  std::shared_ptr<Shared> pool_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  MemoryKind memory_ = MemoryKind::kHost;
};

class BufferPool {
 public:
  // `capacity_blocks` == 0 means unbounded. Device and pinned pools need CUDA; without it they
  // fail with kUnsupported.
  static Result<BufferPool> create(std::string name, MemoryKind memory, std::size_t block_bytes,
                                   std::size_t capacity_blocks = 0);
  BufferPool(BufferPool&&) noexcept = default;
  BufferPool& operator=(BufferPool&&) noexcept = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool() = default;

  Result<PooledBuffer> acquire();
  // Allocates `count` blocks up front so the first frames do not pay for allocation.
  Status reserve(std::size_t count);
  PoolStats stats() const;
  std::size_t block_bytes() const;
  MemoryKind memory() const;
  const std::string& name() const;

 private:
  explicit BufferPool(std::shared_ptr<PooledBuffer::Shared> shared) : shared_(std::move(shared)) {}
  // Blocks outlive the BufferPool object while handles remain: the state is shared.
  std::shared_ptr<PooledBuffer::Shared> shared_;
};

// Many small buffers of overlapping lifetimes, bump-allocated from a pool's fixed-size blocks: each
// allocation keeps its block, which goes back to the pool once the arena has moved on to another
// block and the last allocation from it is dropped. So steady-state work allocates nothing, and the
// memory held is what the live allocations span. (The image source reads the files nvJPEG decodes
// into pinned blocks: a GPU copies from pinned memory without staging it.) One thread at a time; the
// pool may be shared.
class BlockArena {
 public:
  struct Allocation {
    std::span<std::uint8_t> bytes;
    std::shared_ptr<void> owner;  // the block, kept while any allocation from it is
  };

  explicit BlockArena(BufferPool pool) : pool_(std::move(pool)) {}

  // `size` bytes, 64-byte aligned: kInvalidArgument beyond block_bytes() (the caller's own memory
  // serves those), or the pool's error.
  Result<Allocation> allocate(std::size_t size);
  std::size_t block_bytes() const { return pool_.block_bytes(); }
  PoolStats stats() const { return pool_.stats(); }

 private:
  BufferPool pool_;
  std::shared_ptr<PooledBuffer> block_;  // the block being filled
  std::size_t used_ = 0;
};

}  // namespace fovea
