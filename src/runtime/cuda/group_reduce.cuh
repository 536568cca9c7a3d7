// Row reductions by groups of threads: a block of kBlock threads splits into groups of kGroup
// consecutive threads (one warp, or the whole block), and each group reduces one row with CUB. Row
// kernels (reductions, softmax, normalization) pick a warp per row for short rows, so that one
// block serves several, and the whole block for long ones.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include <cstdint>

namespace fovea::runtime::cuda {

inline constexpr int kWarpSize = 32;

// A warp's sum and maximum of one value per lane, in every lane (a butterfly of shuffles: the row
// kernels that keep a row in registers need the result in each lane, where CUB's WarpReduce gives it
// to lane 0 only). warp_sum<16> sums each half of the warp on its own; every lane of the warp calls it.
template <int kLanes = kWarpSize>
__device__ __forceinline__ float warp_sum(float v) {
  static_assert(kLanes > 0 && kLanes <= kWarpSize && (kLanes & (kLanes - 1)) == 0,
                "a power of two within a warp");
  for (int offset = kLanes / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Whether rows of `length` get a block each rather than a warp: from 1024 elements a warp's lanes
// would each loop 32+ times while a block spreads them 4 per thread; from 256 also when there are
// too few rows for warps to fill the GPU (132 SMs x 16 warps, a quarter of an H100/H200's resident
// warps), e.g. 1000-class softmax at batch 256.
inline bool block_per_row(std::int64_t rows, std::int64_t length) {
  constexpr std::int64_t kBusyWarps = 132 * 16;
  return length >= 1024 || (length >= 256 && rows < kBusyWarps);
}

template <typename Acc, int kGroup, int kBlock>
class GroupReducer {
  static_assert(kGroup == kWarpSize || kGroup == kBlock, "a group is a warp or the whole block");
  using Warp = cub::WarpReduce<Acc>;
  using Block = cub::BlockReduce<Acc, kBlock>;

 public:
  static constexpr int kGroups = kBlock / kGroup;

  struct TempStorage {
    union {
      typename Warp::TempStorage warp[kGroups];
      typename Block::TempStorage block;
    } reduce;
    Acc result[kGroups];
  };

  // This thread's group within the block, and its rank within the group.
  __device__ static int group() { return static_cast<int>(threadIdx.x) / kGroup; }
  __device__ static int lane() { return static_cast<int>(threadIdx.x) % kGroup; }

  // The group's reduction, valid in its lane 0. Every thread of the group calls it (for a block
  // group, every thread of the block), also in a loop over rows.
  template <typename Op>
  __device__ static Acc reduce(TempStorage& storage, Acc value, Op op) {
    if constexpr (kGroup == kBlock) {
      __syncthreads();  // the previous row's reduction may still read the storage
      return Block(storage.reduce.block).Reduce(value, op);
    } else {
      return Warp(storage.reduce.warp[group()]).Reduce(value, op);
    }
  }

  // The group's reduction, in every thread of the group.
  template <typename Op>
  __device__ static Acc all_reduce(TempStorage& storage, Acc value, Op op) {
    const Acc total = reduce(storage, value, op);
    sync();  // every thread has read the previous row's result
    if (lane() == 0) storage.result[group()] = total;
    sync();
    return storage.result[group()];
  }

 private:
  __device__ static void sync() {
    if constexpr (kGroup == kBlock) {
      __syncthreads();
    } else {
      __syncwarp();
    }
  }
};

}  // namespace fovea::runtime::cuda
