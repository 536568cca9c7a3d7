#include "core/pool.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#endif

namespace fovea {
namespace {

// Host blocks are aligned like device ones so that SIMD and DMA see the same layout.
constexpr std::size_t kHostAlignment = 256;

Result<void*> allocate_block(MemoryKind memory, std::size_t bytes) {
  void* data = nullptr;
  switch (memory) {
    case MemoryKind::kHost:
      data =
          std::aligned_alloc(kHostAlignment, (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment);
      if (!data) {
        return make_error(StatusCode::kResourceExhausted, "host allocation of ", std::to_string(bytes),
                          " bytes failed");
      }
      return data;
#if defined(FOVEA_HAVE_CUDA)
    case MemoryKind::kPinnedHost: FOVEA_CUDA_TRY(cudaMallocHost(&data, bytes)); return data;
    case MemoryKind::kDevice: FOVEA_CUDA_TRY(cudaMalloc(&data, bytes)); return data;
#else
    case MemoryKind::kPinnedHost:
    case MemoryKind::kDevice: break;
#endif
  }
  return make_error(StatusCode::kUnsupported, memory_kind_name(memory),
                    " memory needs CUDA, and this build of fovea has none");
}

void free_block(MemoryKind memory, void* data) {
  switch (memory) {
    case MemoryKind::kHost: std::free(data); return;
#if defined(FOVEA_HAVE_CUDA)
    case MemoryKind::kPinnedHost: cudaFreeHost(data); return;
    case MemoryKind::kDevice: cudaFree(data); return;
#else
    default: return;
#endif
  }
}

}  // namespace

struct PooledBuffer::Shared {
  std::string name;
  MemoryKind memory = MemoryKind::kHost;
  std::size_t block_bytes = 0;
  std::size_t capacity = 0;
  mutable std::mutex mutex;
  std::vector<void*> free_blocks;
  std::vector<void*> all_blocks;
  std::size_t allocations_in_flight = 0;  // counted against capacity while the lock is dropped
  PoolStats stats;

  ~Shared() {
    for (void* block : all_blocks) {
      free_block(memory, block);
    }
  }
};

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : pool_(std::move(other.pool_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      memory_(other.memory_) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::move(other.pool_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    memory_ = other.memory_;
  }
  return *this;
}

PooledBuffer::~PooledBuffer() {
  release();
}

void PooledBuffer::release() {
  if (!data_) {
    return;
  }
  {
    std::lock_guard lock(pool_->mutex);
    pool_->free_blocks.push_back(data_);
    --pool_->stats.blocks_in_use;
  }
  data_ = nullptr;
  size_ = 0;
  pool_.reset();
}

Result<BufferPool> BufferPool::create(std::string name, MemoryKind memory, std::size_t block_bytes,
                                      std::size_t capacity_blocks) {
  if (block_bytes == 0) {
    return make_error(StatusCode::kInvalidArgument, "pool '", name, "': block size is zero");
  }
  auto shared = std::make_shared<PooledBuffer::Shared>();
  shared->name = std::move(name);
  shared->memory = memory;
  shared->block_bytes = block_bytes;
  shared->capacity = capacity_blocks;
  return BufferPool(std::move(shared));
}

Result<PooledBuffer> BufferPool::acquire() {
  std::unique_lock lock(shared_->mutex);
  if (!shared_->free_blocks.empty()) {
    void* block = shared_->free_blocks.back();
    shared_->free_blocks.pop_back();
    ++shared_->stats.hits;
    ++shared_->stats.blocks_in_use;
    return PooledBuffer(shared_, block, shared_->block_bytes, shared_->memory);
  }
  if (shared_->capacity != 0 &&
      shared_->all_blocks.size() + shared_->allocations_in_flight >= shared_->capacity) {
    return make_error(StatusCode::kResourceExhausted, "pool '", shared_->name, "' is at its capacity of ",
                      std::to_string(shared_->capacity), " blocks, all in use");
  }
  // Allocation can be slow (cudaMalloc synchronizes); other threads may release meanwhile.
  ++shared_->allocations_in_flight;
  lock.unlock();
  Result<void*> allocated = allocate_block(shared_->memory, shared_->block_bytes);
  lock.lock();
  --shared_->allocations_in_flight;
  if (!allocated.is_ok()) {
    return allocated.status().with_context("pool '" + shared_->name + "'");
  }
  void* block = allocated.value();
  shared_->all_blocks.push_back(block);
  ++shared_->stats.misses;
  ++shared_->stats.blocks_in_use;
  shared_->stats.blocks_allocated = shared_->all_blocks.size();
  return PooledBuffer(shared_, block, shared_->block_bytes, shared_->memory);
}

Status BufferPool::reserve(std::size_t count) {
  std::vector<PooledBuffer> held;
  held.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    FOVEA_ASSIGN_OR_RETURN(PooledBuffer buffer, acquire());
    held.push_back(std::move(buffer));
  }
  return Status::ok();
}

PoolStats BufferPool::stats() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->stats;
}

std::size_t BufferPool::block_bytes() const {
  return shared_->block_bytes;
}
MemoryKind BufferPool::memory() const {
  return shared_->memory;
}
const std::string& BufferPool::name() const {
  return shared_->name;
}

Result<BlockArena::Allocation> BlockArena::allocate(std::size_t size) {
  constexpr std::size_t kAlignment = 64;
  if (size == 0 || size > pool_.block_bytes()) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("{}: {} bytes do not fit its blocks of {}",
                                                                pool_.name(), size, pool_.block_bytes()));
  }
  const std::size_t start = (used_ + kAlignment - 1) / kAlignment * kAlignment;
  if (!block_ || start + size > block_->size()) {
    block_.reset();  // back to the pool once its allocations are gone, maybe the next block itself
    FOVEA_ASSIGN_OR_RETURN(PooledBuffer block, pool_.acquire());
    block_ = std::make_shared<PooledBuffer>(std::move(block));
    used_ = 0;
  } else {
    used_ = start;
  }
  Allocation allocation{{static_cast<std::uint8_t*>(block_->data()) + used_, size}, block_};
  used_ += size;
  return allocation;
}

}  // namespace fovea
