#include "runtime/cuda/depthwise_conv.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/cuda/conv_epilogue.cuh"
#include "runtime/cuda/kernel_util.cuh"

namespace fovea::runtime::cuda {

namespace {

// Outputs one thread computes along a row: the taps of neighbouring outputs overlap, so their
// input vectors are reused from L1 within the thread's loop.
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

template <typename T, int V>
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
      for (int kw = 0; kw < g.kernel_w; ++kw) {
        const P tap = *reinterpret_cast<const P*>(w + (kh * g.kernel_w + kw) * g.channels + channel);
        const int offset = kw * g.dilation_w - g.pad_left;
#pragma unroll
        for (int r = 0; r < kRun; ++r) {
          const int iw = (first + r) * g.stride_w + offset;
          if (first + r < g.out_w && iw >= 0 && iw < g.in_w) {
            add_products<T, V>(
                acc[r], *reinterpret_cast<const P*>(row + static_cast<std::int64_t>(iw) * g.channels), tap);
          }
        }
      }
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

template <typename T, int V>
void launch(const DepthwiseOperands& o, const DepthwiseGeometry& g, const ops::Activation& activation,
            cudaStream_t stream) {
  const std::int64_t total =
      static_cast<std::int64_t>(g.batch) * g.out_h * ((g.out_w + kRun - 1) / kRun) * (g.channels / V);
  depthwise_nhwc_kernel<T, V><<<grid_for(total), kBlockSize, 0, stream>>>(o, g, activation);
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
    launch<T, kWide>(o, g, activation, stream);
  } else {
    launch<T, 1>(o, g, activation, stream);
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
