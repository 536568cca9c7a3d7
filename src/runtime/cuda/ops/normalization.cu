// BatchNormalization (inference), fovea.BatchNormalization (NHWC, optionally with its ReLU),
// InstanceNormalization and LayerNormalization on CUDA.
//
//   op                   kernel
//   BatchNormalization   y = x * a[c] + b[c], a block row per (n, c) plane, threads along the plane;
//                        a and b rounded as the CPU does, so the results agree to the last bit
//   fovea.BatchNorm      the same y on NHWC, c the innermost index; a and b per channel computed at
//                        plan time; float16 with channels a multiple of 8 by 16-byte vectors
//   Instance/Layer       a warp or a block per normalized row (block_per_row): one read pass for the
//                        mean and variance (sums of x - x[0]: the shift keeps float sums of squares
//                        from cancelling when |mean| >> stddev), one pass to normalize and apply the
//                        affine map; float16 rows of up to 1,024 elements (a multiple of 8) with
//                        whole Scale and B and no Mean/InvStdDev outputs: half a warp per row held
//                        in registers, 16-byte loads, mean then variance from the registers (the
//                        general kernel's element loads ran at a quarter of the memory's rate:
//                        ViT-B's LayerNorms took 31 us a layer of 19 MB)
//
//   dtypes: float32/16/64
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/half.h"

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/group_reduce.cuh"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/reduce_ops.cuh"
#include "runtime/ops/normalization_util.h"

namespace fovea::runtime::cuda {

namespace {

template <typename F>
bool dispatch_float(DataType dtype, F&& f) {
  return dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(dtype,
                                                                                     std::forward<F>(f));
}

// ---- BatchNormalization ----

// Single-rounding products and sums in the compute type: the CPU reference never fuses them.
template <typename C>
__device__ __forceinline__ C mul_exact(C a, C b) {
  if constexpr (std::is_same_v<C, float>) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
}
template <typename C>
__device__ __forceinline__ C add_exact(C a, C b) {
  if constexpr (std::is_same_v<C, float>) {
    return __fadd_rn(a, b);
  } else {
    return __dadd_rn(a, b);
  }
}

// blockDim = (columns of a plane, planes): planes of at least 256 elements get whole blocks, small
// ones (a [N, C] input has planes of 1) share a block.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    batch_norm_kernel(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ scale,
                      const T* __restrict__ bias, const T* __restrict__ mean, const T* __restrict__ var,
                      double epsilon, std::int64_t planes, std::int64_t channels, std::int64_t plane) {
  using C = ComputeType<T>;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; p < planes;
       p += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const std::int64_t c = p % channels;
    // As the CPU: a = scale / sqrt(var + eps) in double, rounded once; b = B - mean * a.
    const auto a = static_cast<C>(static_cast<double>(load_compute(scale, c)) /
                                  sqrt(static_cast<double>(load_compute(var, c)) + epsilon));
    const C b = add_exact(load_compute(bias, c), -mul_exact(load_compute(mean, c), a));
    const T* in = x + p * plane;
    T* out = y + p * plane;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < plane;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      store_compute(out, i, add_exact(mul_exact(load_compute(in, i), a), b));
    }
  }
}

Status run_batch_norm(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  const std::int64_t channels = x.dim(1);
  const std::int64_t planes = x.dim(0) * channels;
  const std::int64_t plane = x.numel() / planes;
  std::int64_t width = 1;
  while (width < plane && width < kBlockSize) width *= 2;
  const auto height = static_cast<unsigned>(kBlockSize / width);
  constexpr std::int64_t kMaxGridY = 65535;
  const dim3 block(static_cast<unsigned>(width), height);
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>((plane + width - 1) / width, kMaxGridY)),
                  static_cast<unsigned>(std::min<std::int64_t>((planes + height - 1) / height, kMaxGridY)));
  const bool known = dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto param = [&](int i) { return static_cast<const T*>(ctx.input(i).raw()); };
    batch_norm_kernel<T><<<grid, block, 0, ctx.stream()>>>(param(0), static_cast<T*>(ctx.output(0).raw()),
                                                           param(1), param(2), param(3), param(4), epsilon,
                                                           planes, channels, plane);
  });
  if (!known) return ctx.error(StatusCode::kUnsupported, "normalizes float16, float32 and float64 only");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- fovea.BatchNormalization: NHWC, the channel the innermost axis ----

// Per channel a (then b) in the compute type, computed once at plan time from the constant
// parameters exactly as batch_norm_kernel computes them per plane.
struct NhwcBatchNormState final : CudaNodeState {
  DeviceMemory factors;
  std::int64_t channels = 0;
  bool relu = false;
};

double param_value(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat16: return static_cast<double>(half_to_float(t.data<Half>()[i]));
    case DataType::kFloat32: return static_cast<double>(t.data<float>()[i]);
    default: return t.data<double>()[i];
  }
}

// a = scale / sqrt(var + eps) in double, rounded once to C; b = B - mean * a in C.
template <typename C>
std::vector<C> batch_norm_factors(const Tensor& scale, const Tensor& bias, const Tensor& mean,
                                  const Tensor& var, std::int64_t channels, double epsilon) {
  std::vector<C> factors(static_cast<std::size_t>(2 * channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto a = static_cast<C>(param_value(scale, c) / std::sqrt(param_value(var, c) + epsilon));
    const C product = static_cast<C>(param_value(mean, c)) * a;
    factors[static_cast<std::size_t>(c)] = a;
    factors[static_cast<std::size_t>(channels + c)] = static_cast<C>(param_value(bias, c)) - product;
  }
  return factors;
}

template <typename T, bool kRelu>
__global__ void __launch_bounds__(kBlockSize)
    nhwc_batch_norm_kernel(const T* __restrict__ x, T* __restrict__ y, const ComputeType<T>* __restrict__ a,
                           const ComputeType<T>* __restrict__ b, std::int64_t n, std::int64_t channels) {
  using C = ComputeType<T>;
  FOVEA_GRID_STRIDE_LOOP(i, n) {
    const std::int64_t c = i % channels;
    C v = add_exact(mul_exact(load_compute(x, i), a[c]), b[c]);
    if constexpr (kRelu) v = v < C(0) ? C(0) : v;  // NaN stays NaN, as on the CPU
    store_compute(y, i, v);
  }
}

// float16 with channels a multiple of 8: a thread normalizes eight channels of a pixel, one 16-byte
// load and store.
template <bool kRelu>
__global__ void __launch_bounds__(kBlockSize)
    nhwc_batch_norm_half8_kernel(const uint4* __restrict__ x, uint4* __restrict__ y,
                                 const float* __restrict__ a, const float* __restrict__ b,
                                 std::int64_t vectors, std::int64_t channel_vectors) {
  FOVEA_GRID_STRIDE_LOOP(i, vectors) {
    const std::int64_t c = (i % channel_vectors) * 8;
    const uint4 in = x[i];
    uint4 out;
    const auto* h = reinterpret_cast<const __half2*>(&in);
    auto* o = reinterpret_cast<__half2*>(&out);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = __half22float2(h[e]);
      float lo = __fadd_rn(__fmul_rn(f.x, a[c + 2 * e]), b[c + 2 * e]);
      float hi = __fadd_rn(__fmul_rn(f.y, a[c + 2 * e + 1]), b[c + 2 * e + 1]);
      if constexpr (kRelu) {
        lo = lo < 0.0f ? 0.0f : lo;
        hi = hi < 0.0f ? 0.0f : hi;
      }
      o[e] = __floats2half2_rn(lo, hi);
    }
    y[i] = out;
  }
}

Result<CudaPrepared> prepare_nhwc_batch_norm(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  FOVEA_ASSIGN_OR_RETURN(const ops::BatchNormActivation activation, ops::batch_norm_activation(ctx.node()));
  for (int i = 1; i <= 4; ++i) {
    if (ctx.host_constant(i) == nullptr) {
      return ctx.error(StatusCode::kUnsupported, "needs constant scale, B, mean and var on CUDA");
    }
  }
  auto state = std::make_unique<NhwcBatchNormState>();
  state->channels = ctx.input(0).dim(3);
  state->relu = activation == ops::BatchNormActivation::kRelu;
  const auto upload = [&](const auto& factors) -> Status {
    FOVEA_ASSIGN_OR_RETURN(state->factors,
                           upload_to_device(factors.data(), factors.size() * sizeof(factors[0])));
    return Status::ok();
  };
  const Tensor &scale = *ctx.host_constant(1), &bias = *ctx.host_constant(2);
  const Tensor &mean = *ctx.host_constant(3), &var = *ctx.host_constant(4);
  if (ctx.input(0).dtype() == DataType::kFloat64) {
    FOVEA_TRY(upload(batch_norm_factors<double>(scale, bias, mean, var, state->channels, epsilon)));
  } else {
    FOVEA_TRY(upload(batch_norm_factors<float>(scale, bias, mean, var, state->channels, epsilon)));
  }
  return CudaPrepared{std::move(state)};
}

template <typename T, bool kRelu>
void launch_nhwc_batch_norm(const T* x, T* y, const NhwcBatchNormState& state, std::int64_t n,
                            cudaStream_t stream) {
  using C = ComputeType<T>;
  const auto* a = static_cast<const C*>(state.factors.get());
  const C* b = a + state.channels;
  if constexpr (std::is_same_v<T, __half>) {
    if (state.channels % 8 == 0 && aligned_to(x, sizeof(uint4)) && aligned_to(y, sizeof(uint4))) {
      nhwc_batch_norm_half8_kernel<kRelu><<<grid_for(n / 8), kBlockSize, 0, stream>>>(
          reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(y), a, b, n / 8, state.channels / 8);
      return;
    }
  }
  nhwc_batch_norm_kernel<T, kRelu><<<grid_for(n), kBlockSize, 0, stream>>>(x, y, a, b, n, state.channels);
}

Status run_nhwc_batch_norm(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  const NhwcBatchNormState& state = ctx.state<NhwcBatchNormState>();
  const bool known = dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x.raw());
    auto* out = static_cast<T*>(ctx.output(0).raw());
    if (state.relu) {
      launch_nhwc_batch_norm<T, true>(in, out, state, x.numel(), ctx.stream());
    } else {
      launch_nhwc_batch_norm<T, false>(in, out, state, x.numel(), ctx.stream());
    }
  });
  if (!known) return ctx.error(StatusCode::kUnsupported, "normalizes float16, float32 and float64 only");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- InstanceNormalization and LayerNormalization ----

// Sums of d = x - shift and of d * d over a row.
template <typename C>
struct ShiftedSums {
  C sum;
  C squares;
};

template <typename C>
struct ShiftedSumsOp {
  __device__ ShiftedSums<C> operator()(ShiftedSums<C> a, ShiftedSums<C> b) const {
    return {a.sum + b.sum, a.squares + b.squares};
  }
};

// InstanceNormalization: one scale and bias per channel, rows are the (n, c) planes.
template <typename T>
struct ChannelAffine {
  const T* scale;
  const T* bias;
  std::int64_t channels;

  __device__ ComputeType<T> operator()(std::int64_t row, std::int64_t, ComputeType<T> v) const {
    const std::int64_t c = row % channels;
    return v * load_compute(scale, c) + load_compute(bias, c);
  }
};

// LayerNormalization: Scale and the optional B broadcast to the normalized dims; when both cover
// them whole (the usual case), element j of the row reads element j.
template <typename T>
struct LayerAffine {
  const T* scale;
  const T* bias;  // nullptr without B
  bool direct;
  BroadcastIndexer<2> indexer;

  __device__ ComputeType<T> operator()(std::int64_t, std::int64_t j, ComputeType<T> v) const {
    std::int64_t at[2] = {j, j};
    if (!direct) indexer.offsets(j, at);
    return v * load_compute(scale, at[0]) + (bias != nullptr ? load_compute(bias, at[1]) : ComputeType<T>(0));
  }
};

template <typename T, typename Affine, int kGroup>
__global__ void __launch_bounds__(kBlockSize)
    normalize_rows_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, std::int64_t length,
                          float epsilon, Affine affine, T* __restrict__ mean_out,
                          T* __restrict__ inv_std_out) {
  using C = ComputeType<T>;
  using Reducer = GroupReducer<ShiftedSums<C>, kGroup, kBlockSize>;
  __shared__ typename Reducer::TempStorage storage;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * Reducer::kGroups;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * Reducer::kGroups + Reducer::group();
       row < rows; row += step) {
    const T* in = x + row * length;
    T* out = y + row * length;
    const C shift = load_compute(in, 0);
    ShiftedSums<C> sums{C(0), C(0)};
    for (std::int64_t j = Reducer::lane(); j < length; j += kGroup) {
      const C d = load_compute(in, j) - shift;
      sums.sum += d;
      sums.squares += d * d;
    }
    sums = Reducer::all_reduce(storage, sums, ShiftedSumsOp<C>{});
    const C mean_of_shifted = sums.sum / static_cast<C>(length);
    const C variance = max(sums.squares / static_cast<C>(length) - mean_of_shifted * mean_of_shifted, C(0));
    const C mean = shift + mean_of_shifted;
    const C inv_std = C(1) / sqrt_of(variance + static_cast<C>(epsilon));
    for (std::int64_t j = Reducer::lane(); j < length; j += kGroup) {
      store_compute(out, j, affine(row, j, (load_compute(in, j) - mean) * inv_std));
    }
    if (Reducer::lane() == 0 && mean_out != nullptr) store_compute(mean_out, row, mean);
    if (Reducer::lane() == 0 && inv_std_out != nullptr) store_compute(inv_std_out, row, inv_std);
  }
}

constexpr int kHalvesPerVector = 8;
constexpr int kRowLanes = kWarpSize / 2;
constexpr int kMaxRowVectors = 8;  // per lane: rows of up to 8 * 8 * 16 = 1,024 halves

__device__ __forceinline__ void unpack(const uint4& word, float (&v)[kHalvesPerVector]) {
  const auto* h = reinterpret_cast<const __half2*>(&word);
  for (int i = 0; i < kHalvesPerVector / 2; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

// Half a warp per row: ViT-B's 12,608 rows of 768 at a warp each filled an H200's warp slots 1.5
// times over, the second wave half empty; at half a warp a row they fit in one, each lane with twice
// the loads in flight. The block steps through its rows together, so that both halves of a warp
// reach the shuffles of warp_sum<kRowLanes> whether or not their row exists.
template <int kVectors>
__global__ void __launch_bounds__(kBlockSize)
    layer_norm_half_rows_kernel(const __half* __restrict__ x, __half* __restrict__ y, std::int64_t rows,
                                int length, float epsilon, const __half* __restrict__ scale,
                                const __half* __restrict__ bias) {
  constexpr int kRowsPerBlock = kBlockSize / kRowLanes;
  const int lane = static_cast<int>(threadIdx.x) % kRowLanes;
  const int vectors = length / kHalvesPerVector;
  const auto* scale_v = reinterpret_cast<const uint4*>(scale);
  const auto* bias_v = reinterpret_cast<const uint4*>(bias);
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock; first < rows;
       first += static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock) {
    const std::int64_t row = first + threadIdx.x / kRowLanes;
    const int live_vectors = row < rows ? vectors : 0;
    const auto* in = reinterpret_cast<const uint4*>(x + row * length);
    float v[kVectors][kHalvesPerVector];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const int i = lane + kRowLanes * k;
      if (i < live_vectors) {
        unpack(in[i], v[k]);
      } else {
        for (float& e : v[k]) e = 0.0f;
      }
      for (float e : v[k]) sum += e;
    }
    const float mean = warp_sum<kRowLanes>(sum) / static_cast<float>(length);
    float squares = 0.0f;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      if (lane + kRowLanes * k >= live_vectors) continue;
      for (float& e : v[k]) {
        e -= mean;
        squares += e * e;
      }
    }
    const float inv_std = 1.0f / sqrtf(warp_sum<kRowLanes>(squares) / static_cast<float>(length) + epsilon);
    auto* out = reinterpret_cast<uint4*>(y + row * length);
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const int i = lane + kRowLanes * k;
      if (i >= live_vectors) continue;
      float s[kHalvesPerVector], b[kHalvesPerVector] = {};
      unpack(scale_v[i], s);
      if (bias != nullptr) unpack(bias_v[i], b);
      uint4 word;
      auto* h = reinterpret_cast<__half2*>(&word);
      for (int e = 0; e < kHalvesPerVector / 2; ++e) {
        h[e] = __floats2half2_rn(v[k][2 * e] * inv_std * s[2 * e] + b[2 * e],
                                 v[k][2 * e + 1] * inv_std * s[2 * e + 1] + b[2 * e + 1]);
      }
      out[i] = word;
    }
  }
}

// Whether layer_norm_half_rows_kernel takes these rows: whole Scale and B, 16-byte aligned rows that
// fit its registers, no Mean/InvStdDev outputs.
bool half_rows_serve(const __half* x, const __half* y, const __half* scale, const __half* bias,
                     std::int64_t length, bool direct, bool statistics) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % sizeof(uint4) == 0; };
  return direct && !statistics && length % kHalvesPerVector == 0 &&
         length <= kMaxRowVectors * kHalvesPerVector * kRowLanes && aligned(x) && aligned(y) &&
         aligned(scale) && (bias == nullptr || aligned(bias));
}

void launch_layer_norm_half_rows(const __half* x, __half* y, std::int64_t rows, std::int64_t length,
                                 float epsilon, const __half* scale, const __half* bias,
                                 cudaStream_t stream) {
  const int vectors_per_lane = static_cast<int>((length / kHalvesPerVector + kRowLanes - 1) / kRowLanes);
  const unsigned grid = grid_for(rows * kRowLanes);
  const auto n = static_cast<int>(length);
  const auto launch = [&](auto vectors) {
    layer_norm_half_rows_kernel<decltype(vectors)::value>
        <<<grid, kBlockSize, 0, stream>>>(x, y, rows, n, epsilon, scale, bias);
  };
  switch (vectors_per_lane) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 3: launch(std::integral_constant<int, 3>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    case 5: launch(std::integral_constant<int, 5>{}); break;
    case 6: launch(std::integral_constant<int, 6>{}); break;
    case 7: launch(std::integral_constant<int, 7>{}); break;
    default: launch(std::integral_constant<int, 8>{}); break;
  }
}

template <typename T, typename Affine>
void launch_normalize(const T* x, T* y, std::int64_t rows, std::int64_t length, float epsilon, Affine affine,
                      T* mean_out, T* inv_std_out, cudaStream_t stream) {
  if (block_per_row(rows, length)) {
    normalize_rows_kernel<T, Affine, kBlockSize><<<grid_for(rows * kBlockSize), kBlockSize, 0, stream>>>(
        x, y, rows, length, epsilon, affine, mean_out, inv_std_out);
  } else {
    normalize_rows_kernel<T, Affine, kWarpSize><<<grid_for(rows * kWarpSize), kBlockSize, 0, stream>>>(
        x, y, rows, length, epsilon, affine, mean_out, inv_std_out);
  }
}

Status run_instance_norm(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  const std::int64_t channels = x.dim(1);
  const std::int64_t rows = x.dim(0) * channels;
  const std::int64_t length = x.numel() / rows;
  const bool known = dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const ChannelAffine<T> affine{static_cast<const T*>(ctx.input(1).raw()),
                                  static_cast<const T*>(ctx.input(2).raw()), channels};
    launch_normalize(static_cast<const T*>(x.raw()), static_cast<T*>(ctx.output(0).raw()), rows, length,
                     epsilon, affine, static_cast<T*>(nullptr), static_cast<T*>(nullptr), ctx.stream());
  });
  if (!known) return ctx.error(StatusCode::kUnsupported, "normalizes float16, float32 and float64 only");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

struct LayerNormState final : CudaNodeState {
  std::int64_t rows = 0;
  std::int64_t length = 0;
  float epsilon = 1e-5f;
  bool direct = true;
  BroadcastIndexer<2> indexer;
};

Result<CudaPrepared> prepare_layer_norm(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis_attr, ctx.node().attr_int("axis", -1));
  auto state = std::make_unique<LayerNormState>();
  FOVEA_ASSIGN_OR_RETURN(state->epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  const std::int64_t axis = axis_attr < 0 ? axis_attr + x.rank() : axis_attr;  // checked by shape inference
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  state->length = element_count(normalized);
  state->rows = state->length == 0 ? 0 : x.numel() / state->length;
  // A parameter with as many elements as the normalized dims covers them without broadcasting.
  const Shape& scale = ctx.input(1).shape();
  const Shape& bias = ctx.has_input(2) ? ctx.input(2).shape() : scale;
  state->direct = element_count(scale) == state->length && element_count(bias) == state->length;
  if (!state->direct) {
    if (normalized.size() > static_cast<std::size_t>(kMaxRank)) {
      return ctx.error(StatusCode::kUnsupported, "broadcasts Scale and B over at most ",
                       std::to_string(kMaxRank), " normalized dims on CUDA, not ",
                       std::to_string(normalized.size()));
    }
    state->indexer = make_broadcast_indexer<2>(normalized, {&scale, &bias});
  }
  return CudaPrepared{std::move(state)};
}

Status run_layer_norm(CudaKernelContext& ctx) {
  const LayerNormState& state = ctx.state<LayerNormState>();
  if (state.rows == 0) return Status::ok();
  const Tensor& x = ctx.input(0);
  const bool known = dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto output = [&](int i) {
      return i < ctx.output_count() ? static_cast<T*>(ctx.output(i).raw()) : nullptr;
    };
    const LayerAffine<T> affine{static_cast<const T*>(ctx.input(1).raw()),
                                ctx.has_input(2) ? static_cast<const T*>(ctx.input(2).raw()) : nullptr,
                                state.direct, state.indexer};
    if constexpr (std::is_same_v<T, __half>) {
      if (half_rows_serve(static_cast<const T*>(x.raw()), output(0), affine.scale, affine.bias, state.length,
                          state.direct, ctx.output_count() > 1)) {
        launch_layer_norm_half_rows(static_cast<const T*>(x.raw()), output(0), state.rows, state.length,
                                    state.epsilon, affine.scale, affine.bias, ctx.stream());
        return;
      }
    }
    launch_normalize(static_cast<const T*>(x.raw()), output(0), state.rows, state.length, state.epsilon,
                     affine, output(1), output(2), ctx.stream());
  });
  if (!known) return ctx.error(StatusCode::kUnsupported, "normalizes float16, float32 and float64 only");
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "BatchNormalization", .run = run_batch_norm});
FOVEA_REGISTER_CUDA_OP({.domain = "fovea",
                        .op_type = "BatchNormalization",
                        .prepare = prepare_nhwc_batch_norm,
                        .run = run_nhwc_batch_norm});
FOVEA_REGISTER_CUDA_OP({.op_type = "InstanceNormalization", .run = run_instance_norm});
FOVEA_REGISTER_CUDA_OP({.op_type = "LayerNormalization",
                        .prepare = prepare_layer_norm,
                        .run = run_layer_norm});

}  // namespace fovea::runtime::cuda
