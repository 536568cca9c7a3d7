// fovea.Attention on CUDA (ops/attention.cpp defines it): Y = Softmax(scale * Q KT + B) V in one
// kernel, the scores never written to memory. Each row keeps a running maximum and sum (the online
// softmax), so any number of keys fits. Two kernels:
// - float16 with head dims that are multiples of 16, up to 128 (ViT's 64, Swin's 32): the products
//   on tensor cores (WMMA 16x16x16, float accumulation). A block takes 64 query rows (16 per warp)
//   and the keys 64 at a time through shared memory; each warp's scores go through shared memory
//   for the softmax step, and its output rows stay there in float until the last chunk.
// - the rest (float32, other head dims up to 256): on the CUDA cores in float, 32 query rows per
//   block (four per warp, computed together so that every key and value read from shared memory
//   serves four rows), keys 32 at a time, one per lane.
//
// The unfused chain ran two batched GEMMs with the scores between them written and read back, and
// for ViT's 197 tokens cuBLAS took its align-1 kernels (rows not 16-byte aligned): 17% of ViT-B's
// time, and the softmax another 12% (docs/perf.md, "After SiLU and GELU fusion"). The CUDA-core
// kernel alone made ViT-B slower (3,179 against 4,900 images/s, call 22): its 92 GFLOP per batch of
// 64 are tensor cores' work.
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include <mma.h>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"

namespace fovea::runtime::cuda {

namespace {

constexpr int kKeysPerChunk = 32;  // one per lane
constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
constexpr int kMaxLeading = 6;
constexpr int kMaxHeadDim = 256;

struct AttentionGeometry {
  int matrices = 0;  // the product of the leading dims
  int tq = 0, tk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  // The bias's element strides, 0 where it broadcasts: per leading dim (with its size), per query
  // row and per key.
  int leading = 0;
  std::int64_t leading_size[kMaxLeading] = {};
  std::int64_t bias_leading_stride[kMaxLeading] = {};
  std::int64_t bias_row_stride = 0, bias_key_stride = 0;
};

// Where matrix `matrix`'s scores find their bias: its leading-dim coordinates on the bias's strides.
__device__ __forceinline__ std::int64_t bias_offset(const AttentionGeometry& g, int matrix) {
  std::int64_t offset = 0;
  int rest = matrix;
  for (int i = g.leading - 1; i >= 0; --i) {
    offset += (rest % g.leading_size[i]) * g.bias_leading_stride[i];
    rest /= static_cast<int>(g.leading_size[i]);
  }
  return offset;
}

std::size_t shared_bytes(int d, int dv) {
  return sizeof(float) *
         (static_cast<std::size_t>(kRowsPerBlock) * d + static_cast<std::size_t>(d) * kKeysPerChunk +
          static_cast<std::size_t>(kKeysPerChunk) * dv);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
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
  const T* q_m = q + static_cast<std::int64_t>(matrix) * g.tq * g.d;
  const T* kt_m = kt + static_cast<std::int64_t>(matrix) * g.d * g.tk;
  const T* v_m = v + static_cast<std::int64_t>(matrix) * g.tk * g.dv;
  const std::int64_t bias_base = bias != nullptr ? bias_offset(g, matrix) : 0;
  for (int i = static_cast<int>(threadIdx.x); i < kRowsPerBlock * g.d; i += static_cast<int>(blockDim.x)) {
    const int row = first_row + i / g.d;
    q_s[i] = row < g.tq ? load_compute(q_m, static_cast<std::int64_t>(row) * g.d + i % g.d) : 0.0f;
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
      kt_s[i] =
          key < g.tk ? load_compute(kt_m, static_cast<std::int64_t>(i / kKeysPerChunk) * g.tk + key) : 0.0f;
    }
    for (int i = static_cast<int>(threadIdx.x); i < kKeysPerChunk * g.dv; i += static_cast<int>(blockDim.x)) {
      const int key = chunk + i / g.dv;
      v_s[i] = key < g.tk ? load_compute(v_m, static_cast<std::int64_t>(key) * g.dv + i % g.dv) : 0.0f;
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
    T* out = y + (static_cast<std::int64_t>(matrix) * g.tq + row) * g.dv;
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

// The tensor-core kernel's shared memory: Q [64][d], KT [d][64], V [64][dv] and per warp its
// scores S [16][64] (float), probabilities P [16][64] and output O [16][dv] (float). Rows are padded
// (8 halves, 4 floats) against bank conflicts; every tile starts 32-byte aligned, as WMMA needs.
namespace tensor_core {

constexpr int kWarps = 4;
constexpr int kWarpRows = 16;
constexpr int kBlockRows = kWarps * kWarpRows;
constexpr int kKeys = 64;
constexpr int kMaxDim = 128;
constexpr unsigned kAll = 0xffffffffu;

struct Layout {
  int ld_q, ld_kt, ld_v, ld_s, ld_p, ld_o;  // leading dims, in elements
  std::size_t q, kt, v, s, p, o, total;     // offsets, in bytes
};

__host__ __device__ inline Layout layout(int d, int dv) {
  Layout l{d + 8, kKeys + 8, dv + 8, kKeys + 4, kKeys + 8, dv + 4, 0, 0, 0, 0, 0, 0, 0};
  l.kt = l.q + sizeof(__half) * kBlockRows * l.ld_q;
  l.v = l.kt + sizeof(__half) * d * l.ld_kt;
  l.s = l.v + sizeof(__half) * kKeys * l.ld_v;
  l.p = l.s + sizeof(float) * kBlockRows * l.ld_s;
  l.o = l.p + sizeof(__half) * kBlockRows * l.ld_p;
  l.total = l.o + sizeof(float) * kBlockRows * l.ld_o;
  return l;
}

bool serves(const AttentionGeometry& g) {
  return g.d % 16 == 0 && g.dv % 16 == 0 && g.d <= kMaxDim && g.dv <= kMaxDim;
}

using namespace nvcuda;
using AccumulatorTile = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
using LeftTile = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using RightTile = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;

// Copies a [rows][cols] tile of float16 from global memory (rows `src_ld` apart) into shared memory
// (rows `dst_ld` apart), zeros past `valid_rows` / `valid_cols`. The loads are what the kernel waits
// on (one at a time per thread, ViT's attention took 478 us a layer: call 24), so each thread issues
// kInFlight of them before storing any, 16 bytes at a time where every row is 16-byte aligned
// (V and Q rows of 64 halves), two bytes otherwise (KT's rows of 197 keys).
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

// C (16 x 16 tiles, `tiles` of them side by side) = A [16][k] x B [k][16 * tiles], accumulating on
// what C holds when `accumulate`.
__device__ __forceinline__ void product(float* c, int ld_c, const __half* a, int ld_a, const __half* b,
                                        int ld_b, int k, int tiles, bool accumulate) {
  for (int t = 0; t < tiles; ++t) {
    AccumulatorTile acc;
    if (accumulate) {
      wmma::load_matrix_sync(acc, c + 16 * t, ld_c, wmma::mem_row_major);
    } else {
      wmma::fill_fragment(acc, 0.0f);
    }
    for (int i = 0; i < k; i += 16) {
      LeftTile left;
      RightTile right;
      wmma::load_matrix_sync(left, a + i, ld_a);
      wmma::load_matrix_sync(right, b + static_cast<std::ptrdiff_t>(i) * ld_b + 16 * t, ld_b);
      wmma::mma_sync(acc, left, right, acc);
    }
    wmma::store_matrix_sync(c + 16 * t, acc, ld_c, wmma::mem_row_major);
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const __half* __restrict__ q, const __half* __restrict__ kt,
                     const __half* __restrict__ v, const __half* __restrict__ bias, __half* __restrict__ y,
                     AttentionGeometry g) {
  extern __shared__ __align__(128) unsigned char shared_bytes_tc[];
  const Layout l = layout(g.d, g.dv);
  __half* q_s = reinterpret_cast<__half*>(shared_bytes_tc + l.q);
  __half* kt_s = reinterpret_cast<__half*>(shared_bytes_tc + l.kt);
  __half* v_s = reinterpret_cast<__half*>(shared_bytes_tc + l.v);
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread / 32, lane = thread % 32;
  float* s_w = reinterpret_cast<float*>(shared_bytes_tc + l.s) + warp * kWarpRows * l.ld_s;
  __half* p_w = reinterpret_cast<__half*>(shared_bytes_tc + l.p) + warp * kWarpRows * l.ld_p;
  float* o_w = reinterpret_cast<float*>(shared_bytes_tc + l.o) + warp * kWarpRows * l.ld_o;
  const __half* q_w = q_s + warp * kWarpRows * l.ld_q;
  const int matrix = static_cast<int>(blockIdx.x);
  const int first_row = static_cast<int>(blockIdx.y) * kBlockRows;
  const __half* q_m = q + static_cast<std::int64_t>(matrix) * g.tq * g.d;
  const __half* kt_m = kt + static_cast<std::int64_t>(matrix) * g.d * g.tk;
  const __half* v_m = v + static_cast<std::int64_t>(matrix) * g.tk * g.dv;
  const std::int64_t bias_base = bias != nullptr ? bias_offset(g, matrix) : 0;
  // Rows past the end are zeros: they compute harmlessly and are never written.
  stage(q_s, l.ld_q, q_m + static_cast<std::int64_t>(first_row) * g.d, g.d, kBlockRows, g.d, g.tq - first_row,
        g.d);
  for (int i = lane; i < kWarpRows * g.dv; i += 32) o_w[(i / g.dv) * l.ld_o + i % g.dv] = 0.0f;
  // Lanes 2r and 2r + 1 own the warp's row r in the softmax step, 32 keys each.
  const int my_row = lane / 2, my_half = lane % 2;
  const int row = first_row + warp * kWarpRows + my_row;
  float running_max = -INFINITY, running_sum = 0.0f;
  for (int chunk = 0; chunk < g.tk; chunk += kKeys) {
    __syncthreads();  // the previous chunk's KT and V are read
    stage(kt_s, l.ld_kt, kt_m + chunk, g.tk, g.d, kKeys, g.d, g.tk - chunk);
    // Keys past the end get zero values too: their probability is 0, and 0 x garbage may be NaN.
    stage(v_s, l.ld_v, v_m + static_cast<std::int64_t>(chunk) * g.dv, g.dv, kKeys, g.dv, g.tk - chunk, g.dv);
    __syncthreads();
    product(s_w, l.ld_s, q_w, l.ld_q, kt_s, l.ld_kt, g.d, kKeys / 16, false);
    __syncwarp();
    float score[32];
    float chunk_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int col = my_half * 32 + j, key = chunk + col;
      float value = s_w[my_row * l.ld_s + col] * g.scale;
      if (key >= g.tk) {
        value = -INFINITY;
      } else if (bias != nullptr && row < g.tq) {
        value += __half2float(bias[bias_base + row * g.bias_row_stride + key * g.bias_key_stride]);
      }
      score[j] = value;
      chunk_max = fmaxf(chunk_max, value);
    }
    const float new_max = fmaxf(running_max, fmaxf(chunk_max, __shfl_xor_sync(kAll, chunk_max, 1)));
    // A row whose scores so far are all -inf (a fully masked chunk) adds nothing yet.
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      // The sum takes each probability as the product will (rounded to float16).
      const __half p = __float2half(new_max == -INFINITY ? 0.0f : __expf(score[j] - new_max));
      p_w[my_row * l.ld_p + my_half * 32 + j] = p;
      sum += __half2float(p);
    }
    sum += __shfl_xor_sync(kAll, sum, 1);
    const float correction = new_max == -INFINITY ? 1.0f : __expf(running_max - new_max);
    running_sum = running_sum * correction + sum;
    running_max = new_max;
    for (int e = my_half; e < g.dv; e += 2) o_w[my_row * l.ld_o + e] *= correction;
    __syncwarp();
    product(o_w, l.ld_o, p_w, l.ld_p, v_s, l.ld_v, kKeys, g.dv / 16, true);
    __syncwarp();
  }
  // Row by row, all lanes along it (coalesced); no keys at all (Tk = 0) gives zeros.
  for (int r = 0; r < kWarpRows; ++r) {
    const float total = __shfl_sync(kAll, running_sum, 2 * r);
    const int out_row = first_row + warp * kWarpRows + r;
    if (out_row >= g.tq) break;
    __half* out = y + (static_cast<std::int64_t>(matrix) * g.tq + out_row) * g.dv;
    for (int e = lane; e < g.dv; e += 32) {
      out[e] = __float2half(total > 0.0f ? o_w[r * l.ld_o + e] / total : 0.0f);
    }
  }
}

Status prepare(const AttentionGeometry& g) {
  return allow_dynamic_shared(attention_kernel, layout(g.d, g.dv).total);
}

Status launch(const AttentionGeometry& g, const __half* q, const __half* kt, const __half* v,
              const __half* bias, __half* y, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(g.matrices),
                  static_cast<unsigned>((g.tq + kBlockRows - 1) / kBlockRows));
  attention_kernel<<<grid, kWarps * 32, layout(g.d, g.dv).total, stream>>>(q, kt, v, bias, y, g);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
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
};

Result<AttentionGeometry> geometry_of(CudaKernelContext& ctx) {
  const Shape& q = ctx.input(0).shape();
  const Shape& v = ctx.input(2).shape();
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
  const auto in = [&](int i) {
    return ctx.has_input(i) ? static_cast<const T*>(ctx.input(i).raw()) : nullptr;
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

Result<CudaPrepared> prepare_attention(CudaKernelContext& ctx) {
  auto state = std::make_unique<AttentionState>();
  FOVEA_ASSIGN_OR_RETURN(state->geometry, geometry_of(ctx));
  FOVEA_TRY(dispatch(ctx, state->geometry, false));
  return CudaPrepared{std::move(state)};
}

Status run_attention(CudaKernelContext& ctx) {
  if (ctx.output(0).numel() == 0) return Status::ok();
  return dispatch(ctx, ctx.state<AttentionState>().geometry, true);
}

}  // namespace

FOVEA_REGISTER_CUDA_OP(
    {.domain = "fovea", .op_type = "Attention", .prepare = prepare_attention, .run = run_attention});

}  // namespace fovea::runtime::cuda
