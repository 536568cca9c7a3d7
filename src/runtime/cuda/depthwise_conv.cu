#include "runtime/cuda/depthwise_conv.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/cuda/conv_epilogue.cuh"
#include "runtime/cuda/kernel_util.cuh"

namespace fovea::runtime::cuda {

namespace {

// Outputs one thread computes along a row: the taps of neighbouring outputs overlap, so their
// input vectors are loaded once for the run (accumulate_row).
constexpr int kRun = 4;

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ void add_products(float (&acc)[V], const Pack<T, V>& x, const Pack<T, V>& w) {
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] += load_compute(x.v, i) * load_compute(w.v, i);
}

// One kernel row's taps into the run's accumulators. Generic (K == 0): each tap's input vector is
// loaded where it is needed and the overlap between neighbouring outputs comes from L1. With the
// kernel width K and stride S known at compile time (and no dilation along the row), the row's
// (kRun - 1) * S + K input vectors are loaded once into registers and every output of the run
// takes its taps from there: 10 loads instead of 28 per row for ConvNeXt's 7x7.
template <typename T, int V, int K, int S>
__device__ __forceinline__ void accumulate_row(float (&acc)[kRun][V], const T* row, const T* w_row, int first,
                                               const DepthwiseGeometry& g, int channel) {
  using P = Pack<T, V>;
  const auto input = [&](int iw) {
    return *reinterpret_cast<const P*>(row + static_cast<std::int64_t>(iw) * g.channels);
  };
  if constexpr (K == 0) {
    for (int kw = 0; kw < g.kernel_w; ++kw) {
      const P tap = *reinterpret_cast<const P*>(w_row + kw * g.channels + channel);
      const int offset = kw * g.dilation_w - g.pad_left;
#pragma unroll
      for (int r = 0; r < kRun; ++r) {
        const int iw = (first + r) * g.stride_w + offset;
        if (first + r < g.out_w && iw >= 0 && iw < g.in_w) add_products<T, V>(acc[r], input(iw), tap);
      }
    }
  } else {
    constexpr int kSpan = (kRun - 1) * S + K;
    const int base = first * S - g.pad_left;
    P in[kSpan];
#pragma unroll
    for (int j = 0; j < kSpan; ++j) {
      const int iw = base + j;
      in[j] = iw >= 0 && iw < g.in_w ? input(iw) : P{};  // outside the row: the zero padding
    }
#pragma unroll
    for (int kw = 0; kw < K; ++kw) {
      const P tap = *reinterpret_cast<const P*>(w_row + kw * g.channels + channel);
#pragma unroll
      for (int r = 0; r < kRun; ++r) add_products<T, V>(acc[r], in[r * S + kw], tap);
    }
  }
}

template <typename T, int V, int K, int S>
__global__ void depthwise_nhwc_kernel(DepthwiseOperands o, DepthwiseGeometry g, ops::Activation activation) {
  using P = Pack<T, V>;
  const int vectors = g.channels / V;
  const int runs = (g.out_w + kRun - 1) / kRun;
  const std::int64_t total = static_cast<std::int64_t>(g.batch) * g.out_h * runs * vectors;
  const T* x = static_cast<const T*>(o.x);
  const T* w = static_cast<const T*>(o.weights);
  FOVEA_GRID_STRIDE_LOOP(i, total) {
    const int vector = static_cast<int>(i % vectors);
    std::int64_t rest = i / vectors;
    const int first = static_cast<int>(rest % runs) * kRun;
    rest /= runs;
    const int oh = static_cast<int>(rest % g.out_h);
    const int n = static_cast<int>(rest / g.out_h);
    const int channel = vector * V;
    float acc[kRun][V] = {};
    for (int kh = 0; kh < g.kernel_h; ++kh) {
      const int ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
      if (ih < 0 || ih >= g.in_h) continue;
      const T* row = x + (static_cast<std::int64_t>(n) * g.in_h + ih) * g.in_w * g.channels + channel;
      accumulate_row<T, V, K, S>(acc, row, w + kh * g.kernel_w * g.channels, first, g, channel);
    }
    P bias{};
    if (o.bias != nullptr) bias = *reinterpret_cast<const P*>(static_cast<const T*>(o.bias) + channel);
#pragma unroll
    for (int r = 0; r < kRun; ++r) {
      if (first + r >= g.out_w) break;
      const std::int64_t at =
          ((static_cast<std::int64_t>(n) * g.out_h + oh) * g.out_w + first + r) * g.channels + channel;
      P residual{};
      if (o.residual != nullptr)
        residual = *reinterpret_cast<const P*>(static_cast<const T*>(o.residual) + at);
      P out;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float v = acc[r][k];
        if (o.bias != nullptr) v += load_compute(bias.v, k);
        if (o.residual != nullptr) v += load_compute(residual.v, k);
        store_compute(out.v, k, activate(v, activation));
      }
      *reinterpret_cast<P*>(static_cast<T*>(o.y) + at) = out;
    }
  }
}

bool aligned(const void* p, std::size_t bytes) {
  return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

template <typename T, int V, int K, int S>
void launch(const DepthwiseOperands& o, const DepthwiseGeometry& g, const ops::Activation& activation,
            cudaStream_t stream) {
  const std::int64_t total =
      static_cast<std::int64_t>(g.batch) * g.out_h * ((g.out_w + kRun - 1) / kRun) * (g.channels / V);
  depthwise_nhwc_kernel<T, V, K, S><<<grid_for(total), kBlockSize, 0, stream>>>(o, g, activation);
}

// The row's input in registers for the widths and strides of torchvision's depthwise layers (3x3,
// 5x5 and 7x7 at stride 1 or 2, no dilation), the generic loop for the rest.
template <typename T, int V>
void launch_for_row(const DepthwiseOperands& o, const DepthwiseGeometry& g, const ops::Activation& activation,
                    cudaStream_t stream) {
  const bool registers = g.dilation_w == 1 && (g.stride_w == 1 || g.stride_w == 2) &&
                         (g.kernel_w == 3 || g.kernel_w == 5 || g.kernel_w == 7);
  if (!registers) return launch<T, V, 0, 1>(o, g, activation, stream);
  const auto with_stride = [&]<int K>() {
    if (g.stride_w == 1) return launch<T, V, K, 1>(o, g, activation, stream);
    launch<T, V, K, 2>(o, g, activation, stream);
  };
  if (g.kernel_w == 3) return with_stride.template operator()<3>();
  if (g.kernel_w == 5) return with_stride.template operator()<5>();
  with_stride.template operator()<7>();
}

// 16-byte vectors where the channel count and every pointer allow, else one channel per thread.
template <typename T>
void launch_widest(const DepthwiseOperands& o, const DepthwiseGeometry& g, const ops::Activation& activation,
                   cudaStream_t stream) {
  constexpr int kWide = 16 / sizeof(T);
  constexpr std::size_t kBytes = 16;
  const bool wide = g.channels % kWide == 0 && aligned(o.x, kBytes) && aligned(o.weights, kBytes) &&
                    aligned(o.bias, kBytes) && aligned(o.residual, kBytes) && aligned(o.y, kBytes);
  if (wide) {
    launch_for_row<T, kWide>(o, g, activation, stream);
  } else {
    launch_for_row<T, 1>(o, g, activation, stream);
  }
}

}  // namespace

std::vector<std::byte> depthwise_weights_by_tap(const Tensor& weights) {
  const std::size_t element = data_type_size(weights.dtype());
  const std::int64_t channels = weights.dim(0);
  const std::int64_t taps = weights.numel() / channels;
  std::vector<std::byte> by_tap(static_cast<std::size_t>(weights.numel()) * element);
  const auto* source = static_cast<const std::byte*>(weights.raw());
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t t = 0; t < taps; ++t) {
      std::memcpy(by_tap.data() + static_cast<std::size_t>(t * channels + c) * element,
                  source + static_cast<std::size_t>(c * taps + t) * element, element);
    }
  }
  return by_tap;
}

Status launch_depthwise_conv(DataType dtype, const DepthwiseOperands& operands,
                             const DepthwiseGeometry& geometry, const ops::Activation& activation,
                             cudaStream_t stream) {
  if (dtype == DataType::kFloat16) {
    launch_widest<__half>(operands, geometry, activation, stream);
  } else if (dtype == DataType::kFloat32) {
    launch_widest<float>(operands, geometry, activation, stream);
  } else {
    return make_error(StatusCode::kUnsupported, "the depthwise kernel takes float32 and float16, not ",
                      std::string(data_type_name(dtype)));
  }
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
