// fovea's own Hopper GEMM (sm_90a): Y[M, N] = epilogue(A[M, K] . B[N, K]^T) in float16, both
// operands K-major in global memory, for the products whose epilogue no library runs (an exact,
// erf-form GELU after a linear layer: hopper_gemm.h). The design of CUTLASS's "ping-pong" Hopper
// kernels:
// - one producer thread issues TMA loads of A and B k-tiles (128 bytes of K per row, the 128-byte
//   swizzle wgmma reads) into a ring of pipeline stages, each guarded by a "full" and an "empty"
//   transaction barrier;
// - two consumer warpgroups take the block's output tiles in turn (a persistent grid walks all
//   tiles): while one multiplies its tile on wgmma, the other runs its epilogue, so the epilogue's
//   time hides behind products rather than adding to them;
// - the epilogue writes its tile into shared memory (the 128-byte swizzle again, so that the
//   fragments' rows fall on distinct banks) and one TMA store moves it out whole: the fragments'
//   own layout would store 16-byte pieces of 8 rows per instruction, which took longer than the
//   products (0.133 against 0.081 ms on ViT-B's first MLP layer, H200);
// - the loader gives up registers (setmaxnreg) so that the consumers can hold their 128 x 128 or
//   64 x 256 float32 accumulator tile.
// The epilogue is a functor, kept in the kernel's parameter space (its fields cost no registers):
// `epilogue(row, col, v0, v1)` gives the outputs at (row, col) and (row, col + 1) from the sums v0
// and v1. The tiles are whole, so rows and columns past M and N reach it too: it must not read past
// its operands there (the TMA store drops those outputs).
#pragma once

#include <cuda.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "core/status.h"
#include "runtime/cuda/tensor_core.cuh"

namespace fovea::runtime::cuda {

constexpr int kHopperGemmThreads = 384;  // the loader's warpgroup and two consumer warpgroups
constexpr int kHopperRowBytes = 128;     // one k-tile row: the 128-byte swizzle's span

// A consumer's BM x BN tile of float16 products (BM 64 or 128, BN 128 or 256), Stages deep.
template <int BM, int BN, int Stages>
struct HopperGemmTile {
  static constexpr int kBM = BM, kBN = BN, kStages = Stages;
  static constexpr int kSlabs = BM / 64;                 // wgmma's m64 steps
  static constexpr int kAccumulators = kSlabs * BN / 2;  // per thread: 64 x BN over 128 threads a slab
  static constexpr int kABytes = BM * kHopperRowBytes, kBBytes = BN * kHopperRowBytes;
  static constexpr int kStageBytes = kABytes + kBBytes;
  // A consumer's output tile, as boxes of BM rows by 128 bytes (64 columns).
  static constexpr int kOutColumnsPerBox = kHopperRowBytes / 2;
  static constexpr int kOutBoxes = BN / kOutColumnsPerBox, kOutBytes = BM * BN * 2;
  static constexpr int kKPerTile = kHopperRowBytes / 2;  // float16 elements
  static constexpr int kKSteps = kKPerTile / 16;         // wgmma's k16 steps a tile
  // The stages, the consumers' output tiles, the stages' barriers and the consumers' two turn
  // barriers, and slack to align the dynamic shared memory to 1024 bytes.
  static constexpr int kSharedBytes = Stages * kStageBytes + 2 * kOutBytes + (2 * Stages + 2) * 8 + 1024;
  static_assert(BM == 64 || BM == 128, "wgmma m64 slabs");
  static_assert(BN == 128 || BN == 256, "wgmma n128 or n256 steps");
  static_assert(kAccumulators <= 128, "a consumer holds at most 128 accumulators");
};

struct HopperGemmShape {
  int m = 0, n = 0, k = 0;
};

namespace hopper_gemm_detail {

template <class T>
struct Ring {
  std::uint8_t* stages;
  std::uint8_t* out;  // the consumers' output tiles
  std::uint64_t* full;
  std::uint64_t* empty;
  // turn[c]: consumer c may multiply its next tile (the other one has issued all of its own).
  std::uint64_t* turn;

  __device__ explicit Ring(std::uint8_t* shared) {
    // The 128-byte swizzle repeats every 1024 bytes, and wgmma's descriptors assume tiles on it.
    const std::uint32_t misalignment = shared_address(shared) % 1024;
    stages = shared + (misalignment == 0 ? 0 : 1024 - misalignment);
    out = stages + T::kStages * T::kStageBytes;
    full = reinterpret_cast<std::uint64_t*>(out + 2 * T::kOutBytes);
    empty = full + T::kStages;
    turn = empty + T::kStages;
  }
  __device__ std::uint8_t* a(int stage) const { return stages + stage * T::kStageBytes; }
  __device__ std::uint8_t* b(int stage) const { return a(stage) + T::kABytes; }
};

// Output tile `tile` of the grid's walk: along N first, so the blocks running at once share A's rows
// and all read the same (L2-resident) B.
struct TileWalk {
  int n_tiles, tiles, k_tiles;

  __device__ TileWalk(const HopperGemmShape& s, int bm, int bn, int k_per_tile)
      : n_tiles((s.n + bn - 1) / bn),
        tiles(((s.m + bm - 1) / bm) * n_tiles),
        k_tiles((s.k + k_per_tile - 1) / k_per_tile) {}
  __device__ int row(int tile, int bm) const { return tile / n_tiles * bm; }
  __device__ int col(int tile, int bn) const { return tile % n_tiles * bn; }
};

template <class T>
__device__ void load_tiles(const Ring<T>& ring, const TileWalk& walk, const CUtensorMap* a_map,
                           const CUtensorMap* b_map) {
  int slot = 0;
  for (int tile = static_cast<int>(blockIdx.x); tile < walk.tiles; tile += static_cast<int>(gridDim.x)) {
    const int m0 = walk.row(tile, T::kBM), n0 = walk.col(tile, T::kBN);
    for (int kt = 0; kt < walk.k_tiles; ++kt, ++slot) {
      const int stage = slot % T::kStages;
      barrier_wait(&ring.empty[stage], ((slot / T::kStages) & 1) ^ 1);
      barrier_arrive_expecting(&ring.full[stage], T::kStageBytes);
      tma_load_2d(ring.a(stage), a_map, kt * T::kKPerTile, m0, &ring.full[stage]);
      tma_load_2d(ring.b(stage), b_map, kt * T::kKPerTile, n0, &ring.full[stage]);
    }
  }
}

// One k-tile's products for a consumer: kKSteps k16 steps over its slabs, committed as one group.
template <class T>
__device__ __forceinline__ void multiply_tile(float (&acc)[T::kAccumulators], const std::uint8_t* a,
                                              const std::uint8_t* b, bool first) {
  warpgroup_fence_accumulators<T::kAccumulators>(acc);
  warpgroup_fence();
#pragma unroll
  for (int step = 0; step < T::kKSteps; ++step) {
    const std::uint64_t b_desc = swizzled128_descriptor(b + step * 32);
#pragma unroll
    for (int slab = 0; slab < T::kSlabs; ++slab) {
      const std::uint64_t a_desc = swizzled128_descriptor(a + slab * 64 * kHopperRowBytes + step * 32);
      float* d = acc + slab * (T::kBN / 2);
      if constexpr (T::kBN == 256) {
        warpgroup_mma_f16_n256(d, a_desc, b_desc, step > 0 || !first);
      } else {
        warpgroup_mma_f16_n128(d, a_desc, b_desc, step > 0 || !first);
      }
    }
  }
  warpgroup_commit();
  warpgroup_fence_accumulators<T::kAccumulators>(acc);
}

// Byte offset of element (row, col) of an output tile in shared memory: boxes of 128 bytes of
// columns, each BM rows with the 128-byte swizzle that the TMA store undoes.
template <class T>
__device__ __forceinline__ int out_offset(int row, int col) {
  const int box = col / T::kOutColumnsPerBox, byte = col % T::kOutColumnsPerBox * 2;
  return box * T::kBM * kHopperRowBytes + row * kHopperRowBytes + (((byte >> 4) ^ (row & 7)) << 4) +
         (byte & 15);
}

// The accumulator fragment through the epilogue into the consumer's output tile, then out by TMA.
// Thread t of the warpgroup holds, per slab and 8-column group j, rows 16 (t / 32) + (t % 32) / 4 and
// 8 below, columns 8j + 2 (t % 4) and the next. The tile's shared memory is reused once the previous
// tile's store has read it.
template <class T, class Epilogue>
__device__ __forceinline__ void finish_tile(const float (&acc)[T::kAccumulators], std::uint8_t* out, int m0,
                                            int n0, int consumer, const CUtensorMap* y_map,
                                            const Epilogue& epilogue) {
  const int t = static_cast<int>(threadIdx.x) % 128;
  const bool leader = t == 0;
  const int barrier = 1 + consumer;  // 0 is __syncthreads'
  if (leader) tma_store_wait_read();
  named_barrier_sync(barrier, 128);
  const int row = t / 32 * 16 + t % 32 / 4;
  const int col = t % 4 * 2;
#pragma unroll
  for (int slab = 0; slab < T::kSlabs; ++slab) {
#pragma unroll
    for (int j = 0; j < T::kBN / 8; ++j) {
      const float* v = acc + slab * (T::kBN / 2) + j * 4;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row + slab * 64 + half * 8, c = col + j * 8;
        const __half2 y = epilogue(m0 + r, n0 + c, v[2 * half], v[2 * half + 1]);
        *reinterpret_cast<__half2*>(out + out_offset<T>(r, c)) = y;
      }
    }
  }
  fence_shared_for_async_proxy();  // the tile's writes, before the TMA store reads them
  named_barrier_sync(barrier, 128);
  if (leader) {
#pragma unroll
    for (int box = 0; box < T::kOutBoxes; ++box)
      tma_store_2d(y_map, n0 + box * T::kOutColumnsPerBox, m0, out + box * T::kBM * kHopperRowBytes);
  }
}

// The consumers multiply their tiles in the walk's order, each starting when the other has issued
// its tile's last products (then runs its epilogue meanwhile). Besides the overlap, the order keeps
// both within one phase of each stage's barriers, which their parity waits need: a consumer that ran
// two tiles ahead would take a stage's old phase for the one it waits for.
template <class T, class Epilogue>
__device__ void multiply_tiles(const Ring<T>& ring, const TileWalk& walk, int consumer,
                               const CUtensorMap* y_map, const Epilogue& epilogue) {
  const bool leader = threadIdx.x % 128 == 0;
  int ordinal = 0;  // the tile's place in this block's walk; consumers take alternate ones
  int waits = 0;    // for its turn, so far
  for (int tile = static_cast<int>(blockIdx.x); tile < walk.tiles;
       tile += static_cast<int>(gridDim.x), ++ordinal) {
    if (ordinal % 2 != consumer) continue;
    if (ordinal > 0) barrier_wait(&ring.turn[consumer], waits++ & 1);
    float acc[T::kAccumulators];  // set by the tile's first products (K is never empty)
    int slot = ordinal * walk.k_tiles;
    for (int kt = 0; kt < walk.k_tiles; ++kt, ++slot) {
      const int stage = slot % T::kStages;
      barrier_wait(&ring.full[stage], (slot / T::kStages) & 1);
      multiply_tile<T>(acc, ring.a(stage), ring.b(stage), kt == 0);
      warpgroup_wait<1>();  // the previous k-tile's products are done: its stage can be refilled
      if (kt > 0 && leader) barrier_arrive(&ring.empty[(slot - 1) % T::kStages]);
    }
    if (leader) barrier_arrive(&ring.turn[consumer ^ 1]);
    warpgroup_wait<0>();
    if (leader) barrier_arrive(&ring.empty[(slot - 1) % T::kStages]);
    finish_tile<T>(acc, ring.out + consumer * T::kOutBytes, walk.row(tile, T::kBM), walk.col(tile, T::kBN),
                   consumer, y_map, epilogue);
  }
  if (leader) tma_store_wait_read();  // the block's shared memory outlives the last store's reads
}

}  // namespace hopper_gemm_detail

template <class T, class Epilogue>
__global__ void __launch_bounds__(kHopperGemmThreads, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ CUtensorMap y_map, HopperGemmShape shape,
                       const __grid_constant__ Epilogue epilogue) {
  using namespace hopper_gemm_detail;
  extern __shared__ std::uint8_t shared[];
  const Ring<T> ring(shared);
  if (threadIdx.x == 0) {
    for (int s = 0; s < T::kStages; ++s) {
      barrier_init(&ring.full[s], 1);   // the loader's arrival, plus the stage's bytes
      barrier_init(&ring.empty[s], 1);  // the consumer that multiplied the stage
    }
    barrier_init(&ring.turn[0], 1);
    barrier_init(&ring.turn[1], 1);
    fence_barrier_init();
  }
  __syncthreads();
  const TileWalk walk(shape, T::kBM, T::kBN, T::kKPerTile);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (warpgroup == 0) {
    warpgroup_release_registers<40>();
    if (threadIdx.x == 0) load_tiles<T>(ring, walk, &a_map, &b_map);
    return;
  }
  warpgroup_take_registers<232>();
  multiply_tiles<T>(ring, walk, warpgroup - 1, &y_map, epilogue);
}

// Launches the kernel on `stream`: a block an SM (at most one a tile), each walking its tiles. The
// maps describe A, B and Y as TMA boxes of kHopperRowBytes by kBM (A, Y) or kBN (B) rows.
template <class T, class Epilogue>
Status launch_hopper_gemm(const CUtensorMap& a, const CUtensorMap& b, const CUtensorMap& y,
                          HopperGemmShape shape, const Epilogue& epilogue, cudaStream_t stream) {
  constexpr auto kernel = hopper_gemm_kernel<T, Epilogue>;
  static const cudaError_t opted_in =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes);
  FOVEA_CUDA_TRY(opted_in);
  int device = 0, sms = 0;
  FOVEA_CUDA_TRY(cudaGetDevice(&device));
  FOVEA_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t tiles =
      static_cast<std::int64_t>((shape.m + T::kBM - 1) / T::kBM) * ((shape.n + T::kBN - 1) / T::kBN);
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(tiles, sms));
  kernel<<<grid, kHopperGemmThreads, T::kSharedBytes, stream>>>(a, b, y, shape, epilogue);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
