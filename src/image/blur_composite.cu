// Background blur in one kernel, the blur on the tensor cores. A separable blur is two banded matrix
// products. Each warp multiplies, for its strip of a tile of the frame brought into shared memory:
//   vertical:   V = Wv · X    Wv the 16 x K band of the vertical taps (registers), X the frame's
//                             bytes, which ldmatrix.trans reads as they arrived and one byte permute
//                             turns into halves: 16 output rows of a 16-byte column chunk;
//   horizontal: Y = V · Wh    V's accumulators become the A operand directly (no trip through
//                             shared memory), Wh the band of the horizontal taps, which treats an
//                             interleaved row (RGB, RGBA) as one signal whose taps are C bytes apart.
// The epilogue blends the sharp byte with the blurred one by the mask into the warp's strip of a
// shared output tile, which it writes out in 16-byte stores. The blurred frame never reaches global
// memory: the frame and the mask are read once (halos are L2 hits), the output written once.
//
// Blocks are persistent (two per SM) and pipelined on mbarriers: while the warps blur one tile,
// cp.async brings the next into another stage, and no barrier holds the whole block, so the warps'
// different loads even out (blur_composite_kernel). Strips whose mask is all 255 show only the
// sharp frame and are copied without blurring; strips whose mask is all 0 skip the blend.
//
// Precision: bytes are exact in half; the weights (11 significant bits) and V (rounded to half for
// the second product) move a result by at most 255 * 2^-11 per pass plus 1/16, ~0.3 in all, with
// float accumulation, so it rounds to the float reference's byte or its neighbour (the tests'
// kU8HalfPrecisionTolerance); the blend, in half too, keeps that (blend4). In float the two passes
// cost ~30 multiply-adds per output byte, the whole time budget of a bandwidth-bound kernel on this
// GPU; on the tensor cores they are cheap.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/blur_composite.h"

namespace fovea::image {

namespace {

// 16 images per launch keep the launch parameters (jobs, tile numbers, weights: ~1.4 KiB) under
// the 4 KiB that kernel arguments may take; larger batches take several launches.
constexpr int kJobsPerLaunch = 16;
// An output tile of 64 rows x 192 bytes (64 RGB or 48 RGBA pixels: 192 is a multiple of 3, 4 and
// 16). Its 8 warps each own 16 rows (an MMA's M) x 96 bytes.
constexpr int kTileRows = 64;
constexpr int kTileBytes = 192;
constexpr int kWarpRows = 16;
constexpr int kWarpBytes = 96;
constexpr int kWarpsAcross = kTileBytes / kWarpBytes;
constexpr int kThreads = 32 * (kTileRows / kWarpRows) * kWarpsAcross;
// The tiles of a block's walk wait in a ring of shared slots (blur_composite_kernel).
constexpr int kRingSlots = 8;

// Two blocks per SM: 228 KiB of shared memory per SM, of which each block reserves 1 KiB.
constexpr int kSharedPerBlock = 228 * 1024 / 2 - 1024;
// Blocks above the 48 KiB default shared memory must opt in.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;

struct FusedJob {
  const std::uint8_t* frame = nullptr;
  std::size_t frame_pitch = 0;
  const std::uint8_t* mask = nullptr;
  std::size_t mask_pitch = 0;
  std::uint8_t* out = nullptr;
  std::size_t out_pitch = 0;
  int width = 0;
  int height = 0;
  int tiles_across = 0;
  // Base and pitch multiples of 16: rows move as 16-byte vectors.
  bool frame_aligned = false;
  bool mask_aligned = false;
  bool out_aligned = false;
};

// The band matrices' weights by the distance between an input and an output, as the pairs of halves
// their fragments hold (fill_band_pairs): first the vertical taps for the row distance j in
// -15 .. 16 kChunksV - 1, then the horizontal ones for the byte distance d in -kPadStaged - 15 ..
// 16 kChunksH - kPadStaged - 1; distance 0 at the zero offsets (static_asserts in Geometry).
constexpr int kVerticalPairs = 64;
constexpr int kVerticalZero = 15;
constexpr int kHorizontalPairs = 160;
constexpr int kHorizontalZero = kVerticalPairs + 79;
constexpr int kBandPairs = kVerticalPairs + kHorizontalPairs;

struct FusedLaunch {
  FusedJob jobs[kJobsPerLaunch];
  int first_tile[kJobsPerLaunch + 1];  // job j owns tiles first_tile[j] .. first_tile[j + 1] - 1
  // (wy[j], wy[j + 1]) at kVerticalZero + j; (w(d), w(d + 2)) at kHorizontalZero + d, as a
  // horizontal fragment pairs bytes two apart (vertical_chunk).
  std::uint32_t band_pairs[kBandPairs];
  // -1024 times the sum of wy rounded to halves: the vertical product's start (see the bias, above).
  float vertical_start;
  BorderMode border;
  std::uint8_t border_value;
};

constexpr int round_up(int v, int m) {
  return (v + m - 1) / m * m;
}

// The shapes for C bytes per pixel and radius R (taps 2R + 1 on both axes).
template <int C, int R>
struct Geometry {
  // Staged bytes each side of the tile: the horizontal taps reach C * R bytes. A block of 16
  // outputs reads the 16-byte column chunks its taps reach (ldmatrix reads whole aligned chunks),
  // kChunksH of them from the one kPadStaged bytes before the block. A multiple of 8 rather than 16
  // puts the blocks between chunk edges where that saves a chunk: 3 bytes a pixel and radius 7
  // reach 21 bytes, which a block at a chunk's edge meets in 5 chunks and one 8 bytes into a chunk
  // in 4. The rows then arrive in 8-byte copies (kCopyBytes).
  static constexpr int kPadStaged = round_up(C * R, 8);
  static constexpr int kCopyBytes = kPadStaged % 16 == 0 ? 16 : 8;
  static constexpr int kChunksH = (kPadStaged + 15 + C * R) / 16 + 1;
  static_assert(kPadStaged - C * R < 16, "the first chunk a block reads is the one kPadStaged before it");
  // A vertical product makes 16 rows from the 16 + 2R its taps reach, kChunksV k-steps of 16.
  static constexpr int kChunksV = round_up(kWarpRows + 2 * R, 16) / 16;
  static constexpr int kBlocks = kWarpBytes / 16;              // horizontal products per warp
  static constexpr int kStripChunks = kBlocks + kChunksH - 1;  // column chunks of a warp's V
  static constexpr int kStagedRows = kTileRows - kWarpRows + 16 * kChunksV;
  static constexpr int kStagedBytes = kTileBytes + 2 * kPadStaged;
  static_assert(kWarpsAcross * kWarpBytes - kWarpBytes + 16 * kStripChunks <= kStagedBytes);
  // An odd multiple of 16 bytes: ldmatrix's 8 rows fall into disjoint banks.
  static constexpr int kRawPitch = kStagedBytes / 16 % 2 == 1 ? kStagedBytes : kStagedBytes + 16;
  static constexpr int kMaskPixels = kTileBytes / C;  // pixels across a tile
  // The output tile, which holds the mask spread to one byte per frame byte until the epilogue
  // overwrites it. Rows g and g + 2 of a fragment fall into other banks.
  static constexpr int kOutPitch = kTileBytes + 16;
  // Shared memory: kStages stages, so that tiles arrive while the ones before them are blurred; a
  // stage is a tile's frame rows and mask as cp.async brings them. Then the output tile (each warp
  // composes its strip there before writing it out), the ring of tiles and the stages' barriers.
  // Three stages where two blocks of them fit on an SM, else two.
  static constexpr int kMaskOffset = kStagedRows * kRawPitch;
  static constexpr int kStageBytes = round_up(kMaskOffset + kTileRows * kMaskPixels, 16);
  static constexpr int kOutTileBytes = kTileRows * kOutPitch;
  static constexpr int kRingBytes = kRingSlots * 16;
  static constexpr int shared_bytes(int stages) {
    return stages * kStageBytes + kOutTileBytes + kRingBytes +
           2 * stages * static_cast<int>(sizeof(std::uint64_t));
  }
  static constexpr int kStages = shared_bytes(3) <= kSharedPerBlock ? 3 : 2;
  static constexpr int kOutOffset = kStages * kStageBytes;
  static constexpr int kRingOffset = kOutOffset + kOutTileBytes;
  static constexpr int kBarrierOffset = kRingOffset + kRingBytes;
  static constexpr std::size_t kSharedBytes = shared_bytes(kStages);
  static_assert(kVerticalZero >= kWarpRows - 1 && kVerticalZero + 16 * kChunksV <= kVerticalPairs);
  static_assert(kHorizontalZero - kVerticalPairs >= kPadStaged + 15 &&
                kHorizontalZero + 16 * kChunksH - kPadStaged <= kBandPairs);
};

// The 32-bit shared-memory address of a generic pointer into shared memory, as PTX takes it.
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- tensor-core primitives (mma.sync m16n8k16, half inputs, float accumulators) ----

__device__ __forceinline__ __half2 as_half2(std::uint32_t bits) {
  return *reinterpret_cast<const __half2*>(&bits);
}

__device__ __forceinline__ std::uint32_t as_bits(__half2 h) {
  return *reinterpret_cast<const std::uint32_t*>(&h);
}

__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  return as_bits(__floats2half2_rn(lo, hi));
}

// D += A (16x16, row-major fragments a[4]) * B (16x8, b0 b1).
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                            std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D = A * B + C: a chain's first product, whose start C stays in registers of its own for the next
// chain (with D += the compiler would copy C into every chain's accumulators first).
__device__ __forceinline__ void mma_16x8x16_from(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                 std::uint32_t b1, const float (&c)[4]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}

// Four 8x8 matrices of 16-bit elements, transposed: lane l names row l (matrix l / 8), 16 bytes of a
// row-major source in shared memory; lane (g, t) receives element g of rows 2t and 2t + 1 of each.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&r)[2], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
}

// ---- bytes and halves ----
//
// The products take bytes as halves biased by 1024: the half 0x64XX is 1024 + XX exactly, so a byte
// becomes a half with one byte permute, and a half in 1024..2047 rounds to an integer whose low
// bits are the byte. The vertical product starts from -1024 * (sum of its weights), which takes the
// bias out again; the horizontal one starts from +1024, so its rounding to half is the rounding to
// an integer.

// Bytes 2i and 2i + 1 of `word` as biased halves: each takes 0x64, the high byte of 1024.0, above it.
__device__ __forceinline__ std::uint32_t biased_half2(std::uint32_t word, int i) {
  return __byte_perm(word, 0x64646464u, i == 0 ? 0x4140 : 0x4342);
}

// Two bytes of one column from the rows of an ldmatrix.trans fragment as biased halves: `word` holds
// bytes 2g and 2g + 1 of row 2t, then of row 2t + 1; `odd` picks byte 2g + 1 of each.
__device__ __forceinline__ std::uint32_t column_half2(std::uint32_t word, int odd) {
  return __byte_perm(word, 0x64646464u, odd == 0 ? 0x4240 : 0x4341);
}

// The low bytes of four biased halves (two half2 words): four bytes.
__device__ __forceinline__ std::uint32_t low_bytes(std::uint32_t lo, std::uint32_t hi) {
  return __byte_perm(lo, hi, 0x6420);
}

// blend_u8 (composite.h) of four neighbouring bytes in half precision: out = b + (m / 255) (s - b).
// With the bytes as biased halves (1024..1279, where a half is an integer) one fma rounds it to the
// nearest integer, which blend_u8 also gives (no ties: 255 is odd). m / 255 with 11 significant
// bits moves it by at most 255 * 2^-11, which with the blurred byte's step stays under one step of
// the float reference (kU8HalfPrecisionTolerance). `sharp` holds the sharp bytes as biased halves,
// `blurred01` and `blurred23` the blurred ones, `mask` the four mask bytes.
__device__ __forceinline__ std::uint32_t blend4(uint2 sharp, std::uint32_t blurred01, std::uint32_t blurred23,
                                                std::uint32_t mask) {
  // c is the half nearest 1 / 255 (0x1C04) and k = 1024 c exactly (0x4404): (1024 + m) c - k is
  // m c before the fma rounds it once, 0 for m = 0 and exactly 1 for m = 255.
  const __half2 c = as_half2(0x1C041C04u);
  const __half2 minus_k = as_half2(0xC404C404u);
  const __half2 a01 = __hfma2(as_half2(biased_half2(mask, 0)), c, minus_k);
  const __half2 a23 = __hfma2(as_half2(biased_half2(mask, 1)), c, minus_k);
  const __half2 b01 = as_half2(blurred01);
  const __half2 b23 = as_half2(blurred23);
  const __half2 out01 = __hfma2(a01, __hsub2(as_half2(sharp.x), b01), b01);
  const __half2 out23 = __hfma2(a23, __hsub2(as_half2(sharp.y), b23), b23);
  return low_bytes(as_bits(out01), as_bits(out23));
}

// Where staged byte e (a byte offset in the image row, may lie outside it) comes from: -1 for the
// constant border.
__device__ int source_byte(int e, int width, int channels, BorderMode border) {
  const int pixel = e >= 0 ? e / channels : -((-e + channels - 1) / channels);
  const int x = border_index(pixel, width, border);
  return x < 0 ? -1 : x * channels + (e - pixel * channels);
}

// ---- the block's stages ----

// Starts copying kBytes (8 or 16, both addresses aligned to it) from global to shared memory.
template <int kBytes>
__device__ __forceinline__ void copy_async(void* shared, const void* global) {
  const std::uint32_t address = shared_address(shared);
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global));
  } else {
    static_assert(kBytes == 8);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(address), "l"(global));
  }
}

// 16 bytes of shared memory aligned to kAlign (8 or 16).
template <int kAlign>
__device__ __forceinline__ uint4 load16_shared(const std::uint8_t* p) {
  if constexpr (kAlign == 16) {
    return *reinterpret_cast<const uint4*>(p);
  } else {
    static_assert(kAlign == 8);
    const uint2 lo = *reinterpret_cast<const uint2*>(p);
    const uint2 hi = *reinterpret_cast<const uint2*>(p + 8);
    return make_uint4(lo.x, lo.y, hi.x, hi.y);
  }
}

// ---- mbarriers: the handoffs of a stage between the warps ----

__device__ __forceinline__ void barrier_init(std::uint64_t* barrier, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(count)
               : "memory");
}

// Arrives, releasing this thread's writes so far to the threads that wait for the barrier.
__device__ __forceinline__ void barrier_arrive(std::uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

// Arrives once this thread's cp.async copies so far have landed.
__device__ __forceinline__ void barrier_arrive_on_copies(std::uint64_t* barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(shared_address(barrier))
               : "memory");
}

// Waits until the barrier's phase of this parity has completed: try_wait, which lets the warp sleep
// in hardware, from Hopper on; a polling test_wait before (Ampere, Ada).
#if __CUDA_ARCH__ >= 900
#define FOVEA_MBARRIER_WAIT "mbarrier.try_wait.parity.shared::cta.b64"
#else
#define FOVEA_MBARRIER_WAIT "mbarrier.test_wait.parity.shared::cta.b64"
#endif
__device__ __forceinline__ void barrier_wait(std::uint64_t* barrier, int parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n" FOVEA_MBARRIER_WAIT
        " complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(shared_address(barrier)), "r"(parity)
        : "memory");
  } while (done == 0);
}
#undef FOVEA_MBARRIER_WAIT

// Calls f(i) for i = threadIdx.x, threadIdx.x + kThreads, ... below N. The trip count is known at
// compile time: a loop bounded by a variable recomputes its trip count at every entry, per tile.
template <int N, typename F>
__device__ __forceinline__ void for_block_strided(F&& f) {
#pragma unroll
  for (int k = 0; k < (N + kThreads - 1) / kThreads; ++k) {
    const int i = static_cast<int>(threadIdx.x) + k * kThreads;
    if (N % kThreads == 0 || i < N) f(i);
  }
}

struct alignas(16) TileAt {
  int job = -1;  // -1: no tile
  int x0 = 0;    // first pixel
  int y0 = 0;
  bool inside = false;  // the staged rows and bytes lie inside an aligned frame: no border mapping
};

// Tile numbers grow along a block's walk, so the search for the job starts at the last tile's.
template <int C, int R>
__device__ TileAt tile_at(const FusedLaunch& launch, int tile, int num_jobs, int from_job) {
  using G = Geometry<C, R>;
  TileAt at;
  if (tile >= launch.first_tile[num_jobs]) return at;
  at.job = from_job;
  while (tile >= launch.first_tile[at.job + 1]) ++at.job;
  const FusedJob& job = launch.jobs[at.job];
  const int local = tile - launch.first_tile[at.job];
  at.x0 = local % job.tiles_across * G::kMaskPixels;
  at.y0 = local / job.tiles_across * kTileRows;
  const int top = at.y0 - R;
  const int first = at.x0 * C - G::kPadStaged;
  at.inside = job.frame_aligned && top >= 0 && top + G::kStagedRows <= job.height && first >= 0 &&
              first + G::kStagedBytes <= job.width * C;
  return at;
}

// The frame rows of a tile at the image's edge. Vectors inside an aligned row arrive by cp.async;
// the bytes of the others, beyond the row's ends (or all of them in an unaligned frame), are mapped
// a byte per lane, so that the lanes share them instead of a few lanes taking 16 bytes each while
// the rest of the warp waits, and so that a lane maps its byte column once for all rows. This runs
// before the warp blurs the current tile, so its loads' latency is that blur's delay.
template <int C, int R>
__device__ void fetch_edge_rows(const FusedLaunch& launch, const TileAt& at, std::uint8_t* raw) {
  using G = Geometry<C, R>;
  constexpr int kBytes = G::kCopyBytes;
  constexpr int kVectors = G::kStagedBytes / kBytes;
  const FusedJob& job = launch.jobs[at.job];
  const int first = at.x0 * C - G::kPadStaged;
  // The image row of staged row r, -1 for the constant border.
  const auto source_row = [&](int r) { return border_index(at.y0 - R + r, job.height, launch.border); };
  // Vectors inner_begin .. inner_end - 1 lie inside the row.
  int inner_begin = kVectors;
  int inner_end = kVectors;
  if (job.frame_aligned) {
    inner_begin = first >= 0 ? 0 : min(kVectors, (-first + kBytes - 1) / kBytes);
    inner_end = max(inner_begin, min(kVectors, (job.width * C - first) / kBytes));
  }
  const std::uint32_t fill = launch.border_value * 0x01010101u;
  for_block_strided<G::kStagedRows * kVectors>([&](int i) {
    const int r = i / kVectors;
    const int v = i % kVectors;
    if (v < inner_begin || v >= inner_end) return;
    std::uint8_t* dst = raw + r * G::kRawPitch + kBytes * v;
    const int sy = source_row(r);
    if (sy < 0) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(fill, fill);
      if constexpr (kBytes == 16) *reinterpret_cast<uint2*>(dst + 8) = make_uint2(fill, fill);
    } else {
      copy_async<kBytes>(dst, job.frame + sy * job.frame_pitch + first + kBytes * v);
    }
  });
  const int left = kBytes * inner_begin;
  const int gap = kBytes * (inner_end - inner_begin);
  const int outer = G::kStagedBytes - gap;
  // Each warp takes every kWarps-th row, and issues all its rows' loads of a byte column before
  // storing any: a load-store loop would wait for each load in turn.
  constexpr int kWarps = kThreads / 32;
  constexpr int kRowsPerWarp = (G::kStagedRows + kWarps - 1) / kWarps;
  const int warp = threadIdx.x / 32;
  for (int k = threadIdx.x % 32; k < outer; k += 32) {
    const int e = k < left ? k : k + gap;
    const int sx = source_byte(first + e, job.width, C, launch.border);
    std::uint8_t value[kRowsPerWarp];
#pragma unroll
    for (int u = 0; u < kRowsPerWarp; ++u) {
      const int r = warp + u * kWarps;
      const int sy = r < G::kStagedRows ? source_row(r) : -1;
      value[u] = sy < 0 || sx < 0 ? launch.border_value : job.frame[sy * job.frame_pitch + sx];
    }
#pragma unroll
    for (int u = 0; u < kRowsPerWarp; ++u) {
      const int r = warp + u * kWarps;
      if (r < G::kStagedRows) raw[r * G::kRawPitch + e] = value[u];
    }
  }
}

// Starts bringing a tile into a stage (`raw`, `mask`): the frame rows its blur reads (whole vectors
// by cp.async for a tile inside the image, fetch_edge_rows at the edges) and its mask. Beyond the
// image, where nothing is written, the mask repeats its last row and column, so that a tile at the
// edge is opaque or clear as its pixels in the image are.
template <int C, int R>
__device__ void fetch_tile(const FusedLaunch& launch, const TileAt& at, std::uint8_t* raw,
                           std::uint8_t* mask) {
  using G = Geometry<C, R>;
  const FusedJob& job = launch.jobs[at.job];
  const int first = at.x0 * C - G::kPadStaged;
  constexpr int kVectors = G::kStagedBytes / G::kCopyBytes;
  if (at.inside) {
    // Each thread takes one vector column (byte e) of every kRowsPerPass-th row: its addresses
    // step by a row stride, where a flat vector index would cost a division and a 64-bit multiply
    // per vector.
    constexpr int kRowsPerPass = kThreads / kVectors;
    const int row = threadIdx.x / kVectors;
    const int e = threadIdx.x % kVectors * G::kCopyBytes;
    if (row < kRowsPerPass) {
      const std::uint8_t* source = job.frame + (at.y0 - R + row) * job.frame_pitch + first + e;
      const std::size_t source_step = kRowsPerPass * job.frame_pitch;
      std::uint8_t* destination = raw + row * G::kRawPitch + e;
#pragma unroll
      for (int k = 0; k < (G::kStagedRows + kRowsPerPass - 1) / kRowsPerPass; ++k) {
        if (G::kStagedRows % kRowsPerPass == 0 || row + k * kRowsPerPass < G::kStagedRows)
          copy_async<G::kCopyBytes>(destination + k * kRowsPerPass * G::kRawPitch, source + k * source_step);
      }
    }
  } else {
    fetch_edge_rows<C, R>(launch, at, raw);
  }
  constexpr int kVectorsAcross = G::kMaskPixels / 16;
  for_block_strided<kTileRows * kVectorsAcross>([&](int i) {
    const int y = min(at.y0 + i / kVectorsAcross, job.height - 1);
    const int x = at.x0 + i % kVectorsAcross * 16;
    std::uint8_t* dst = mask + i * 16;
    const std::uint8_t* row = job.mask + y * job.mask_pitch;
    if (job.mask_aligned && x + 16 <= job.width) {
      copy_async<16>(dst, row + x);
    } else {
      for (int k = 0; k < 16; ++k) dst[k] = row[min(x + k, job.width - 1)];
    }
  });
}

enum class MaskCover { kMixed, kOpaque, kClear };

// A warp's strip of the tile: 16 rows from r0, 96 bytes from e0.
struct Strip {
  int r0;
  int e0;
};

__device__ Strip warp_strip() {
  const int warp = threadIdx.x / 32;
  return {warp / kWarpsAcross * kWarpRows, warp % kWarpsAcross * kWarpBytes};
}

// Calls f(r, w, m) for the mask words m (4 pixels each) of a warp's strip, row r of the strip,
// word w of the row, spread over the lanes.
template <int C, int R, typename F>
__device__ __forceinline__ void for_strip_mask_words(const std::uint8_t* mask, Strip strip, F&& f) {
  constexpr int kWordsAcross = kWarpBytes / C / 4;
  constexpr int kWords = kWarpRows * kWordsAcross;
  static_assert(kWords % 32 == 0, "every lane takes as many words");
#pragma unroll
  for (int k = 0; k < kWords / 32; ++k) {
    const int i = static_cast<int>(threadIdx.x % 32) + 32 * k;
    const int r = i / kWordsAcross;
    const int w = i % kWordsAcross;
    f(r, w,
      *reinterpret_cast<const std::uint32_t*>(mask + (strip.r0 + r) * Geometry<C, R>::kMaskPixels +
                                              strip.e0 / C + 4 * w));
  }
}

// Whether the mask of the warp's strip is all 255 (only the sharp frame shows: the strip is copied),
// all 0 (only the blurred one: no blend) or mixed. A vote of the warp: no block barrier.
template <int C, int R>
__device__ MaskCover strip_cover(const std::uint8_t* mask, Strip strip) {
  std::uint32_t all = ~0u;
  std::uint32_t any = 0;
  for_strip_mask_words<C, R>(mask, strip, [&](int, int, std::uint32_t m) {
    all &= m;
    any |= m;
  });
  if (__all_sync(~0u, all == ~0u)) return MaskCover::kOpaque;
  return __any_sync(~0u, any != 0) ? MaskCover::kMixed : MaskCover::kClear;
}

// Spreads the strip's mask to one byte per frame byte in the output tile (4 pixels at a time: C
// words), for the epilogue's lanes to read after the warp's next __syncwarp.
template <int C, int R>
__device__ void spread_strip_mask(const std::uint8_t* mask, Strip strip, std::uint8_t* s_out) {
  using G = Geometry<C, R>;
  for_strip_mask_words<C, R>(mask, strip, [&](int r, int w, std::uint32_t m) {
    auto* dst =
        reinterpret_cast<std::uint32_t*>(s_out + (strip.r0 + r) * G::kOutPitch + strip.e0 + w * 4 * C);
    if constexpr (C == 3) {
      dst[0] = __byte_perm(m, 0, 0x1000);
      dst[1] = __byte_perm(m, 0, 0x2211);
      dst[2] = __byte_perm(m, 0, 0x3332);
    } else {
      *reinterpret_cast<uint4*>(dst) = make_uint4(__byte_perm(m, 0, 0x0000), __byte_perm(m, 0, 0x1111),
                                                  __byte_perm(m, 0, 0x2222), __byte_perm(m, 0, 0x3333));
    }
  });
}

// The band fragments, built once per thread. Vertical (the A operand, 16 output rows x K staged
// rows from the strip's first): A[m][k] = wy[k - m]. Horizontal (the B operand for 8 of the 16
// outputs of a 16-byte block, from the column chunks kPadStaged bytes before it on): k-step c
// takes chunk c, whose bytes 0, 2, .., 14 are its k 0 .. 7 and bytes 1, 3, .., 15 its k 8 .. 15
// (the even and odd V tiles, vertical_chunk), and B[k][n] = wx[j] where the byte of k is tap j's
// input for output byte o: 16c + byte - kPadStaged - o = C (j - R). Product h makes the bytes
// o = 4 (n / 2) + 2h + n % 2, so that a thread's accumulators (n = 2t, 2t + 1 of both products) are
// the four neighbouring bytes 4t .. 4t + 3, which the epilogue moves as one word.
template <int C, int R>
struct Bands {
  float vertical_start[4];  // the C operand of each vertical chain's first product
  std::uint32_t vertical[Geometry<C, R>::kChunksV][4];
  std::uint32_t horizontal[2][Geometry<C, R>::kChunksH][2];
};

// A shared word read by a volatile load, which the compiler does not merge with another read of
// an equal word. An MMA takes its A operand and its C operand as runs of four registers; where two
// of the four hold equal values (the vertical band's fragments repeat weights, the start is one
// value four times), the compiler would keep one copy and rebuild the run with moves before every
// MMA. Read as distinct values, each run stays in place for the kernel's life.
__device__ __forceinline__ std::uint32_t load_distinct(const std::uint32_t* word) {
  std::uint32_t value;
  asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(value) : "r"(shared_address(word)));
  return value;
}

// The band weights come through shared memory: read from the kernel's parameters, which cannot
// change, the compiler would read them again inside the tile loop rather than keep them in
// registers, and the lanes' different addresses serialize in the constant cache.
template <int C, int R>
__device__ void make_bands(const FusedLaunch& launch, std::uint32_t* s_pairs, Bands<C, R>& bands) {
  using G = Geometry<C, R>;
  for_block_strided<kBandPairs>([&](int i) { s_pairs[i] = launch.band_pairs[i]; });
  if (threadIdx.x == 0) s_pairs[kBandPairs] = __float_as_uint(launch.vertical_start);
  __syncthreads();
  const int g = (threadIdx.x & 31) / 4;  // the fragment layouts' groupID and threadID_in_group
  const int t = threadIdx.x & 3;
#pragma unroll
  for (float& start : bands.vertical_start) start = __uint_as_float(load_distinct(s_pairs + kBandPairs));
#pragma unroll
  for (int c = 0; c < G::kChunksV; ++c) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {  // rows g, g + 8 at k 2t, then at k 2t + 8
      const int m = g + 8 * (q & 1);
      const int k = 16 * c + 2 * t + 8 * (q >> 1);
      bands.vertical[c][q] = load_distinct(s_pairs + kVerticalZero + k - m);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int o = 4 * (g / 2) + 2 * h + g % 2;  // column g's output byte
#pragma unroll
    for (int c = 0; c < G::kChunksH; ++c) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {  // k 2t and 2t + 1 (bytes 4t, 4t + 2), then 2t + 8 and 2t + 9
        const int byte = 16 * c + 4 * t + q;
        bands.horizontal[h][c][q] = s_pairs[kHorizontalZero + byte - G::kPadStaged - o];
      }
    }
  }
}

// The vertical blur of 16 rows (from staged row `row`) of one 16-byte column chunk (from byte
// `column`), straight from the raw bytes: ldmatrix.trans, reading the bytes as 16-bit elements,
// hands lane (g, t) bytes 2g and 2g + 1 of rows 2t and 2t + 1, which one byte permute each turns
// into the B fragments of two products, one for the chunk's even bytes and one for its odd bytes.
// Their accumulators become the V tiles of the chunk's even and odd bytes, in `v` as the A fragment
// of one horizontal k-step (even: k 0 .. 7, odd: k 8 .. 15).
template <int C, int R>
__device__ void vertical_chunk(const Bands<C, R>& bands, const std::uint8_t* raw, int row, int column,
                               std::uint32_t (&v)[4]) {
  using G = Geometry<C, R>;
  static_assert(G::kChunksV >= 2, "the first k-steps start the chains");
  const int lane = threadIdx.x & 31;
  float acc[2][4];  // even, odd bytes
  const auto step = [&](int k, std::uint32_t rows_lo, std::uint32_t rows_hi) {
#pragma unroll
    for (int odd = 0; odd < 2; ++odd) {
      const std::uint32_t b0 = column_half2(rows_lo, odd);
      const std::uint32_t b1 = column_half2(rows_hi, odd);
      if (k == 0) {
        mma_16x8x16_from(acc[odd], bands.vertical[0], b0, b1, bands.vertical_start);
      } else {
        mma_16x8x16(acc[odd], bands.vertical[k], b0, b1);
      }
    }
  };
#pragma unroll
  for (int c = 0; c < G::kChunksV; c += 2) {
    if (c + 1 < G::kChunksV) {  // 32 rows: two k-steps
      std::uint32_t m[4];
      ldmatrix_x4_trans(m, raw + (row + 16 * c + lane) * G::kRawPitch + column);
      step(c, m[0], m[1]);
      step(c + 1, m[2], m[3]);
    } else {
      std::uint32_t m[2];
      ldmatrix_x2_trans(m, raw + (row + 16 * c + (lane & 15)) * G::kRawPitch + column);
      step(c, m[0], m[1]);
    }
  }
#pragma unroll
  for (int odd = 0; odd < 2; ++odd) {
    v[2 * odd] = pack_half2(acc[odd][0], acc[odd][1]);
    v[2 * odd + 1] = pack_half2(acc[odd][2], acc[odd][3]);
  }
}

// One warp's strip, 16 rows x 96 bytes: V chunks left to right, each block of 16 outputs (two
// horizontal products, interleaved) as soon as its window's chunks exist, so only a window's worth
// stays live. The epilogue blends with the sharp bytes by the spread mask, whose bytes in s_out the
// output replaces (each thread reads and writes its own word), all reads before the writes so that
// they overlap. A clear strip (mask all 0) takes the blurred bytes as they are.
template <int C, int R>
__device__ void blur_blend_strip(const Bands<C, R>& bands, const std::uint8_t* raw, Strip strip,
                                 std::uint8_t* s_out, bool clear) {
  using G = Geometry<C, R>;
  const int g = (threadIdx.x & 31) / 4;
  const int t = threadIdx.x & 3;
  std::uint32_t v[G::kStripChunks][4];
#pragma unroll
  for (int i = 0; i < G::kChunksH - 1; ++i) vertical_chunk(bands, raw, strip.r0, strip.e0 + 16 * i, v[i]);
#pragma unroll
  for (int b = 0; b < G::kBlocks; ++b) {
    const int next = b + G::kChunksH - 1;
    vertical_chunk(bands, raw, strip.r0, strip.e0 + 16 * next, v[next]);
    float acc[2][4];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[h][q] = 1024.0f;
    }
#pragma unroll
    for (int c = 0; c < G::kChunksH; ++c) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        mma_16x8x16(acc[h], v[b + c], bands.horizontal[h][c][0], bands.horizontal[h][c][1]);
    }
    // Rows g and g + 8, bytes 4t .. 4t + 3 of the block: products 0 and 1 hold two bytes each, as
    // biased halves rounded to integers. They need no clamp at 1024 + 255: the taps rounded to
    // halves sum to at most 1 + 2^-11 per pass, so V is at most 255.125 after its rounding and a
    // blurred byte at most 255.25 plus the float accumulation's ~0.01, which rounds to 255
    // (FlatFramesBlurToThemselves).
    const int e = strip.e0 + 16 * b + 4 * t;
    std::uint32_t blurred[2][2];
    std::uint32_t* out[2];
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      out[half_row] =
          reinterpret_cast<std::uint32_t*>(s_out + (strip.r0 + g + 8 * half_row) * G::kOutPitch + e);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        blurred[half_row][h] = pack_half2(acc[h][2 * half_row], acc[h][2 * half_row + 1]);
    }
    if (clear) {
#pragma unroll
      for (int half_row = 0; half_row < 2; ++half_row)
        *out[half_row] = low_bytes(blurred[half_row][0], blurred[half_row][1]);
      continue;
    }
    std::uint32_t sharp[2];
    std::uint32_t mask[2];
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      const int r = strip.r0 + g + 8 * half_row;
      sharp[half_row] =
          *reinterpret_cast<const std::uint32_t*>(raw + (r + R) * G::kRawPitch + G::kPadStaged + e);
      mask[half_row] = *out[half_row];
    }
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      const uint2 sharp_halves =
          make_uint2(biased_half2(sharp[half_row], 0), biased_half2(sharp[half_row], 1));
      *out[half_row] = blend4(sharp_halves, blurred[half_row][0], blurred[half_row][1], mask[half_row]);
    }
  }
}

// Writes a warp's strip of a tile from shared memory (`tile`: the tile's first byte, rows
// `tile_pitch` apart, aligned to kSourceAlign bytes) to the output, clipped to the image; 16-byte
// stores where the output row is aligned, marked streaming (evict first) so that the output does
// not push the frame rows that neighbouring tiles still read out of L2.
template <int kSourceAlign>
__device__ void write_strip(const FusedJob& job, const TileAt& at, int channels, Strip strip,
                            const std::uint8_t* tile, int tile_pitch) {
  const int lane = threadIdx.x % 32;
  const int y = at.y0 + strip.r0;
  const int x = at.x0 * channels + strip.e0;  // byte in the row
  const int rows = min(kWarpRows, job.height - y);
  const int bytes = min(kWarpBytes, job.width * channels - x);
  if (rows <= 0 || bytes <= 0) return;
  std::uint8_t* out = job.out + y * job.out_pitch + x;
  const std::uint8_t* src = tile + strip.r0 * tile_pitch + strip.e0;
  constexpr int kVectors = kWarpBytes / 16;
  if (job.out_aligned && rows == kWarpRows && bytes == kWarpBytes) {  // most strips: whole vectors
#pragma unroll
    for (int k = 0; k < kWarpRows * kVectors / 32; ++k) {
      const int i = lane + 32 * k;
      const int r = i / kVectors;
      const int e = i % kVectors * 16;
      __stcs(reinterpret_cast<uint4*>(out + r * job.out_pitch + e),
             load16_shared<kSourceAlign>(src + r * tile_pitch + e));
    }
    return;
  }
  for (int i = lane; i < rows * kVectors; i += 32) {
    const int r = i / kVectors;
    const int e = i % kVectors * 16;
    if (e >= bytes) continue;
    const std::uint8_t* from = src + r * tile_pitch + e;
    std::uint8_t* to = out + r * job.out_pitch + e;
    if (job.out_aligned && e + 16 <= bytes) {
      __stcs(reinterpret_cast<uint4*>(to), load16_shared<kSourceAlign>(from));
    } else {
      for (int k = 0; k < 16 && e + k < bytes; ++k) to[k] = from[k];
    }
  }
}

// The warp's strip of a tile (frame rows `raw` and `mask` in a stage) to the output, by its mask:
// copied from the stage where it is opaque; blurred where it is clear, blurred and blended where it
// is mixed, in the warp's strip of the output tile, and written from there.
template <int C, int R>
__device__ void compose_strip(const Bands<C, R>& bands, const FusedJob& job, const TileAt& at,
                              const std::uint8_t* raw, const std::uint8_t* mask, std::uint8_t* out_tile) {
  using G = Geometry<C, R>;
  const Strip strip = warp_strip();
  const MaskCover cover = strip_cover<C, R>(mask, strip);
  if (cover == MaskCover::kOpaque) {
    write_strip<G::kCopyBytes>(job, at, C, strip, raw + R * G::kRawPitch + G::kPadStaged, G::kRawPitch);
    return;
  }
  if (cover == MaskCover::kMixed) {
    spread_strip_mask<C, R>(mask, strip, out_tile);
    __syncwarp();
  }
  blur_blend_strip(bands, raw, strip, out_tile, cover == MaskCover::kClear);
  __syncwarp();
  write_strip<16>(job, at, C, strip, out_tile, G::kOutPitch);
}

// A persistent block: tiles blockIdx.x, + gridDim.x, ... Each warp blurs its strip of every tile and
// writes it out, and starts fetching the next tile before it blurs this one; no barrier holds the
// whole block. A stage's `full` barrier completes when its tile has arrived (every thread's copies
// have landed), its `empty` barrier when every warp is done with the tile, after which the stage
// takes a later one. With kStages stages the warps can drift apart by up to kStages - 2 tiles,
// which evens out the strips' different costs.
template <int C, int R>
__global__ void __launch_bounds__(kThreads, 2)
    blur_composite_kernel(const __grid_constant__ FusedLaunch launch, int num_jobs) {
  using G = Geometry<C, R>;
  constexpr int kWarps = kThreads / 32;
  extern __shared__ __align__(16) std::uint8_t shared[];
  const auto raw = [&](int stage) { return shared + stage * G::kStageBytes; };
  const auto mask = [&](int stage) { return shared + stage * G::kStageBytes + G::kMaskOffset; };
  std::uint8_t* out_tile = shared + G::kOutOffset;
  auto* full = reinterpret_cast<std::uint64_t*>(shared + G::kBarrierOffset);
  std::uint64_t* empty = full + G::kStages;
  // Tile n of the walk waits in slot n % kRingSlots from three steps before it is blurred: one thread
  // finds it (a search over the jobs and a division) once for all, before its arrival on the stage
  // barrier that the others wait for before they read it; no thread keeps tiles in registers
  // through the blur.
  auto* ring = reinterpret_cast<TileAt*>(shared + G::kRingOffset);
  const auto slot = [&](int n) -> TileAt& { return ring[n % kRingSlots]; };
  const auto find = [&](int n, int from_job) {
    return tile_at<C, R>(launch, static_cast<int>(blockIdx.x + n * gridDim.x), num_jobs, from_job);
  };
  Bands<C, R> bands;
  // The output tile is free until the first tile's blur, after the barrier below.
  make_bands(launch, reinterpret_cast<std::uint32_t*>(out_tile), bands);
  const TileAt first = find(0, 0);
  if (first.job < 0) return;
  if (threadIdx.x == 0) {
    slot(0) = first;
    slot(1) = find(1, first.job);
    slot(2) = find(2, max(first.job, slot(1).job));
    for (int stage = 0; stage < G::kStages; ++stage) {
      barrier_init(full + stage, 2 * kThreads);  // every thread: its copies, its stores
      barrier_init(empty + stage, kWarps);
    }
  }
  __syncthreads();
  fetch_tile<C, R>(launch, first, raw(0), mask(0));
  barrier_arrive_on_copies(full);
  barrier_arrive(full);
  for (int n = 0; slot(n).job >= 0; ++n) {
    if (const TileAt next = slot(n + 1); next.job >= 0) {
      const int stage = (n + 1) % G::kStages;
      // The stage's last tile, n + 1 - kStages, is done.
      if (n + 1 >= G::kStages) barrier_wait(empty + stage, ((n + 1) / G::kStages - 1) & 1);
      fetch_tile<C, R>(launch, next, raw(stage), mask(stage));
      // The warps take turns to find the tiles, so that none is the slowest every time.
      if (threadIdx.x == n % kWarps * 32) slot(n + 3) = find(n + 3, next.job);
      barrier_arrive_on_copies(full + stage);
      barrier_arrive(full + stage);
    }
    const int stage = n % G::kStages;
    barrier_wait(full + stage, (n / G::kStages) & 1);
    const TileAt at = slot(n);
    compose_strip(bands, launch.jobs[at.job], at, raw(stage), mask(stage), out_tile);
    __syncwarp();
    if (threadIdx.x % 32 == 0) barrier_arrive(empty + stage);
  }
}

// Blocks per SM the kernel's registers and shared memory allow, times the SMs.
template <int C, int R>
Result<int> resident_blocks() {
  int device = 0;
  int sms = 0;
  int per_sm = 0;
  FOVEA_CUDA_TRY(cudaGetDevice(&device));
  FOVEA_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FOVEA_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, blur_composite_kernel<C, R>, kThreads,
                                                               Geometry<C, R>::kSharedBytes));
  return std::max(1, per_sm) * sms;
}

// The blur's taps, zero-padded to the kernel's radius and centered: padding taps add exact zeros.
struct Taps {
  float wx[kMaxBlurCompositeKernelSize];
  float wy[kMaxBlurCompositeKernelSize];
};

std::uint32_t half_pair(float lo, float hi) {
  const __half_raw l = __float2half_rn(lo);
  const __half_raw h = __float2half_rn(hi);
  return l.x | static_cast<std::uint32_t>(h.x) << 16;
}

// The band weights by distance (FusedLaunch) for C bytes per pixel and radius R: an output's
// horizontal taps are C bytes apart.
template <int C, int R>
void fill_band_pairs(const Taps& taps, FusedLaunch& launch) {
  const auto vertical = [&](int j) { return j >= 0 && j <= 2 * R ? taps.wy[j] : 0.0f; };
  const auto horizontal = [&](int d) {
    return d % C == 0 && std::abs(d / C) <= R ? taps.wx[d / C + R] : 0.0f;
  };
  for (int i = 0; i < kVerticalPairs; ++i) {
    const int j = i - kVerticalZero;
    launch.band_pairs[i] = half_pair(vertical(j), vertical(j + 1));
  }
  for (int i = kVerticalPairs; i < kBandPairs; ++i) {
    const int d = i - kHorizontalZero;
    launch.band_pairs[i] = half_pair(horizontal(d), horizontal(d + 2));
  }
}

template <int C, int R>
Status launch_tiles(cudaStream_t stream, const Taps& taps, FusedLaunch& launch, int num_jobs) {
  using G = Geometry<C, R>;
  fill_band_pairs<C, R>(taps, launch);
  static_assert(G::kSharedBytes > kDefaultSharedLimit);
  FOVEA_CUDA_TRY(cudaFuncSetAttribute(blur_composite_kernel<C, R>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(G::kSharedBytes)));
  FOVEA_ASSIGN_OR_RETURN(const int resident, (resident_blocks<C, R>()));
  const int blocks = std::min(resident, launch.first_tile[num_jobs]);
  blur_composite_kernel<C, R><<<blocks, kThreads, G::kSharedBytes, stream>>>(launch, num_jobs);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// The unrolled radii: 3, 7 and 15 (kernels up to 7, 15 and 31 taps).
int padded_radius(const BlurParams& params) {
  const int radius = std::max(params.kernel_width, params.kernel_height) / 2;
  return radius <= 3 ? 3 : (radius <= 7 ? 7 : 15);
}

// Numbers the launch's tiles (C bytes per pixel) and launches its radius's kernel.
template <int C>
Status launch_for_radius(cudaStream_t stream, const Taps& taps, int radius, FusedLaunch& launch,
                         int num_jobs) {
  constexpr int kPixelsAcross = kTileBytes / C;
  launch.first_tile[0] = 0;
  for (int j = 0; j < num_jobs; ++j) {
    FusedJob& job = launch.jobs[j];
    job.tiles_across = (job.width + kPixelsAcross - 1) / kPixelsAcross;
    launch.first_tile[j + 1] =
        launch.first_tile[j] + job.tiles_across * ((job.height + kTileRows - 1) / kTileRows);
  }
  switch (radius) {
    case 3: return launch_tiles<C, 3>(stream, taps, launch, num_jobs);
    case 7: return launch_tiles<C, 7>(stream, taps, launch, num_jobs);
    default: return launch_tiles<C, 15>(stream, taps, launch, num_jobs);
  }
}

// `weights` centered in 2 * radius + 1 taps, zeros around.
void pad_weights(const std::vector<float>& weights, int radius, float* out) {
  std::fill(out, out + 2 * radius + 1, 0.0f);
  std::copy(weights.begin(), weights.end(), out + radius - static_cast<int>(weights.size()) / 2);
}

bool aligned16(const void* p, std::size_t pitch) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && pitch % 16 == 0;
}

FusedJob fused_job(const ImageBatch& frame, const ImageBatch& mask, const ImageBatch& output, int i) {
  const ImageView f = roi_subview(frame.images[i], frame.roi(i));
  const ImageView m = roi_subview(mask.images[i], mask.roi(i));
  const ImageView o = roi_subview(output.images[i], output.roi(i));
  FusedJob job;
  job.frame = static_cast<const std::uint8_t*>(f.planes[0].data);
  job.frame_pitch = f.planes[0].pitch;
  job.mask = static_cast<const std::uint8_t*>(m.planes[0].data);
  job.mask_pitch = m.planes[0].pitch;
  job.out = static_cast<std::uint8_t*>(o.planes[0].data);
  job.out_pitch = o.planes[0].pitch;
  job.width = f.width;
  job.height = f.height;
  job.frame_aligned = aligned16(job.frame, job.frame_pitch);
  job.mask_aligned = aligned16(job.mask, job.mask_pitch);
  job.out_aligned = aligned16(job.out, job.out_pitch);
  return job;
}

}  // namespace

Status run_blur_composite_cuda(cudaStream_t stream, const ImageBatch& frame, const ImageBatch& mask,
                               const ImageBatch& output, const BlurParams& params) {
  FOVEA_NVTX_RANGE("blur_composite");
  FOVEA_TRY(detail::check_blur_composite(frame, mask, &output, params));
  FusedLaunch launch{};
  const int radius = padded_radius(params);
  const double sigma_y = params.sigma_y > 0.0 ? params.sigma_y : params.sigma_x;
  Taps taps{};
  pad_weights(blur_weights(params.kind, params.kernel_width, params.sigma_x), radius, taps.wx);
  pad_weights(blur_weights(params.kind, params.kernel_height, sigma_y), radius, taps.wy);
  double half_sum = 0.0;
  for (float w : taps.wy) half_sum += __half2float(__float2half_rn(w));
  launch.vertical_start = static_cast<float>(-1024.0 * half_sum);
  launch.border = params.border;
  launch.border_value = static_cast<std::uint8_t>(params.border_value);
  // One launch covers up to kJobsPerLaunch images of one channel count; a change starts a new one.
  const auto channels = [&](int i) { return pixel_bytes(frame.images[i].format); };
  const auto flush = [&](int c, int num_jobs) {
    return c == 4 ? launch_for_radius<4>(stream, taps, radius, launch, num_jobs)
                  : launch_for_radius<3>(stream, taps, radius, launch, num_jobs);
  };
  int num_jobs = 0;
  for (int i = 0; i < frame.size(); ++i) {
    if (num_jobs == kJobsPerLaunch || (num_jobs > 0 && channels(i) != channels(i - 1))) {
      FOVEA_TRY(flush(channels(i - 1), num_jobs));
      num_jobs = 0;
    }
    launch.jobs[num_jobs++] = fused_job(frame, mask, output, i);
  }
  return flush(channels(frame.size() - 1), num_jobs);
}

}  // namespace fovea::image
