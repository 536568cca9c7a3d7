#include "runtime/cuda/int8_conv.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/cuda_check.h"
#include "runtime/cuda/conv_epilogue.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace fovea::runtime::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kTileK = 64;  // reduction bytes a pipeline stage holds per row: two m16n8k32 steps
constexpr int kChunk = 16;  // bytes one cp.async moves: a vector of 16 channels of one pixel
constexpr int kChunksPerRow = kTileK / kChunk;
// Pipeline depth: 4 stages of a 128 x 256 or 256 x 128 tile take 96 KiB, under the 135-139 KiB its
// staged epilogue needs anyway (one block an SM); of a 256 x 64 tile 80 KiB.
constexpr int kStages = 4;

// A block computes a BM x BN tile of the product (output pixels x output channels) with WM x WN
// warps; each warp a (BM / WM) x (BN / WN) tile as m16n8 fragments.
template <int BM, int BN, int WM, int WN>
struct Tile {
  static_assert(WM * WN * 32 == kThreads);
  static constexpr int kBM = BM, kBN = BN, kWM = WM;
  static constexpr int kWarpRows = BM / WM, kWarpCols = BN / WN;
  static constexpr int kFragRows = kWarpRows / 16, kFragCols = kWarpCols / 8;
  static_assert(kFragCols % 2 == 0, "B fragments load in pairs");
  static constexpr int kRowsPerPass = kThreads / kChunksPerRow;  // rows one pass of the block loads
  static constexpr int kAPasses = BM / kRowsPerPass, kBPasses = BN / kRowsPerPass;
  static constexpr int kStageBytes = (BM + BN) * kTileK;
  // The epilogue stages the accumulators in rows padded by 8 int32 (store_tile).
  static constexpr int kStagedStride = BN + 8;
  static constexpr int kSharedBytes = std::max(kStages * kStageBytes, BM* kStagedStride * 4);
};

// Byte offset of 16-byte chunk `chunk` of tile row `row` in shared memory. Rows are 64 bytes, so
// the 8 rows one ldmatrix reads would span 4 bank cycles on the same banks; XOR-ing the chunk
// with (row / 2) % 4 spreads them over all 32 banks, for cp.async's writes as well.
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * kTileK + ((chunk ^ ((row >> 1) & 3)) << 4);
}

// 16 bytes from global to shared memory, or 16 zeros where `valid` is false (the source is then
// not read; it only has to be a valid address).
__device__ __forceinline__ void copy_chunk(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
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

// Adds the residual's `count` channels at element `at` (a whole aligned vector when `whole`).
__device__ __forceinline__ void add_residual(float (&v)[kVector], const Int8ConvOperands& o, std::int64_t at,
                                             int count, bool whole) {
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

template <typename Out>
__device__ __forceinline__ void store_vector(const Int8ConvOperands& o, std::int64_t at,
                                             const float (&v)[kVector], int count, bool whole,
                                             float inverse_y_scale) {
  if constexpr (std::is_same_v<Out, std::int8_t>) {
    std::int8_t q[kVector];
#pragma unroll
    for (int e = 0; e < kVector; ++e) q[e] = ops::requantize(v[e], inverse_y_scale);
    std::int8_t* y = static_cast<std::int8_t*>(o.y) + at;
    if (whole) {
      *reinterpret_cast<uint2*>(y) = *reinterpret_cast<const uint2*>(q);
    } else {
      for (int e = 0; e < count; ++e) y[e] = q[e];
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
        const int row = warp_row + i * 16 + (lane >> 2) + half * 8;
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

template <class T, typename Out>
__global__ void __launch_bounds__(kThreads)
    int8_conv_kernel(Int8ConvOperands o, ops::Int8ConvGeometry g, ops::Activation activation) {
  extern __shared__ __align__(128) std::int8_t shared[];
  const int first_row = static_cast<int>(blockIdx.x) * T::kBM;
  const int first_channel = static_cast<int>(blockIdx.y) * T::kBN;
  const int reduction = static_cast<int>(g.reduction());
  const int k_tiles = (reduction + kTileK - 1) / kTileK;

  PixelRow pixels[T::kAPasses];
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
    pixels[i].image = o.x + static_cast<std::int64_t>(n) * g.in_h * g.in_w * g.channels;
    pixels[i].h0 = p * g.stride_h - g.pad_top;
    pixels[i].w0 = q * g.stride_w - g.pad_left;
  }

  ReductionCursor cursor;
  cursor.start(static_cast<int>(threadIdx.x) % kChunksPerRow, g);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) {
      load_stage<T>(shared + s * T::kStageBytes, cursor, pixels, o.weights, first_channel, g, reduction);
      cursor.advance(g);
    }
    commit_copies();
  }

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_row = (warp % T::kWM) * T::kWarpRows;
  const int warp_col = (warp / T::kWM) * T::kWarpCols;
  int acc[T::kFragRows][T::kFragCols][4] = {};
  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<kStages - 2>();
    __syncthreads();  // stage kt has landed for every thread, and no warp still reads stage kt - 1
    if (kt + kStages - 1 < k_tiles) {
      load_stage<T>(shared + ((kt + kStages - 1) % kStages) * T::kStageBytes, cursor, pixels, o.weights,
                    first_channel, g, reduction);
      cursor.advance(g);
    }
    commit_copies();
    multiply_stage<T>(shared + (kt % kStages) * T::kStageBytes, acc, warp_row, warp_col);
  }
  store_tile<T, Out>(acc, reinterpret_cast<std::int32_t*>(shared), o, g, activation, first_row, first_channel,
                     warp_row, warp_col);
}

template <class T, typename Out>
Status launch_tile(const Int8ConvOperands& o, const ops::Int8ConvGeometry& g,
                   const ops::Activation& activation, cudaStream_t stream) {
  // Over 48 KiB of dynamic shared memory needs the opt-in, once per kernel.
  static const cudaError_t opted_in = cudaFuncSetAttribute(
      int8_conv_kernel<T, Out>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes);
  FOVEA_CUDA_TRY(opted_in);
  const dim3 grid(static_cast<unsigned>((g.pixels() + T::kBM - 1) / T::kBM),
                  static_cast<unsigned>((g.out_channels + T::kBN - 1) / T::kBN));
  int8_conv_kernel<T, Out><<<grid, kThreads, T::kSharedBytes, stream>>>(o, g, activation);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// Warp tiles of 64 x 64 read 128 bytes of shared memory per m16n8k32 product, what an SM's shared
// memory delivers per clock; 64 x 32 read half as much again, and bound the products below the
// tensor cores' rate (call 32: 330 int8 TOPS on every compute-bound ResNet-50 layer). Narrow
// layers take a tile of 64 channels rather than waste half of a wider one.
template <typename Out>
Status launch_for_width(const Int8ConvOperands& o, const ops::Int8ConvGeometry& g,
                        const ops::Activation& activation, cudaStream_t stream) {
  if (g.out_channels <= 64) return launch_tile<Tile<256, 64, 4, 2>, Out>(o, g, activation, stream);
  if (g.out_channels <= 128) return launch_tile<Tile<256, 128, 4, 2>, Out>(o, g, activation, stream);
  return launch_tile<Tile<128, 256, 2, 4>, Out>(o, g, activation, stream);
}

}  // namespace

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
