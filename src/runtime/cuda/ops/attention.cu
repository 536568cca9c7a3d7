// fovea.Attention on CUDA (ops/attention.cpp defines it): Y = Softmax(scale * Q KT + B) V in one
// kernel, the scores never written to memory. Each block takes 32 query rows of one matrix (four per
// warp, computed together so that every key and value read from shared memory serves four rows);
// the keys come through shared memory 32 at a time, one per lane, and each row keeps a running
// maximum and sum (the online softmax), so any number of keys fits. Scores and products run
// on the CUDA cores in float ("half storage, float accumulation"); head dims up to 256.
//
// The unfused chain ran two batched GEMMs with the scores between them written and read back, and
// for ViT's 197 tokens cuBLAS took its align-1 kernels (rows not 16-byte aligned): 17% of ViT-B's
// time, and the softmax another 12% (docs/perf.md, "After SiLU and GELU fusion").
#include <cmath>
#include <memory>
#include <string>

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
constexpr int kDefaultSharedBytes = 48 << 10;

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
  std::int64_t bias_base = 0;
  if (bias != nullptr) {
    int rest = matrix;
    for (int i = g.leading - 1; i >= 0; --i) {
      bias_base += (rest % g.leading_size[i]) * g.bias_leading_stride[i];
      rest /= static_cast<int>(g.leading_size[i]);
    }
  }
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

// Past 48 KiB of shared memory a kernel has to ask for it, once (not during the run's capture).
template <typename T, int kSlots>
Status allow_shared(std::size_t bytes) {
  if (bytes <= kDefaultSharedBytes) return Status::ok();
  FOVEA_CUDA_TRY(cudaFuncSetAttribute(attention_kernel<T, kSlots>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return Status::ok();
}

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
  return with_slots(g.dv, [&]<int kSlots>() -> Status {
    if (!launching) return allow_shared<T, kSlots>(shared_bytes(g.d, g.dv));
    const auto in = [&](int i) {
      return ctx.has_input(i) ? static_cast<const T*>(ctx.input(i).raw()) : nullptr;
    };
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
