#include "runtime/cuda/int8_conv.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>

#include "core/cuda_check.h"
#include "runtime/cuda/conv_epilogue.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace fovea::runtime::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kTileK = 64;  // reduction bytes a pipeline stage holds per row: two k32 steps
constexpr int kChunk = 16;  // bytes one cp.async moves: a vector of 16 channels of one pixel
constexpr int kChunksPerRow = kTileK / kChunk;

// What the loads and the epilogue know of a block's BM x BN tile of the product (output pixels x
// output channels), whichever instructions multiply it: Stages pipeline stages of BM A rows and BN
// B rows of kTileK bytes each, then the accumulators staged in rows padded by 8 int32 (store_tile).
template <int BM, int BN, int Stages>
struct TileLayout {
  static constexpr int kBM = BM, kBN = BN, kStages = Stages;
  static constexpr int kRowsPerPass = kThreads / kChunksPerRow;  // rows one pass of the block loads
  static constexpr int kAPasses = BM / kRowsPerPass, kBPasses = BN / kRowsPerPass;
  static constexpr int kStageBytes = (BM + BN) * kTileK;
  static constexpr int kStagedStride = BN + 8;
  static constexpr int kSharedBytes = std::max(Stages * kStageBytes, BM* kStagedStride * 4);
};

// The mma.sync kernel's tile: WM x WN warps, each a (BM / WM) x (BN / WN) tile as m16n8
// fragments. 4 stages of a 128 x 256 or 256 x 128 tile take 96 KiB, under the 135-139 KiB its
// staged epilogue needs anyway (one block an SM); of a 256 x 64 tile 80 KiB.
template <int BM, int BN, int WM, int WN>
struct WarpTile : TileLayout<BM, BN, 4> {
  static_assert(WM * WN * 32 == kThreads);
  static constexpr bool kWarpgroup = false;
  static constexpr int kWarpRows = BM / WM, kWarpCols = BN / WN;
  static constexpr int kFragRows = kWarpRows / 16, kFragCols = kWarpCols / 8;
  static constexpr int kFragRowStride = 16;  // rows between a warp's fragments
  static_assert(kFragCols % 2 == 0, "B fragments load in pairs");
  __device__ static int warp_row(int warp) { return warp % WM * kWarpRows; }
  __device__ static int warp_col(int warp) { return warp / WM * kWarpCols; }
};

// The wgmma kernel's tile: two warpgroups, each BM / 2 rows as 64-row slabs by all BN columns,
// warp w of a warpgroup holding rows 16w.. of each slab. wgmma works ahead of the loads' waits
// (multiply_stage_warpgroup), so the pipeline is deeper: 6 stages of 128 x 256 take 144 KiB, one
// block an SM. Short reductions (ResNet's 1x1 expansions: one to four k-tiles) have nothing to
// pipeline and are bound by a block's serial load, product and epilogue instead; they take
// smaller tiles of 64 accumulators a thread, two blocks an SM, so that one block's epilogue overlaps
// the other's loads.
template <int BM, int BN, int Stages = 6, int BlocksPerSM = 1>
struct WarpgroupTile : TileLayout<BM, BN, Stages> {
  static constexpr bool kWarpgroup = true;
  static constexpr int kBlocksPerSM = BlocksPerSM;
  static constexpr int kWarpgroupRows = BM / 2;
  static constexpr int kFragRows = kWarpgroupRows / 64, kFragCols = BN / 8;
  static constexpr int kFragRowStride = 64;
  static_assert(kWarpgroupRows % 64 == 0 && (BN == 64 || BN % 128 == 0), "wgmma's m64, n64 or n128 steps");
  __device__ static int warp_row(int warp) { return warp / 4 * kWarpgroupRows + warp % 4 * 16; }
  __device__ static int warp_col(int) { return 0; }
};

// Byte offset of 16-byte chunk `chunk` of tile row `row` in shared memory. Rows are 64 bytes, so
// the 8 rows one ldmatrix reads would span 4 bank cycles on the same banks; XOR-ing the chunk
// with (row / 2) % 4 spreads them over all 32 banks, for cp.async's writes as well.
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * kTileK + ((chunk ^ ((row >> 1) & 3)) << 4);
}

__device__ __forceinline__ void mma_s8(int (&c)[4], const std::uint32_t (&a)[4],
                                       const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Where one of a thread's A rows (an output pixel) reads the image from.
struct PixelRow {
  const std::int8_t* image = nullptr;  // the pixel's image in X
  int h0 = 0, w0 = 0;                  // its window's top-left corner in the image (may be outside)
  bool valid = false;                  // a pixel of the output (the last tile may run past them)
};

// Where a thread's 16-byte chunk lies in the reduction (window tap r, s; channel c) for the k-tile
// it loads next. Tiles are loaded in order, so it advances by one tile's 64 bytes at a time,
// without the divisions that would otherwise cost more than the tile's products.
struct ReductionCursor {
  int k = 0, r = 0, s = 0, c = 0;

  __device__ void start(int chunk, const ops::Int8ConvGeometry& g) {
    k = chunk * kChunk;
    const int tap = k / g.channels;
    r = tap / g.kernel_w;
    s = tap - r * g.kernel_w;
    c = k - tap * g.channels;
  }

  __device__ void advance(const ops::Int8ConvGeometry& g) {
    k += kTileK;
    c += kTileK;
    while (c >= g.channels) {  // once per tile when channels are a multiple of 64
      c -= g.channels;
      if (++s == g.kernel_w) {
        s = 0;
        ++r;
      }
    }
  }
};

template <class T>
__device__ __forceinline__ void load_stage(std::int8_t* stage, const ReductionCursor& at,
                                           const PixelRow (&pixels)[T::kAPasses], const std::int8_t* weights,
                                           int first_channel, const ops::Int8ConvGeometry& g, int reduction) {
  const int chunk = threadIdx.x % kChunksPerRow;
  const int row0 = threadIdx.x / kChunksPerRow;
  const bool in_reduction = at.k < reduction;
#pragma unroll
  for (int i = 0; i < T::kAPasses; ++i) {
    const int row = row0 + i * T::kRowsPerPass;
    const PixelRow& p = pixels[i];
    const int h = p.h0 + at.r * g.dilation_h;
    const int w = p.w0 + at.s * g.dilation_w;
    const bool valid = in_reduction && p.valid && h >= 0 && h < g.in_h && w >= 0 && w < g.in_w;
    const std::int8_t* src = valid ? p.image + (h * g.in_w + w) * g.channels + at.c : weights;
    copy_chunk(shared_address(stage + swizzled(row, chunk)), src, valid);
  }
  std::int8_t* b_stage = stage + T::kBM * kTileK;
#pragma unroll
  for (int i = 0; i < T::kBPasses; ++i) {
    const int row = row0 + i * T::kRowsPerPass;
    const int channel = first_channel + row;
    const bool valid = in_reduction && channel < g.out_channels;
    const std::int8_t* src =
        valid ? weights + static_cast<std::int64_t>(channel) * reduction + at.k : weights;
    copy_chunk(shared_address(b_stage + swizzled(row, chunk)), src, valid);
  }
}

// The warp's products for one stage: two k32 steps over its fragments.
template <class T>
__device__ __forceinline__ void multiply_stage(const std::int8_t* stage,
                                               int (&acc)[T::kFragRows][T::kFragCols][4], int warp_row,
                                               int warp_col) {
  const int lane = threadIdx.x % 32;
  const std::int8_t* b_stage = stage + T::kBM * kTileK;
#pragma unroll
  for (int step = 0; step < kTileK / 32; ++step) {
    std::uint32_t a[T::kFragRows][4];
    std::uint32_t b[T::kFragCols][2];
#pragma unroll
    for (int i = 0; i < T::kFragRows; ++i) {
      // Matrices: rows 0-7 and 8-15 of the fragment, bytes 0-15 then 16-31 of the step: a0..a3.
      const int row = warp_row + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
      load_matrices(a[i], shared_address(stage + swizzled(row, step * 2 + (lane >> 4))));
    }
#pragma unroll
    for (int j = 0; j < T::kFragCols; j += 2) {
      // Matrices: channels 0-7 bytes 0-15, 0-7 bytes 16-31, 8-15 bytes 0-15, 8-15 bytes 16-31:
      // b0, b1 of fragment j, then of fragment j + 1.
      const int row = warp_col + j * 8 + (lane & 7) + (lane >> 4) * 8;
      std::uint32_t r[4];
      load_matrices(r, shared_address(b_stage + swizzled(row, step * 2 + ((lane >> 3) & 1))));
      b[j][0] = r[0];
      b[j][1] = r[1];
      b[j + 1][0] = r[2];
      b[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < T::kFragRows; ++i) {
#pragma unroll
      for (int j = 0; j < T::kFragCols; ++j) mma_s8(acc[i][j], a[i], b[j]);
    }
  }
}

// The epilogue works on vectors of 8 channels of one output pixel: 16-byte float16 loads and
// stores, consecutive threads on consecutive vectors of a row.
constexpr int kVector = 8;

// The signed byte `index` of `word` as a float, without an integer-to-float conversion (16 a clock
// an SM, already the epilogue's bound): the byte, sign-extended, added to 1.5 * 2^23's bits is that
// float plus the integer, exactly.
__device__ __forceinline__ float signed_byte_as_float(std::uint32_t word, int index) {
  const int value = static_cast<int>(word << (24 - 8 * index)) >> 24;
  return __int_as_float(0x4B400000 + value) - 12582912.0f;
}

// Adds the residual's `count` channels at element `at` (a whole aligned vector when `whole`).
__device__ __forceinline__ void add_residual(float (&v)[kVector], const Int8ConvOperands& o, std::int64_t at,
                                             int count, bool whole) {
  if (o.residual_dtype == DataType::kInt8) {
    const std::int8_t* z = static_cast<const std::int8_t*>(o.residual) + at;
    const float z_scale = *o.residual_scale;
    if (whole) {
      const uint2 bytes = *reinterpret_cast<const uint2*>(z);
#pragma unroll
      for (int e = 0; e < kVector; ++e) {
        const float f = signed_byte_as_float(e < 4 ? bytes.x : bytes.y, e % 4);
        v[e] = add_rn(v[e], mul_rn(f, z_scale));
      }
      return;
    }
    for (int e = 0; e < count; ++e) v[e] = add_rn(v[e], ops::int8_residual(z[e], z_scale));
    return;
  }
  if (o.residual_dtype == DataType::kFloat16) {
    const __half* z = static_cast<const __half*>(o.residual) + at;
    if (whole) {
      const uint4 bits = *reinterpret_cast<const uint4*>(z);
      const __half2* pairs = reinterpret_cast<const __half2*>(&bits);
#pragma unroll
      for (int e = 0; e < kVector / 2; ++e) {
        const float2 f = __half22float2(pairs[e]);
        v[2 * e] = add_rn(v[2 * e], f.x);
        v[2 * e + 1] = add_rn(v[2 * e + 1], f.y);
      }
      return;
    }
    for (int e = 0; e < count; ++e) v[e] = add_rn(v[e], __half2float(z[e]));
    return;
  }
  const float* z = static_cast<const float*>(o.residual) + at;
#pragma unroll
  for (int e = 0; e < kVector; ++e) {
    if (e < count) v[e] = add_rn(v[e], z[e]);
  }
}

// ops::requantize(v, inverse_scale) in the low byte, without its float-to-integer conversion: the
// conversions run 16 a clock an SM and bound the epilogue of the memory-bound layers. The clamped
// product plus 1.5 * 2^23 is rounded to an integer by the addition itself, half to even as rintf
// rounds, and the float's low mantissa bits hold it (two's complement in the low byte, since the
// constant's low byte is zero). Clamping before rounding gives the same values as after.
__device__ __forceinline__ std::uint32_t requantized_bits(float v, float inverse_scale) {
  constexpr float kRoundingConstant = 12582912.0f;  // 1.5 * 2^23
  const float clamped = fminf(fmaxf(mul_rn(v, inverse_scale), -128.0f), 127.0f);
  return __float_as_uint(add_rn(clamped, kRoundingConstant));
}

// The low bytes of a, b, c, d as one word, a lowest.
__device__ __forceinline__ std::uint32_t pack_low_bytes(std::uint32_t a, std::uint32_t b, std::uint32_t c,
                                                        std::uint32_t d) {
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}

template <typename Out>
__device__ __forceinline__ void store_vector(const Int8ConvOperands& o, std::int64_t at,
                                             const float (&v)[kVector], int count, bool whole,
                                             float inverse_y_scale) {
  if constexpr (std::is_same_v<Out, std::int8_t>) {
    std::uint32_t q[kVector];
#pragma unroll
    for (int e = 0; e < kVector; ++e) q[e] = requantized_bits(v[e], inverse_y_scale);
    std::int8_t* y = static_cast<std::int8_t*>(o.y) + at;
    if (whole) {
      *reinterpret_cast<uint2*>(y) =
          make_uint2(pack_low_bytes(q[0], q[1], q[2], q[3]), pack_low_bytes(q[4], q[5], q[6], q[7]));
    } else {
      for (int e = 0; e < count; ++e) y[e] = static_cast<std::int8_t>(q[e] & 0xFF);
    }
  } else if constexpr (std::is_same_v<Out, __half>) {
    __half2 h[kVector / 2];
#pragma unroll
    for (int e = 0; e < kVector / 2; ++e) h[e] = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
    __half* y = static_cast<__half*>(o.y) + at;
    if (whole) {
      *reinterpret_cast<uint4*>(y) = *reinterpret_cast<const uint4*>(h);
    } else {
      for (int e = 0; e < count; ++e) y[e] = __float2half_rn(v[e]);
    }
  } else {
    float* y = static_cast<float*>(o.y) + at;
    if (whole) {
      reinterpret_cast<float4*>(y)[0] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(y)[1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
      for (int e = 0; e < count; ++e) y[e] = v[e];
    }
  }
}

// The float epilogue of int8_conv_util.h. The accumulators go through shared memory first (the
// pipeline's, free by then): an m16n8 fragment holds two channels of a row per thread, which would
// write 2-byte pieces of 8 rows at once, where the staged tile is read back as whole vectors of
// consecutive channels, so that loads and stores of each row are coalesced.
template <class T, typename Out>
__device__ __forceinline__ void store_tile(const int (&acc)[T::kFragRows][T::kFragCols][4],
                                           std::int32_t* staged, const Int8ConvOperands& o,
                                           const ops::Int8ConvGeometry& g, const ops::Activation& activation,
                                           int first_row, int first_channel, int warp_row, int warp_col) {
  // Rows padded by 8 int32: the 8-byte writes of 4 rows (a half-warp) fall on 32 distinct banks.
  constexpr int kStride = T::kStagedStride;
  const int lane = threadIdx.x % 32;
  wait_copies<0>();
  __syncthreads();  // every warp is done with the pipeline's shared memory
#pragma unroll
  for (int i = 0; i < T::kFragRows; ++i) {
#pragma unroll
    for (int j = 0; j < T::kFragCols; ++j) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_row + i * T::kFragRowStride + (lane >> 2) + half * 8;
        const int col = warp_col + j * 8 + (lane & 3) * 2;
        *reinterpret_cast<int2*>(staged + row * kStride + col) =
            make_int2(acc[i][j][half * 2], acc[i][j][half * 2 + 1]);
      }
    }
  }
  __syncthreads();
  // A thread keeps one vector of channels for all its rows: their scales and biases are loaded once.
  constexpr int kVectorsPerRow = T::kBN / kVector;
  static_assert(kThreads % kVectorsPerRow == 0);
  const int col = static_cast<int>(threadIdx.x) % kVectorsPerRow * kVector;
  const int channel = first_channel + col;
  if (channel >= g.out_channels) return;
  const int count = min(kVector, g.out_channels - channel);
  const bool whole_vectors = g.out_channels % kVector == 0;
  const float x_scale = *o.x_scale;
  float scale[kVector], bias[kVector];
#pragma unroll
  for (int e = 0; e < kVector; ++e) {
    const int m = min(channel + e, g.out_channels - 1);  // past `count`: computed, never stored
    scale[e] = ops::int8_conv_scale(x_scale, o.w_scale[m]);
    bias[e] = o.bias != nullptr ? o.bias[m] : 0.0f;
  }
  const float inverse_y_scale = o.y_scale != nullptr ? div_rn(1.0f, *o.y_scale) : 0.0f;
  const int pixels = static_cast<int>(g.pixels());
  for (int row = static_cast<int>(threadIdx.x) / kVectorsPerRow; row < T::kBM && first_row + row < pixels;
       row += kThreads / kVectorsPerRow) {
    const int4 low = *reinterpret_cast<const int4*>(staged + row * kStride + col);
    const int4 high = *reinterpret_cast<const int4*>(staged + row * kStride + col + 4);
    const int sums[kVector] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
    float v[kVector];
#pragma unroll
    for (int e = 0; e < kVector; ++e) v[e] = ops::int8_conv_value(sums[e], scale[e], bias[e]);
    const std::int64_t at = static_cast<std::int64_t>(first_row + row) * g.out_channels + channel;
    if (o.residual != nullptr) add_residual(v, o, at, count, whole_vectors);
#pragma unroll
    for (int e = 0; e < kVector; ++e) v[e] = activate(v[e], activation);
    store_vector<Out>(o, at, v, count, whole_vectors, inverse_y_scale);
  }
}

// Where the block's A rows read the image, for the pixels this thread loads.
template <class T>
__device__ __forceinline__ void locate_pixels(PixelRow (&pixels)[T::kAPasses], const std::int8_t* x,
                                              int first_row, const ops::Int8ConvGeometry& g) {
  const int pixel_count = static_cast<int>(g.pixels());
#pragma unroll
  for (int i = 0; i < T::kAPasses; ++i) {
    const int pixel = first_row + static_cast<int>(threadIdx.x) / kChunksPerRow + i * T::kRowsPerPass;
    pixels[i].valid = pixel < pixel_count;
    if (!pixels[i].valid) continue;
    const int q = pixel % g.out_w;
    const int np = pixel / g.out_w;
    const int p = np % g.out_h;
    const int n = np / g.out_h;
    pixels[i].image = x + static_cast<std::int64_t>(n) * g.in_h * g.in_w * g.channels;
    pixels[i].h0 = p * g.stride_h - g.pad_top;
    pixels[i].w0 = q * g.stride_w - g.pad_left;
  }
}

// The block's loads: where it reads, and the next k-tile to load into which stage.
template <class T>
struct BlockLoads {
  PixelRow pixels[T::kAPasses];
  ReductionCursor cursor;
  const std::int8_t* weights;
  int first_channel, reduction, k_tiles;

  __device__ BlockLoads(const Int8ConvOperands& o, const ops::Int8ConvGeometry& g, int first_row,
                        int first_channel_)
      : weights(o.weights), first_channel(first_channel_), reduction(static_cast<int>(g.reduction())) {
    k_tiles = (reduction + kTileK - 1) / kTileK;
    locate_pixels<T>(pixels, o.x, first_row, g);
    cursor.start(static_cast<int>(threadIdx.x) % kChunksPerRow, g);
  }

  // Starts loading k-tile `tile` (if there is one) into its stage; commits a copy group either way,
  // so that the groups' count stays the tiles' count for wait_copies.
  __device__ void load(std::int8_t* shared, int tile, const ops::Int8ConvGeometry& g) {
    if (tile < k_tiles) {
      load_stage<T>(shared + tile % T::kStages * T::kStageBytes, cursor, pixels, weights, first_channel, g,
                    reduction);
      cursor.advance(g);
    }
    commit_copies();
  }
};

// The mma.sync kernel: every warp waits for stage kt, multiplies it, and the block moves on.
template <class T, typename Out>
__global__ void __launch_bounds__(kThreads)
    int8_conv_kernel(Int8ConvOperands o, ops::Int8ConvGeometry g, ops::Activation activation) {
  extern __shared__ __align__(1024) std::int8_t shared[];
  const int first_row = static_cast<int>(blockIdx.x) * T::kBM;
  const int first_channel = static_cast<int>(blockIdx.y) * T::kBN;
  BlockLoads<T> loads(o, g, first_row, first_channel);
  constexpr int kAhead = T::kStages - 1;
#pragma unroll
  for (int s = 0; s < kAhead; ++s) loads.load(shared, s, g);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_row = T::warp_row(warp), warp_col = T::warp_col(warp);
  int acc[T::kFragRows][T::kFragCols][4] = {};
  for (int kt = 0; kt < loads.k_tiles; ++kt) {
    wait_copies<kAhead - 1>();
    __syncthreads();  // stage kt has landed for every thread, and no warp still reads stage kt - 1
    loads.load(shared, kt + kAhead, g);
    multiply_stage<T>(shared + kt % T::kStages * T::kStageBytes, acc, warp_row, warp_col);
  }
  store_tile<T, Out>(acc, reinterpret_cast<std::int32_t*>(shared), o, g, activation, first_row, first_channel,
                     warp_row, warp_col);
}

// One stage's products for a warpgroup of the wgmma kernel, issued asynchronously and committed as
// one group: two k32 steps over its slabs and the tile's columns (n128 steps, or one n64).
template <class T>
__device__ __forceinline__ void multiply_stage_warpgroup(const std::int8_t* stage,
                                                         int (&acc)[T::kFragRows][T::kFragCols][4],
                                                         int warpgroup, bool first_tile) {
  const std::int8_t* a_tile = stage + warpgroup * T::kWarpgroupRows * kTileK;
  const std::int8_t* b_tile = stage + T::kBM * kTileK;
  constexpr int kAccumulators = T::kFragRows * T::kFragCols * 4;
  warpgroup_fence_accumulators<kAccumulators>(&acc[0][0][0]);
  warpgroup_fence();
#pragma unroll
  for (int step = 0; step < kTileK / 32; ++step) {
    const bool accumulate = step > 0 || !first_tile;
#pragma unroll
    for (int i = 0; i < T::kFragRows; ++i) {
      const std::uint64_t a = swizzled64_descriptor(a_tile + i * 64 * kTileK + step * 32);
      if constexpr (T::kBN == 64) {
        warpgroup_mma_s8_n64(&acc[i][0][0], a, swizzled64_descriptor(b_tile + step * 32), accumulate);
      } else {
#pragma unroll
        for (int n = 0; n < T::kBN / 128; ++n) {
          const std::uint64_t b = swizzled64_descriptor(b_tile + n * 128 * kTileK + step * 32);
          warpgroup_mma_s8_n128(&acc[i][n * 16][0], a, b, accumulate);
        }
      }
    }
  }
  warpgroup_commit();
  warpgroup_fence_accumulators<kAccumulators>(&acc[0][0][0]);
}

// The wgmma kernel (sm_90a): the same loads and epilogue, the products on Hopper's warpgroup
// instructions, which run at twice mma.sync's int8 rate. A warpgroup's products of stage kt run
// while its threads issue the loads of a later stage; the load into a stage waits (through the
// block's barrier) until both warpgroups' products of the stage's previous tile are done, so the
// loads run kStages - 2 tiles ahead.
template <class T, typename Out>
__global__ void __launch_bounds__(kThreads, T::kBlocksPerSM)
    int8_conv_warpgroup_kernel(Int8ConvOperands o, ops::Int8ConvGeometry g, ops::Activation activation) {
  extern __shared__ __align__(1024) std::int8_t shared[];
  const int first_row = static_cast<int>(blockIdx.x) * T::kBM;
  const int first_channel = static_cast<int>(blockIdx.y) * T::kBN;
  BlockLoads<T> loads(o, g, first_row, first_channel);
  constexpr int kAhead = T::kStages - 2;
#pragma unroll
  for (int s = 0; s < kAhead; ++s) loads.load(shared, s, g);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  int acc[T::kFragRows][T::kFragCols][4];  // set by the first tile's products (the reduction is never empty)
  for (int kt = 0; kt < loads.k_tiles; ++kt) {
    wait_copies<kAhead - 1>();
    fence_shared_for_async_proxy();
    // Stage kt has landed for every thread; every warpgroup's products of tile kt - 2 are done
    // (each waited for them at the end of its tile kt - 1), so their stage takes tile kt + kAhead.
    __syncthreads();
    loads.load(shared, kt + kAhead, g);
    multiply_stage_warpgroup<T>(shared + kt % T::kStages * T::kStageBytes, acc, warp / 4, kt == 0);
    warpgroup_wait<1>();
  }
  warpgroup_wait<0>();
  store_tile<T, Out>(acc, reinterpret_cast<std::int32_t*>(shared), o, g, activation, first_row, first_channel,
                     T::warp_row(warp), T::warp_col(warp));
}

std::atomic<bool> warpgroup_allowed{true};

template <class T, typename Out>
constexpr auto kernel_of() {
  if constexpr (T::kWarpgroup) {
    return &int8_conv_warpgroup_kernel<T, Out>;
  } else {
    return &int8_conv_kernel<T, Out>;
  }
}

template <class T, typename Out>
Status launch_tile(const Int8ConvOperands& o, const ops::Int8ConvGeometry& g,
                   const ops::Activation& activation, cudaStream_t stream) {
  constexpr auto kernel = kernel_of<T, Out>();
  // Over 48 KiB of dynamic shared memory needs the opt-in, once per kernel.
  static const cudaError_t opted_in =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes);
  FOVEA_CUDA_TRY(opted_in);
  const dim3 grid(static_cast<unsigned>((g.pixels() + T::kBM - 1) / T::kBM),
                  static_cast<unsigned>((g.out_channels + T::kBN - 1) / T::kBN));
  kernel<<<grid, kThreads, T::kSharedBytes, stream>>>(o, g, activation);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// mma.sync: warp tiles of 64 x 64 read 128 bytes of shared memory per m16n8k32 product, what an
// SM's shared memory delivers per clock; 64 x 32 read half as much again, and bound the products
// below the tensor cores' rate (call 32: 330 int8 TOPS on every compute-bound ResNet-50 layer).
// wgmma: n128 steps read 6 KiB per 64 clocks of products, n64 steps 4 KiB per 32 (at the limit).
// Narrow layers take a tile of 64 channels rather than waste half of a wider one.
template <typename Out>
Status launch_for_width(const Int8ConvOperands& o, const ops::Int8ConvGeometry& g,
                        const ops::Activation& activation, cudaStream_t stream) {
  if (warpgroup_int8_conv_runs()) {
    constexpr int kShortReduction = 4 * kTileK;
    if (g.reduction() <= kShortReduction) {
      if (g.out_channels <= 64)
        return launch_tile<WarpgroupTile<256, 64, 4, 2>, Out>(o, g, activation, stream);
      return launch_tile<WarpgroupTile<128, 128, 4, 2>, Out>(o, g, activation, stream);
    }
    if (g.out_channels <= 64) return launch_tile<WarpgroupTile<256, 64>, Out>(o, g, activation, stream);
    if (g.out_channels <= 128) return launch_tile<WarpgroupTile<256, 128>, Out>(o, g, activation, stream);
    return launch_tile<WarpgroupTile<128, 256>, Out>(o, g, activation, stream);
  }
  if (g.out_channels <= 64) return launch_tile<WarpTile<256, 64, 4, 2>, Out>(o, g, activation, stream);
  if (g.out_channels <= 128) return launch_tile<WarpTile<256, 128, 4, 2>, Out>(o, g, activation, stream);
  return launch_tile<WarpTile<128, 256, 2, 4>, Out>(o, g, activation, stream);
}

}  // namespace

bool warpgroup_int8_conv_runs() {
#if defined(FOVEA_CUDA_SM90A)
  if (!warpgroup_allowed.load(std::memory_order_relaxed)) return false;
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    return false;
  }
  return major == 9 && minor == 0;
#else
  return false;
#endif
}

void allow_warpgroup_int8_conv(bool allowed) {
  warpgroup_allowed.store(allowed, std::memory_order_relaxed);
}

Status launch_int8_conv(const Int8ConvOperands& operands, const ops::Int8ConvGeometry& geometry,
                        const ops::Activation& activation, cudaStream_t stream) {
  if (geometry.pixels() == 0 || geometry.out_channels == 0) return Status::ok();
  if (const std::string why = ops::int8_conv_unsupported(geometry); !why.empty()) {
    return make_error(StatusCode::kUnsupported, "int8 convolution: ", why);
  }
  switch (operands.y_dtype) {
    case DataType::kInt8: return launch_for_width<std::int8_t>(operands, geometry, activation, stream);
    case DataType::kFloat16: return launch_for_width<__half>(operands, geometry, activation, stream);
    case DataType::kFloat32: return launch_for_width<float>(operands, geometry, activation, stream);
    default: break;
  }
  return make_error(StatusCode::kUnsupported, "int8 convolution: output type ",
                    std::string(data_type_name(operands.y_dtype)));
}

}  // namespace fovea::runtime::cuda
