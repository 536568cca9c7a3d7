// fovea.Attention on CUDA (ops/attention.cpp defines it): Y = Softmax(scale * Q KT + B) V in one
// kernel, the scores never written to memory. Each row keeps a running maximum and sum (the online
// softmax), so any number of keys fits. Two kernels:
// - float16 with head dims up to 128 (ViT's 64, Swin's and DETR's 32): FlashAttention-2's layout on
//   tensor cores (mma.sync m16n8k16, float accumulation; namespace tensor_core below). The WMMA
//   kernel before it passed each warp's scores, probabilities and output rows through shared memory
//   (ViT-B's attention 319 us a layer, a third of the model's time: docs/perf.md, "Transformers").
// - the rest (float32, and float16 head dims up to 256): on the CUDA cores in float, 32 query rows per
//   block (four per warp, computed together so that every key and value read from shared memory
//   serves four rows), keys 32 at a time, one per lane.
//
// Q, K (or KT), V and Y may be strided views of larger tensors (fold_attention_views, ops/attention_util.h):
// ViT's heads are read where the packed QKV projection wrote them and written merged back. Each row
// must be contiguous; the tensor-core kernel reads K as rows where they are (ldmatrix untransposed)
// and copies the next chunk of keys and values with cp.async while it computes the current one.
//
// The unfused chain ran two batched GEMMs with the scores between them written and read back, and
// for ViT's 197 tokens cuBLAS took its align-1 kernels (rows not 16-byte aligned): 17% of ViT-B's
// time, and the softmax another 12% (docs/perf.md, "After SiLU and GELU fusion"). The CUDA-core
// kernel alone made ViT-B slower (3,179 against 4,900 images/s, call 22): its 92 GFLOP per batch of
// 64 are tensor cores' work.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/cudnn_attention.h"
#include "runtime/cuda/group_reduce.cuh"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/tensor_core.cuh"
#include "runtime/ops/attention_util.h"

namespace fovea::runtime::cuda {

namespace {

constexpr int kKeysPerChunk = 32;  // one per lane
constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
constexpr int kMaxLeading = 6;
constexpr int kMaxHeadDim = 256;

// Where an operand's elements lie in its input (a strided view: ops/attention_util.h): element
// (leading..., r, c) at offset + the leading coordinates on `leading` + r * row + c * col. Q, V and
// Y have col 1; KT's rows are its D rows and its columns the keys, one of the two strides 1.
struct OperandStrides {
  std::int64_t offset = 0;
  std::int64_t leading[kMaxLeading] = {};
  std::int64_t row = 0, col = 1;
};

struct AttentionGeometry {
  int matrices = 0;  // the product of the leading dims
  int tq = 0, tk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  int leading = 0;
  std::int64_t leading_size[kMaxLeading] = {};
  OperandStrides q, kt, v, y;
  // The keys as rows of K (KT's D stride 1: a view of the keys where the projection wrote them)
  // rather than rows of KT.
  bool key_rows = false;
  bool y_pairs = false;  // Dv and every Y stride even: two columns are one 4-byte store
  // The bias's element strides, 0 where it broadcasts: per leading dim, per query row and per key.
  std::int64_t bias_leading_stride[kMaxLeading] = {};
  std::int64_t bias_row_stride = 0, bias_key_stride = 0;
};

// Matrix `matrix`'s leading-dim coordinates on `strides`.
__device__ __forceinline__ std::int64_t leading_offset(const AttentionGeometry& g,
                                                       const std::int64_t* strides, int matrix) {
  std::int64_t offset = 0;
  int rest = matrix;
  for (int i = g.leading - 1; i >= 0; --i) {
    offset += (rest % g.leading_size[i]) * strides[i];
    rest /= static_cast<int>(g.leading_size[i]);
  }
  return offset;
}

std::size_t shared_bytes(int d, int dv) {
  return sizeof(float) *
         (static_cast<std::size_t>(kRowsPerBlock) * d + static_cast<std::size_t>(d) * kKeysPerChunk +
          static_cast<std::size_t>(kKeysPerChunk) * dv);
}

// kSlots: output elements per lane and row (Dv / 32, rounded up).
template <typename T, int kSlots>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const T* __restrict__ q, const T* __restrict__ kt, const T* __restrict__ v,
                     const T* __restrict__ bias, T* __restrict__ y, AttentionGeometry g) {
  extern __shared__ float shared[];
  float* q_s = shared;                              // [kRowsPerBlock][d]
  float* kt_s = q_s + kRowsPerBlock * g.d;          // [d][kKeysPerChunk]
  float* v_s = kt_s + g.d * kKeysPerChunk;          // [kKeysPerChunk][dv]
  const int matrix = static_cast<int>(blockIdx.x);  // x: gridDim.y stops at 65535 matrices
  const int first_row = static_cast<int>(blockIdx.y) * kRowsPerBlock;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const T* q_m = q + leading_offset(g, g.q.leading, matrix);
  const T* kt_m = kt + leading_offset(g, g.kt.leading, matrix);
  const T* v_m = v + leading_offset(g, g.v.leading, matrix);
  const std::int64_t bias_base = bias != nullptr ? leading_offset(g, g.bias_leading_stride, matrix) : 0;
  for (int i = static_cast<int>(threadIdx.x); i < kRowsPerBlock * g.d; i += static_cast<int>(blockDim.x)) {
    const int row = first_row + i / g.d;
    q_s[i] = row < g.tq ? load_compute(q_m, row * g.q.row + i % g.d) : 0.0f;
  }
  float running_max[kRowsPerWarp], running_sum[kRowsPerWarp], acc[kRowsPerWarp][kSlots];
  for (int r = 0; r < kRowsPerWarp; ++r) {
    running_max[r] = -INFINITY;
    running_sum[r] = 0.0f;
    for (int s = 0; s < kSlots; ++s) acc[r][s] = 0.0f;
  }
  for (int chunk = 0; chunk < g.tk; chunk += kKeysPerChunk) {
    __syncthreads();  // the previous chunk is read (and q_s written, the first time)
    for (int i = static_cast<int>(threadIdx.x); i < g.d * kKeysPerChunk; i += static_cast<int>(blockDim.x)) {
      const int key = chunk + i % kKeysPerChunk;
      kt_s[i] = key < g.tk ? load_compute(kt_m, (i / kKeysPerChunk) * g.kt.row + key * g.kt.col) : 0.0f;
    }
    for (int i = static_cast<int>(threadIdx.x); i < kKeysPerChunk * g.dv; i += static_cast<int>(blockDim.x)) {
      const int key = chunk + i / g.dv;
      v_s[i] = key < g.tk ? load_compute(v_m, key * g.v.row + i % g.dv) : 0.0f;
    }
    __syncthreads();
    // The warp's rows together, so each key and value read from shared memory serves all of them.
    // A row past the end (the last block's) computes on zeros and is never written.
    const int key = chunk + lane;
    float score[kRowsPerWarp] = {};
    for (int i = 0; i < g.d; ++i) {
      const float k = kt_s[i * kKeysPerChunk + lane];
      for (int r = 0; r < kRowsPerWarp; ++r) score[r] += q_s[(warp * kRowsPerWarp + r) * g.d + i] * k;
    }
    float p[kRowsPerWarp];
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = first_row + warp * kRowsPerWarp + r;
      score[r] *= g.scale;
      if (key < g.tk && row < g.tq && bias != nullptr) {
        score[r] += load_compute(bias, bias_base + row * g.bias_row_stride + key * g.bias_key_stride);
      }
      if (key >= g.tk) score[r] = -INFINITY;
      const float new_max = fmaxf(running_max[r], warp_max(score[r]));
      // A row whose scores so far are all -inf (a fully masked chunk) adds nothing yet.
      p[r] = new_max == -INFINITY ? 0.0f : __expf(score[r] - new_max);
      const float correction = new_max == -INFINITY ? 1.0f : __expf(running_max[r] - new_max);
      running_sum[r] = running_sum[r] * correction + warp_sum(p[r]);
      running_max[r] = new_max;
      for (int s = 0; s < kSlots; ++s) acc[r][s] *= correction;
    }
    for (int j = 0; j < kKeysPerChunk; ++j) {
      float pj[kRowsPerWarp];
      for (int r = 0; r < kRowsPerWarp; ++r) pj[r] = __shfl_sync(0xffffffffu, p[r], j);
      for (int s = 0; s < kSlots; ++s) {
        const int e = lane + 32 * s;
        if (e >= g.dv) break;
        const float value = v_s[j * g.dv + e];
        for (int r = 0; r < kRowsPerWarp; ++r) acc[r][s] += pj[r] * value;
      }
    }
  }
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = first_row + warp * kRowsPerWarp + r;
    if (row >= g.tq) break;
    T* out = y + leading_offset(g, g.y.leading, matrix) + row * g.y.row;
    for (int s = 0; s < kSlots; ++s) {
      const int e = lane + 32 * s;
      // No keys at all (Tk = 0): the product with an empty V is zero.
      if (e < g.dv) store_compute(out, e, running_sum[r] > 0.0f ? acc[r][s] / running_sum[r] : 0.0f);
    }
  }
}

template <typename T, int kSlots>
Status launch(const AttentionGeometry& g, const T* q, const T* kt, const T* v, const T* bias, T* y,
              cudaStream_t stream) {
  const std::size_t bytes = shared_bytes(g.d, g.dv);
  const dim3 grid(static_cast<unsigned>(g.matrices),
                  static_cast<unsigned>((g.tq + kRowsPerBlock - 1) / kRowsPerBlock));
  attention_kernel<T, kSlots><<<grid, kWarps * 32, bytes, stream>>>(q, kt, v, bias, y, g);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// The tensor-core kernel: FlashAttention-2's layout on mma.sync. A block takes 64 query rows, 16
// per warp, and the keys 64 at a time: Q, the chunk's KT and V tiles in shared memory, everything
// else in registers. Each warp's scores (16 x 64, float) are mma accumulators; the online softmax
// runs on them in place (a row's 64 scores live in the four lanes of a quad, reduced with two
// shuffles), and they become the A operand of the product with V without leaving registers (an
// m16n8 accumulator pair is an m16n8k16 A fragment). The output rows stay in accumulators to the
// end. Head dims are padded with zeros to the kernel's (16, 32, 64 or 128), so any up to 128 runs.
namespace tensor_core {

constexpr int kWarps = 4;
constexpr int kWarpRows = 16;
constexpr int kBlockRows = kWarps * kWarpRows;
constexpr int kKeys = 64;
constexpr int kMaxDim = 128;
// Blocks an SM keeps: unbounded, ptxas takes 168 registers and three blocks of head dim 64 fit; four
// (128 registers, a 128-byte spill) made ViT-B 3% faster (docs/perf.md, "Attention reading the head
// split").
template <int kD>
constexpr int kMinBlocks = kD <= 64 ? 4 : 2;
constexpr unsigned kAll = 0xffffffffu;
// Every shared-memory row is padded by 8 halves: rows then start 16 bytes apart modulo the banks'
// 128, so the 8 rows one ldmatrix tile reads fall on different banks.
constexpr int kPad = 8;
constexpr int kLdKt = kKeys + kPad;

// Q [64][kD + 8], then two buffers (a chunk's loads overlap the previous chunk's products) of KT
// [kD][64 + 8] or K [64][kD + 8], and V [64][kD + 8], in halves.
template <int kD>
__host__ __device__ constexpr int key_tile_halves() {
  return kD * kLdKt > kKeys * (kD + kPad) ? kD * kLdKt : kKeys * (kD + kPad);
}

template <int kD>
constexpr std::size_t shared_bytes() {
  return sizeof(__half) * (static_cast<std::size_t>(kBlockRows) * (kD + kPad) +
                           2 * (static_cast<std::size_t>(key_tile_halves<kD>()) +
                                static_cast<std::size_t>(kKeys) * (kD + kPad)));
}

bool serves(const AttentionGeometry& g) {
  return g.d <= kMaxDim && g.dv <= kMaxDim;
}

// Copies a [rows][cols] tile of float16 from global memory (rows `src_ld` apart) into shared memory
// (rows `dst_ld` apart), zeros past `valid_rows` / `valid_cols`. Each thread issues kInFlight loads
// before storing any, 16 bytes at a time where every row is 16-byte aligned (V and Q rows of 64
// halves), two bytes otherwise (KT's rows of 197 keys).
constexpr int kInFlight = 8;

template <typename Word>
__device__ __forceinline__ void stage_words(Word* dst, int dst_ld, const Word* src, std::int64_t src_ld,
                                            int rows, int cols, int valid_rows, int valid_cols) {
  const int thread = static_cast<int>(threadIdx.x);
  const int total = rows * cols;
  for (int base = thread; base < total; base += kWarps * 32 * kInFlight) {
    Word word[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = base + u * kWarps * 32;
      const int r = i / cols, c = i % cols;
      word[u] = i < total && r < valid_rows && c < valid_cols ? src[r * src_ld + c] : Word{};
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = base + u * kWarps * 32;
      if (i < total) dst[(i / cols) * dst_ld + i % cols] = word[u];
    }
  }
}

__device__ __forceinline__ void stage(__half* dst, int dst_ld, const __half* src, std::int64_t src_ld,
                                      int rows, int cols, int valid_rows, int valid_cols) {
  constexpr int kHalves = sizeof(uint4) / sizeof(__half);
  const bool aligned = reinterpret_cast<std::uintptr_t>(src) % sizeof(uint4) == 0 && src_ld % kHalves == 0 &&
                       cols % kHalves == 0 && valid_cols % kHalves == 0;
  if (aligned) {
    stage_words(reinterpret_cast<uint4*>(dst), dst_ld / kHalves, reinterpret_cast<const uint4*>(src),
                src_ld / kHalves, rows, cols / kHalves, valid_rows, valid_cols / kHalves);
  } else {
    stage_words(reinterpret_cast<unsigned short*>(dst), dst_ld, reinterpret_cast<const unsigned short*>(src),
                src_ld, rows, cols, valid_rows, valid_cols);
  }
}

// stage() started as cp.async copies (committed by the caller) where every row is 16-byte aligned,
// so that the loads run while the block computes; else stage() itself.
__device__ __forceinline__ void stage_async(__half* dst, int dst_ld, const __half* src, std::int64_t src_ld,
                                            int rows, int cols, int valid_rows, int valid_cols) {
  constexpr int kHalves = sizeof(uint4) / sizeof(__half);
  const bool aligned = reinterpret_cast<std::uintptr_t>(src) % sizeof(uint4) == 0 && src_ld % kHalves == 0 &&
                       cols % kHalves == 0 && valid_cols % kHalves == 0;
  if (!aligned) {
    stage(dst, dst_ld, src, src_ld, rows, cols, valid_rows, valid_cols);
    return;
  }
  const int words = cols / kHalves;
  for (int i = static_cast<int>(threadIdx.x); i < rows * words; i += kWarps * 32) {
    const int r = i / words, c = (i % words) * kHalves;
    const bool valid = r < valid_rows && c < valid_cols;
    copy_chunk(shared_address(dst + r * dst_ld + c), valid ? src + r * src_ld + c : src, valid);
  }
}

// The ldmatrix address of this lane for the 16x16 tile at (row, col) of a row-major tile `ld`
// halves wide. As A (not transposed): tiles in the order rows 0-7 / 8-15 by columns 0-7, then
// columns 8-15 — a0..a3 of mma's A fragment. Transposed, the same order gives b0, b1 of the n-tile
// of columns 0-7, then b0, b1 of columns 8-15.
__device__ __forceinline__ std::uint32_t tile_address(const __half* tile, int ld, int row, int col,
                                                      int lane) {
  return shared_address(tile + (row + lane % 16) * ld + col + (lane / 16) * 8);
}

__device__ __forceinline__ std::uint32_t half2_bits(float low, float high) {
  const __half2 h = __floats2half2_rn(low, high);
  return *reinterpret_cast<const std::uint32_t*>(&h);
}

// A lane's fragment coordinates: it holds rows `group` and `group` + 8 of its warp's 16, and in
// each 8-column tile the columns 2 `quad` and 2 `quad` + 1. kKeyRows: the keys come as rows of K
// (g.key_rows), read with ldmatrix as they are; else as rows of KT, read transposed.
template <int kD, bool kKeyRows>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks<kD>)
    attention_kernel(const __half* __restrict__ q, const __half* __restrict__ kt,
                     const __half* __restrict__ v, const __half* __restrict__ bias, __half* __restrict__ y,
                     AttentionGeometry g) {
  constexpr int kLd = kD + kPad;
  constexpr int kSteps = kD / 16;       // k-steps of Q KT; 16-column pairs of the output
  constexpr int kKeyTiles = kKeys / 8;  // 8-key tiles of the scores
  extern __shared__ __align__(128) unsigned char shared_bytes_tc[];
  __half* q_s = reinterpret_cast<__half*>(shared_bytes_tc);
  // Per buffer: KT [kD][kLdKt], or K [kKeys][kLd] with kKeyRows; V [kKeys][kLd].
  constexpr int kBufferHalves = key_tile_halves<kD>() + kKeys * kLd;
  __half* const buffers = q_s + kBlockRows * kLd;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int group = lane / 4, quad = lane % 4;
  // A matrix's row blocks are neighbours in launch order, so they read its keys and values from L2
  // while they are there.
  const int row_blocks = (g.tq + kBlockRows - 1) / kBlockRows;
  const int matrix = static_cast<int>(blockIdx.x) / row_blocks;
  const int first_row = static_cast<int>(blockIdx.x) % row_blocks * kBlockRows;
  const __half* q_m = q + leading_offset(g, g.q.leading, matrix);
  const __half* kt_m = kt + leading_offset(g, g.kt.leading, matrix);
  const __half* v_m = v + leading_offset(g, g.v.leading, matrix);
  const std::int64_t bias_base = bias != nullptr ? leading_offset(g, g.bias_leading_stride, matrix) : 0;
  const int rows[2] = {first_row + warp * kWarpRows + group, first_row + warp * kWarpRows + group + 8};

  // Keys past the end get zero values too: their probability is 0, and 0 x garbage may be NaN.
  const auto stage_chunk = [&](int chunk, int buffer) {
    __half* kt_s = buffers + buffer * kBufferHalves;
    if constexpr (kKeyRows) {
      stage_async(kt_s, kLd, kt_m + chunk * g.kt.col, g.kt.col, kKeys, kD, g.tk - chunk, g.d);
    } else {
      stage_async(kt_s, kLdKt, kt_m + chunk, g.kt.row, kD, kKeys, g.d, g.tk - chunk);
    }
    stage_async(kt_s + key_tile_halves<kD>(), kLd, v_m + chunk * g.v.row, g.v.row, kKeys, kD, g.tk - chunk,
                g.dv);
    commit_copies();
  };
  // Rows past the end and head-dim columns past d are zeros: they compute harmlessly. Q joins the
  // first chunk's copies.
  stage_async(q_s, kLd, q_m + first_row * g.q.row, g.q.row, kBlockRows, kD, g.tq - first_row, g.d);
  if (g.tk > 0) {
    stage_chunk(0, 0);
  } else {
    commit_copies();
    wait_copies<0>();
  }
  std::uint32_t q_frag[kSteps][4];

  float out[2 * kSteps][4] = {};
  float running_max[2] = {-INFINITY, -INFINITY};
  float running_sum[2] = {0.0f, 0.0f};  // this lane's columns only; the quad's are summed at the end
  for (int chunk = 0, buffer = 0; chunk < g.tk; chunk += kKeys, buffer ^= 1) {
    // The next chunk's copies go into the other buffer (read by the previous iteration, which
    // ended with a barrier) while this one computes.
    if (chunk + kKeys < g.tk) {
      stage_chunk(chunk + kKeys, buffer ^ 1);
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    __syncthreads();
    if (chunk == 0) {
#pragma unroll
      for (int s = 0; s < kSteps; ++s)
        load_matrices(q_frag[s], tile_address(q_s, kLd, warp * kWarpRows, 16 * s, lane));
    }
    const __half* kt_s = buffers + buffer * kBufferHalves;
    const __half* v_s = kt_s + key_tile_halves<kD>();

    float score[kKeyTiles][4] = {};
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
#pragma unroll
      for (int pair = 0; pair < kKeyTiles / 2; ++pair) {
        std::uint32_t b[4];
        if constexpr (kKeyRows) {
          // Tiles (keys 0-7, dims 0-7), (keys 8-15, dims 0-7), (keys 0-7, dims 8-15), ...: b0 of the
          // two key tiles, then their b1.
          load_matrices(b, tile_address(kt_s, kLd, 16 * pair, 16 * s, lane));
          mma_f16(score[2 * pair], q_frag[s], b[0], b[2]);
          mma_f16(score[2 * pair + 1], q_frag[s], b[1], b[3]);
        } else {
          load_matrices_transposed(b, tile_address(kt_s, kLdKt, 16 * s, 16 * pair, lane));
          mma_f16(score[2 * pair], q_frag[s], b[0], b[1]);
          mma_f16(score[2 * pair + 1], q_frag[s], b[2], b[3]);
        }
      }
    }
    float chunk_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, key = chunk + 8 * t + 2 * quad + e % 2;
        float value = score[t][e] * g.scale;
        if (key >= g.tk) {
          value = -INFINITY;
        } else if (bias != nullptr && rows[r] < g.tq) {
          value += __half2float(bias[bias_base + rows[r] * g.bias_row_stride + key * g.bias_key_stride]);
        }
        score[t][e] = value;
        chunk_max[r] = fmaxf(chunk_max[r], value);
      }
    }
    float correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      chunk_max[r] = fmaxf(chunk_max[r], __shfl_xor_sync(kAll, chunk_max[r], 1));
      chunk_max[r] = fmaxf(chunk_max[r], __shfl_xor_sync(kAll, chunk_max[r], 2));
      const float new_max = fmaxf(running_max[r], chunk_max[r]);
      // A row whose scores so far are all -inf (a fully masked chunk) adds nothing yet.
      correction[r] = new_max == -INFINITY ? 1.0f : __expf(running_max[r] - new_max);
      running_max[r] = new_max;
    }
    // The probabilities as float16 A fragments; the sums take each as the product will (rounded).
    std::uint32_t p[kKeys / 16][4];
    float chunk_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float m = running_max[r];
        const float p0 = m == -INFINITY ? 0.0f : __expf(score[t][2 * r] - m);
        const float p1 = m == -INFINITY ? 0.0f : __expf(score[t][2 * r + 1] - m);
        const std::uint32_t bits = half2_bits(p0, p1);
        const __half2 rounded = *reinterpret_cast<const __half2*>(&bits);
        chunk_sum[r] += __low2float(rounded) + __high2float(rounded);
        p[t / 2][(t % 2) * 2 + r] = bits;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) running_sum[r] = running_sum[r] * correction[r] + chunk_sum[r];
#pragma unroll
    for (int t = 0; t < 2 * kSteps; ++t) {
      out[t][0] *= correction[0];
      out[t][1] *= correction[0];
      out[t][2] *= correction[1];
      out[t][3] *= correction[1];
    }
#pragma unroll
    for (int k = 0; k < kKeys / 16; ++k) {
#pragma unroll
      for (int pair = 0; pair < kSteps; ++pair) {
        std::uint32_t b[4];
        load_matrices_transposed(b, tile_address(v_s, kLd, 16 * k, 16 * pair, lane));
        mma_f16(out[2 * pair], p[k], b[0], b[1]);
        mma_f16(out[2 * pair + 1], p[k], b[2], b[3]);
      }
    }
    __syncthreads();  // this buffer is read before the next iteration's copies refill it
  }
  // No keys at all (Tk = 0) gives zeros.
  const bool pairs = g.y_pairs;  // two adjacent columns are one aligned 4-byte store
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    running_sum[r] += __shfl_xor_sync(kAll, running_sum[r], 1);
    running_sum[r] += __shfl_xor_sync(kAll, running_sum[r], 2);
    if (rows[r] >= g.tq) continue;
    const float inverse = running_sum[r] > 0.0f ? 1.0f / running_sum[r] : 0.0f;
    __half* row_out = y + leading_offset(g, g.y.leading, matrix) + rows[r] * g.y.row;
#pragma unroll
    for (int t = 0; t < 2 * kSteps; ++t) {
      const int col = 8 * t + 2 * quad;
      const float v0 = out[t][2 * r] * inverse, v1 = out[t][2 * r + 1] * inverse;
      if (pairs && col + 1 < g.dv) {
        *reinterpret_cast<__half2*>(row_out + col) = __floats2half2_rn(v0, v1);
      } else {
        if (col < g.dv) row_out[col] = __float2half(v0);
        if (col + 1 < g.dv) row_out[col + 1] = __float2half(v1);
      }
    }
  }
}

// Calls f.template operator()<kD>() with the padded head dim max(d, dv) takes.
template <typename F>
Status with_head_dim(const AttentionGeometry& g, F&& f) {
  const int dim = std::max(g.d, g.dv);
  if (dim <= 16) return f.template operator()<16>();
  if (dim <= 32) return f.template operator()<32>();
  if (dim <= 64) return f.template operator()<64>();
  return f.template operator()<128>();
}

// Calls f.template operator()<kKeyRows>() with the key layout g reads.
template <typename F>
Status with_key_layout(const AttentionGeometry& g, F&& f) {
  return g.key_rows ? f.template operator()<true>() : f.template operator()<false>();
}

Status prepare(const AttentionGeometry& g) {
  return with_head_dim(g, [&]<int kD>() {
    return with_key_layout(g, [&]<bool kKeyRows>() {
      return allow_dynamic_shared(attention_kernel<kD, kKeyRows>, shared_bytes<kD>());
    });
  });
}

Status launch(const AttentionGeometry& g, const __half* q, const __half* kt, const __half* v,
              const __half* bias, __half* y, cudaStream_t stream) {
  const std::int64_t blocks = static_cast<std::int64_t>(g.matrices) * ((g.tq + kBlockRows - 1) / kBlockRows);
  if (blocks > std::numeric_limits<int>::max()) {
    return Status(StatusCode::kUnsupported, "attention: " + std::to_string(blocks) + " blocks of " +
                                                std::to_string(kBlockRows) + " query rows exceed one launch");
  }
  const dim3 grid(static_cast<unsigned>(blocks));
  return with_head_dim(g, [&]<int kD>() {
    return with_key_layout(g, [&]<bool kKeyRows>() -> Status {
      attention_kernel<kD, kKeyRows><<<grid, kWarps * 32, shared_bytes<kD>(), stream>>>(q, kt, v, bias, y, g);
      FOVEA_CUDA_TRY_LAUNCH();
      return Status::ok();
    });
  });
}

}  // namespace tensor_core

// Calls f.template operator()<kSlots>() with the slots Dv needs.
template <typename F>
Status with_slots(int dv, F&& f) {
  if (dv <= 32) return f.template operator()<1>();
  if (dv <= 64) return f.template operator()<2>();
  if (dv <= 128) return f.template operator()<4>();
  return f.template operator()<8>();
}

struct AttentionState final : CudaNodeState {
  AttentionGeometry geometry;
  std::shared_ptr<const CudnnAttention> cudnn;  // cuDNN's kernel where it took the shape
};

// Operand `input`'s view of its input: the node's attribute, or the input whole.
Result<ops::AttentionView> operand_view(CudaKernelContext& ctx, int input) {
  FOVEA_ASSIGN_OR_RETURN(std::optional<ops::AttentionView> view, ops::attention_view(ctx.node(), input));
  if (view) return std::move(*view);
  ops::AttentionView whole;
  whole.sizes = ctx.input(input).shape();
  whole.strides = contiguous_strides(whole.sizes);
  return whole;
}

OperandStrides strides_of(const ops::AttentionView& view, int leading) {
  OperandStrides strides;
  strides.offset = view.offset;
  for (int i = 0; i < leading; ++i) strides.leading[i] = view.strides[static_cast<std::size_t>(i)];
  strides.row = view.strides[static_cast<std::size_t>(leading)];
  strides.col = view.strides[static_cast<std::size_t>(leading) + 1];
  return strides;
}

// Y's strides in the output, which holds Transpose(Y, y_perm) (or Y) in row-major order.
Result<OperandStrides> output_strides(CudaKernelContext& ctx, const Shape& y, int leading) {
  FOVEA_ASSIGN_OR_RETURN(const std::optional<std::vector<std::int64_t>> perm,
                         ops::attention_output_perm(ctx.node(), y.size()));
  ops::AttentionView view;
  view.sizes = y;
  view.strides.assign(y.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t i = y.size(); i-- > 0;) {
    const auto axis = perm ? static_cast<std::size_t>((*perm)[i]) : i;  // output axis i holds Y's axis
    view.strides[axis] = stride;
    stride *= y[axis];
  }
  return strides_of(view, leading);
}

Result<AttentionGeometry> geometry_of(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const ops::AttentionView q_view, operand_view(ctx, ops::kAttentionQ));
  FOVEA_ASSIGN_OR_RETURN(const ops::AttentionView kt_view, operand_view(ctx, ops::kAttentionKt));
  FOVEA_ASSIGN_OR_RETURN(const ops::AttentionView v_view, operand_view(ctx, ops::kAttentionV));
  const Shape& q = q_view.sizes;
  const Shape& v = v_view.sizes;
  const std::size_t rank = q.size();
  AttentionGeometry g;
  if (rank < 3 || rank - 2 > kMaxLeading) {
    return ctx.error(StatusCode::kUnsupported, "takes 1 to ", std::to_string(kMaxLeading),
                     " leading dims, got ", std::to_string(rank - 2));
  }
  g.tq = static_cast<int>(q[rank - 2]);
  g.d = static_cast<int>(q[rank - 1]);
  g.tk = static_cast<int>(v[rank - 2]);
  g.dv = static_cast<int>(v[rank - 1]);
  if (g.d > kMaxHeadDim || g.dv > kMaxHeadDim) {
    return ctx.error(StatusCode::kUnsupported, "head dims up to ", std::to_string(kMaxHeadDim), ", got ",
                     std::to_string(g.d), " and ", std::to_string(g.dv));
  }
  FOVEA_ASSIGN_OR_RETURN(g.scale, ctx.node().attr_float("scale", 1.0f));
  g.leading = static_cast<int>(rank - 2);
  std::int64_t matrices = 1;
  for (int i = 0; i < g.leading; ++i) {
    g.leading_size[i] = q[static_cast<std::size_t>(i)];
    matrices *= q[static_cast<std::size_t>(i)];
  }
  g.matrices = static_cast<int>(matrices);
  g.q = strides_of(q_view, g.leading);
  g.kt = strides_of(kt_view, g.leading);
  g.v = strides_of(v_view, g.leading);
  Shape y = q;
  y[rank - 1] = v[rank - 1];
  FOVEA_ASSIGN_OR_RETURN(g.y, output_strides(ctx, y, g.leading));
  if (g.q.col != 1 || g.v.col != 1 || g.y.col != 1 || (g.kt.row != 1 && g.kt.col != 1)) {
    return ctx.error(StatusCode::kUnsupported,
                     "reads rows of Q, V and K or KT and writes rows of Y as contiguous "
                     "elements; a view or y_perm strides them");
  }
  g.key_rows = g.kt.row == 1 && g.kt.col != 1;
  g.y_pairs = g.dv % 2 == 0 && g.y.row % 2 == 0;
  for (int i = 0; i < g.leading; ++i) g.y_pairs = g.y_pairs && g.y.leading[i] % 2 == 0;
  if (!ctx.has_input(3)) return g;
  // The bias right-aligned against the scores [leading..., Tq, Tk]; a dim of 1 (or a missing one)
  // broadcasts.
  const Shape& b = ctx.input(3).shape();
  const auto offset = static_cast<std::ptrdiff_t>(rank) - static_cast<std::ptrdiff_t>(b.size());
  std::int64_t stride = 1;
  for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(rank) - 1; i >= 0; --i) {
    const std::ptrdiff_t bi = i - offset;
    const std::int64_t size = bi >= 0 ? b[static_cast<std::size_t>(bi)] : 1;
    const std::int64_t element_stride = size == 1 ? 0 : stride;
    if (i == static_cast<std::ptrdiff_t>(rank) - 1) {
      g.bias_key_stride = element_stride;
    } else if (i == static_cast<std::ptrdiff_t>(rank) - 2) {
      g.bias_row_stride = element_stride;
    } else {
      g.bias_leading_stride[i] = element_stride;
    }
    stride *= size;
  }
  return g;
}

// The kernel for the node's dtype and Dv, asked for its shared memory (prepare) or launched (run).
template <typename T>
Status for_dtype(CudaKernelContext& ctx, const AttentionGeometry& g, bool launching) {
  const std::int64_t offsets[] = {g.q.offset, g.kt.offset, g.v.offset, 0};
  const auto in = [&](int i) {
    return ctx.has_input(i) ? static_cast<const T*>(ctx.input(i).raw()) + offsets[i] : nullptr;
  };
  if constexpr (std::is_same_v<T, __half>) {
    if (tensor_core::serves(g)) {
      if (!launching) return tensor_core::prepare(g);
      return tensor_core::launch(g, in(0), in(1), in(2), in(3), static_cast<T*>(ctx.output(0).raw()),
                                 ctx.stream());
    }
  }
  return with_slots(g.dv, [&]<int kSlots>() -> Status {
    // Past 48 KiB of shared memory a kernel must opt in, at plan time (not during the capture).
    if (!launching) return allow_dynamic_shared(attention_kernel<T, kSlots>, shared_bytes(g.d, g.dv));
    return launch<T, kSlots>(g, in(0), in(1), in(2), in(3), static_cast<T*>(ctx.output(0).raw()),
                             ctx.stream());
  });
}

Status dispatch(CudaKernelContext& ctx, const AttentionGeometry& g, bool launching) {
  switch (ctx.input(0).dtype()) {
    case DataType::kFloat32: return for_dtype<float>(ctx, g, launching);
    case DataType::kFloat16: return for_dtype<__half>(ctx, g, launching);
    default: return ctx.error(StatusCode::kUnsupported, "runs float32 and float16 only");
  }
}

// One leading dim of the four operands: its size and each operand's stride (Q, KT, V, Y).
struct LeadingDim {
  std::int64_t size = 1;
  std::array<std::int64_t, 4> strides{};
};

// The leading dims as cuDNN's two, B and H: dims of 1 dropped, neighbours merged where every
// operand steps over them as one; nullopt where more than two remain.
std::optional<std::array<LeadingDim, 2>> batch_and_heads(const AttentionGeometry& g) {
  std::vector<LeadingDim> dims;
  for (int i = 0; i < g.leading; ++i) {
    const LeadingDim dim{g.leading_size[i],
                         {g.q.leading[i], g.kt.leading[i], g.v.leading[i], g.y.leading[i]}};
    if (dim.size == 1) continue;
    bool merges = !dims.empty();
    for (std::size_t o = 0; merges && o < 4; ++o)
      merges = dims.back().strides[o] == dim.size * dim.strides[o];
    if (merges) {
      dims.back().size *= dim.size;
      dims.back().strides = dim.strides;
    } else {
      dims.push_back(dim);
    }
  }
  if (dims.size() > 2) return std::nullopt;
  std::array<LeadingDim, 2> bh;
  std::copy(dims.begin(), dims.end(), bh.begin() + static_cast<std::ptrdiff_t>(2 - dims.size()));
  // A dim of 1 steps over the one inside it (cuDNN checks strides even where a size makes them moot).
  const std::array<std::int64_t, 4> rows = {g.q.row * g.tq, g.kt.col * g.tk, g.v.row * g.tk, g.y.row * g.tq};
  for (int i = 1; i >= 0; --i) {
    if (bh[static_cast<std::size_t>(i)].size != 1) continue;
    for (std::size_t o = 0; o < 4; ++o) {
      bh[static_cast<std::size_t>(i)].strides[o] = i == 1 ? rows[o] : bh[1].size * bh[1].strides[o];
    }
  }
  return bh;
}

// g as cuDNN's SDPA operands, nullopt where their form rules it out (a bias, more than two leading
// dims after merging, KT's keys not rows of contiguous elements).
std::optional<CudnnAttentionShape> cudnn_shape(const AttentionGeometry& g, bool has_bias) {
  if (has_bias || !g.key_rows) return std::nullopt;
  const std::optional<std::array<LeadingDim, 2>> bh = batch_and_heads(g);
  if (!bh) return std::nullopt;
  const auto operand = [&](std::size_t o, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                           std::int64_t col_stride) {
    return AttentionOperand{{(*bh)[0].size, (*bh)[1].size, rows, cols},
                            {(*bh)[0].strides[o], (*bh)[1].strides[o], row_stride, col_stride}};
  };
  CudnnAttentionShape shape;
  shape.q = operand(0, g.tq, g.d, g.q.row, 1);
  shape.k = operand(1, g.tk, g.d, g.kt.col, g.kt.row);
  shape.v = operand(2, g.tk, g.dv, g.v.row, 1);
  shape.o = operand(3, g.tq, g.dv, g.y.row, 1);
  shape.scale = g.scale;
  return shape;
}

// The operands' first elements.
struct AttentionPointers {
  const void* q;
  const void* kt;
  const void* v;
  void* y;
};

AttentionPointers pointers_of(CudaKernelContext& ctx, const AttentionGeometry& g) {
  const auto in = [&](int i, std::int64_t offset) {
    return static_cast<const __half*>(ctx.input(i).raw()) + offset;
  };
  return {in(0, g.q.offset), in(1, g.kt.offset), in(2, g.v.offset), ctx.output(0).raw()};
}

bool aligned16(const AttentionPointers& p) {
  for (const void* pointer : {p.q, p.kt, p.v, static_cast<const void*>(p.y)}) {
    if (!aligned_to(pointer, 16)) return false;
  }
  return true;
}

// cuDNN's plan for the node in float16 where cuDNN takes it (one per shape, shared by the
// executor's nodes); null to run fovea's kernels.
std::shared_ptr<const CudnnAttention> cudnn_plan(CudaKernelContext& ctx, const AttentionGeometry& g) {
  if (!cudnn_attention_allowed() || ctx.input(0).dtype() != DataType::kFloat16) return nullptr;
  const std::optional<CudnnAttentionShape> shape = cudnn_shape(g, ctx.has_input(ops::kAttentionBias));
  if (!shape || !aligned16(pointers_of(ctx, g))) return nullptr;
  return shared_cudnn_attention(ctx.libraries(), *shape, ctx.node().describe());
}

Result<CudaPrepared> prepare_attention(CudaKernelContext& ctx) {
  auto state = std::make_unique<AttentionState>();
  FOVEA_ASSIGN_OR_RETURN(state->geometry, geometry_of(ctx));
  state->cudnn = cudnn_plan(ctx, state->geometry);
  if (state->cudnn != nullptr) {
    const std::size_t workspace = state->cudnn->workspace_bytes();
    return CudaPrepared{std::move(state), workspace};
  }
  FOVEA_TRY(dispatch(ctx, state->geometry, false));
  return CudaPrepared{std::move(state)};
}

Status run_attention(CudaKernelContext& ctx) {
  if (ctx.output(0).numel() == 0) return Status::ok();
  const AttentionState& state = ctx.state<AttentionState>();
  if (state.cudnn != nullptr) {
    const AttentionPointers p = pointers_of(ctx, state.geometry);
    if (!aligned16(p)) return ctx.error(StatusCode::kInternal, "cuDNN's plan needs 16-byte aligned operands");
    return state.cudnn->run(ctx.libraries().cudnn, p.q, p.kt, p.v, p.y, ctx.workspace());
  }
  return dispatch(ctx, state.geometry, true);
}

}  // namespace

FOVEA_REGISTER_CUDA_OP(
    {.domain = "fovea", .op_type = "Attention", .prepare = prepare_attention, .run = run_attention});

}  // namespace fovea::runtime::cuda
