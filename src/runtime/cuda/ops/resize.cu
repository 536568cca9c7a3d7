// Resize and Upsample on CUDA, every mode the CPU op implements (resize_util.h is the shared
// plan). prepare() computes each resized axis's taps on the host, exactly as the CPU does, and
// copies them to the device once; run() is one kernel that reads, for each output element, the
// tensor product of its axes' taps: nearest copies the one input element (any dtype, by size),
// linear and cubic sum weighted taps in float (half and float32) or double (float64). The CPU
// resamples one axis per pass instead; the sums agree to rounding. resize_planar serves the common
// case (only the last two axes resized, taps in registers), resize_interleaved the channels-last one
// (the two axes before the last resized, the last contiguous and untouched); resize_kernel any other.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/movement_util.h"
#include "runtime/ops/resize_util.h"

namespace fovea::runtime::cuda {
namespace {

using ops::Interpolation;

// One output axis. Without taps, output index c reads input index c (offset c * stride). With
// taps, output index c reads the `width` input offsets taps[c * width ...] with their weights; a
// negative first offset marks an index tf_crop_and_resize maps outside the input (extrapolation).
struct ResizeAxis {
  std::int64_t out_dim = 1;
  std::int64_t stride = 0;
  int width = 0;
  const std::int64_t* offsets = nullptr;
  const void* weights = nullptr;  // ComputeType of the element type
};

struct ResizeAxes {
  int rank = 0;
  ResizeAxis axes[kMaxRank];
};

// For each output element: the input offset of its untapped axes, and which tap row each tapped
// axis reads. kInterpolate: the weighted sum over every combination of taps; otherwise the copy of
// the one element the nearest taps pick.
template <typename T, typename Index, bool kInterpolate>
__global__ void resize_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeAxes maps, Index n,
                              ComputeType<T> extrapolation) {
  FOVEA_GRID_STRIDE_LOOP(e, n) {
    auto rest = static_cast<Index>(e);
    std::int64_t base = 0;
    int tapped[kMaxRank];
    std::int64_t row[kMaxRank];
    int taps = 0;
    bool outside = false;
    for (int d = maps.rank - 1; d >= 0; --d) {
      const ResizeAxis& a = maps.axes[d];
      const auto dim = static_cast<Index>(a.out_dim);
      const Index c = rest % dim;
      rest /= dim;
      if (a.offsets == nullptr) {
        base += static_cast<std::int64_t>(c) * a.stride;
        continue;
      }
      row[taps] = static_cast<std::int64_t>(c) * a.width;
      outside = outside || a.offsets[row[taps]] < 0;
      tapped[taps++] = d;
    }
    if constexpr (!kInterpolate) {
      for (int j = 0; j < taps; ++j) base += maps.axes[tapped[j]].offsets[row[j]];
      out[e] = outside ? extrapolation : in[base];
    } else {
      if (outside) {
        store_compute(out, e, extrapolation);
        continue;
      }
      using Acc = ComputeType<T>;
      int tap[kMaxRank] = {};
      Acc sum = 0;
      for (;;) {
        Acc weight = 1;
        std::int64_t offset = base;
        for (int j = 0; j < taps; ++j) {
          const ResizeAxis& a = maps.axes[tapped[j]];
          weight *= static_cast<const Acc*>(a.weights)[row[j] + tap[j]];
          offset += a.offsets[row[j] + tap[j]];
        }
        sum += weight * load_compute(in, offset);
        int j = 0;
        while (j < taps && ++tap[j] == maps.axes[tapped[j]].width) tap[j++] = 0;
        if (j == taps) break;
      }
      store_compute(out, e, sum);
    }
  }
}

// The common layout, every axis before the last two untouched (NCHW resized in H and W): output
// [outer, out_h, out_w] from input planes `plane` elements apart. The general kernel above keeps its
// taps in per-thread arrays indexed at run time, which live in local memory, and is bound by
// instructions: measured on an H200, a bilinear x8 float16 upsample ran at 88 GB/s. Here a thread
// owns kVec neighbouring columns: it loads their taps into registers once, then walks down the
// output rows (the grid's y dimension strides over outer * out_h rows), writing each row's kVec
// outputs with one 16-byte store. Reading the column taps once per row instead made the kernel
// bound by L1 wavefronts on the tap tables (0.3 ms for FCN's x8 logits upsample, 1/7 of copy
// bandwidth). kWidth (taps per axis: 1 nearest, 2 linear, 4 cubic; 0 for antialias's wider
// kernels, read at run time) unrolls the tap loops. An untapped axis reads index c, weight 1.
struct PlanarResize {
  std::int64_t plane = 0;
  ResizeAxis y, x;
};

// Columns per thread: one vector store of up to 16 bytes where the taps fit in registers (at most
// 8 columns of 1 or 2 taps), else 2.
template <typename T, int kWidth>
inline constexpr int kPlanarColumns =
    (kWidth == 1 || kWidth == 2) ? static_cast<int>(std::min<std::size_t>(8, kVectorBytes / sizeof(T))) : 2;

// One output index's taps along an axis, in registers: kWidth of them, or 1 (index c itself,
// weight 1) for an untapped axis.
template <int kWidth, typename Acc>
struct Taps {
  int count = 1;
  std::int64_t offset[kWidth];
  Acc weight[kWidth];
};

template <int kWidth, typename Acc>
__device__ __forceinline__ Taps<kWidth, Acc> load_taps(const ResizeAxis& a, std::int64_t c) {
  Taps<kWidth, Acc> taps;
  if (a.offsets == nullptr) {
    taps.offset[0] = c * a.stride;
    taps.weight[0] = 1;
    return taps;
  }
  taps.count = kWidth;
  const std::int64_t first = c * a.width;
#pragma unroll
  for (int t = 0; t < kWidth; ++t) {
    taps.offset[t] = a.offsets[first + t];
    if (a.weights != nullptr) taps.weight[t] = static_cast<const Acc*>(a.weights)[first + t];
  }
  return taps;
}

// The same sum for taps counted at run time (antialias widens them with the scale).
template <typename Acc, typename Read>
__device__ __forceinline__ Acc sum_taps(const ResizeAxis& a, std::int64_t c, Read&& read) {
  if (a.offsets == nullptr) return read(c * a.stride);
  const std::int64_t* offsets = a.offsets + c * a.width;
  const Acc* weights = static_cast<const Acc*>(a.weights) + c * a.width;
  Acc sum = 0;
  for (int t = 0; t < a.width; ++t) sum += weights[t] * read(offsets[t]);
  return sum;
}

template <typename T, typename Index, bool kInterpolate, int kWidth, int kVec>
__global__ void resize_planar(const T* __restrict__ in, T* __restrict__ out, PlanarResize p, Index rows,
                              bool aligned, ComputeType<T> extrapolation) {
  using Acc = ComputeType<T>;
  using Weight = std::conditional_t<kInterpolate, Acc, float>;  // nearest has none
  constexpr int kRegisterTaps = kWidth > 0 ? kWidth : 1;
  const std::int64_t out_w = p.x.out_dim;
  const auto out_h = static_cast<Index>(p.y.out_dim);
  const std::int64_t x0 = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (x0 >= out_w) return;
  const int count = out_w - x0 < kVec ? static_cast<int>(out_w - x0) : kVec;
  Taps<kRegisterTaps, Weight> columns[kVec];
  bool column_outside[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    columns[j] = load_taps<kRegisterTaps, Weight>(p.x, j < count ? x0 + j : x0);
    column_outside[j] = p.x.offsets != nullptr && columns[j].offset[0] < 0;
  }
  const bool vector_store = aligned && count == kVec;
  for (Index r = blockIdx.y; r < rows; r += gridDim.y) {
    const auto y = static_cast<std::int64_t>(r % out_h);
    const T* plane = in + static_cast<std::int64_t>(r / out_h) * p.plane;
    const auto row = load_taps<kRegisterTaps, Weight>(p.y, y);  // the first only, for kWidth 0
    const bool row_outside = p.y.offsets != nullptr && row.offset[0] < 0;
    Vector<T, kVec> result;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const bool outside = row_outside || column_outside[j];
      if constexpr (!kInterpolate) {
        result.v[j] = outside ? extrapolation : plane[row.offset[0] + columns[j].offset[0]];
      } else {
        Acc sum = 0;
        if constexpr (kWidth > 0) {
#pragma unroll
          for (int i = 0; i < kWidth; ++i) {
            if (i >= row.count) break;
            Acc line = 0;
#pragma unroll
            for (int t = 0; t < kWidth; ++t) {
              if (t >= columns[j].count) break;
              line += columns[j].weight[t] * load_compute(plane, row.offset[i] + columns[j].offset[t]);
            }
            sum += row.weight[i] * line;
          }
        } else if (j < count) {
          sum = sum_taps<Acc>(p.y, y, [&](std::int64_t r_offset) {
            return sum_taps<Acc>(p.x, x0 + j,
                                 [&](std::int64_t c) { return load_compute(plane, r_offset + c); });
          });
        }
        store_compute(result.v, j, outside ? extrapolation : sum);
      }
    }
    T* destination = out + static_cast<std::int64_t>(r) * out_w + x0;
    if (vector_store) {
      *reinterpret_cast<Vector<T, kVec>*>(destination) = result;
    } else {
      for (int j = 0; j < count; ++j) destination[j] = result.v[j];
    }
  }
}

// NHWC resized in H and W: output [outer, out_h, out_w, channels] from input images `plane`
// elements apart, the channels untouched and contiguous (what the channels-last pass makes of a
// decoder's upsampling). A thread owns kVec neighbouring channels of one output pixel: it loads the
// pixel's column taps once and walks down the output rows as resize_planar does, and each tap is one
// 16-byte load of kVec channels, so the kernel moves whole vectors where the general one reads an
// element per tap and thread.
struct InterleavedResize {
  std::int64_t plane = 0;
  std::int64_t channels = 0;
  ResizeAxis y, x;
};

template <typename T, bool kInterpolate, int kWidth>
__global__ void resize_interleaved(const T* __restrict__ in, T* __restrict__ out, InterleavedResize p,
                                   std::int64_t rows, ComputeType<T> extrapolation) {
  using Acc = ComputeType<T>;
  using Weight = std::conditional_t<kInterpolate, Acc, float>;  // nearest has none
  constexpr int kVec = static_cast<int>(kVectorBytes / sizeof(T));
  using Chunk = Vector<T, kVec>;
  const std::int64_t vectors = p.channels / kVec;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.x.out_dim * vectors) return;
  const std::int64_t x = i / vectors;
  const std::int64_t c = (i - x * vectors) * kVec;
  const auto column = load_taps<kWidth, Weight>(p.x, x);
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const std::int64_t y = r % p.y.out_dim;
    const T* image = in + r / p.y.out_dim * p.plane + c;
    const auto row = load_taps<kWidth, Weight>(p.y, y);
    Chunk result;
    if (row.offset[0] < 0 || column.offset[0] < 0) {  // tf_crop_and_resize outside the input
#pragma unroll
      for (int j = 0; j < kVec; ++j) store_compute(result.v, j, extrapolation);
    } else if constexpr (!kInterpolate) {
      result = *reinterpret_cast<const Chunk*>(image + row.offset[0] + column.offset[0]);
    } else {
      Acc sum[kVec] = {};
#pragma unroll
      for (int a = 0; a < kWidth; ++a) {
#pragma unroll
        for (int b = 0; b < kWidth; ++b) {
          const Acc weight = row.weight[a] * column.weight[b];
          const Chunk taps = *reinterpret_cast<const Chunk*>(image + row.offset[a] + column.offset[b]);
#pragma unroll
          for (int j = 0; j < kVec; ++j) sum[j] += weight * load_compute(taps.v, j);
        }
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) store_compute(result.v, j, sum[j]);
    }
    *reinterpret_cast<Chunk*>(out + (r * p.x.out_dim + x) * p.channels + c) = result;
  }
}

struct ResizeState : CudaNodeState {
  bool interpolate = false;
  bool planar = false;
  PlanarResize planar_axes;
  bool interleaved = false;  // the layout resize_interleaved takes, when the buffers allow vectors
  InterleavedResize interleaved_axes;
  int width = 0;  // taps of every tapped axis, or 0 where they differ (antialias)
  ResizeAxes maps;
  DeviceMemory tables;  // every tapped axis's offsets, then its weights (interpolation)
  double extrapolation = 0;
};

// Appends one axis's taps to `tables` (offsets as input element offsets; weights in Acc), 8-byte
// aligned, and returns where its offsets and weights start.
template <typename Acc>
std::pair<std::size_t, std::size_t> append_taps(std::vector<std::byte>& tables, const ops::AxisTaps& taps,
                                                std::int64_t stride, bool interpolate) {
  std::vector<std::int64_t> offsets(taps.index.size());
  for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] = taps.index[k] * stride;
  for (std::size_t j = 0; j < taps.outside.size(); ++j) {
    if (taps.outside[j]) offsets[j * static_cast<std::size_t>(taps.width)] = -1;
  }
  const std::size_t offsets_at = tables.size();
  tables.resize(offsets_at + offsets.size() * sizeof(std::int64_t));
  std::memcpy(tables.data() + offsets_at, offsets.data(), offsets.size() * sizeof(std::int64_t));
  const std::size_t weights_at = tables.size();
  if (interpolate) {
    const std::vector<Acc> weights(taps.weight.begin(), taps.weight.end());
    tables.resize(weights_at + (weights.size() * sizeof(Acc) + 7) / 8 * 8);
    std::memcpy(tables.data() + weights_at, weights.data(), weights.size() * sizeof(Acc));
  }
  return {offsets_at, weights_at};
}

Result<CudaPrepared> prepare_resize(CudaKernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const InferContext inference = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(const ops::ResizePlan plan, ops::resize_plan(inference, dims_of(in.shape())));
  const bool roi_on_device = ctx.node().op_type == "Resize" && ctx.opset() >= 11 && ctx.has_input(1) &&
                             ctx.input(1).numel() > 0 && ctx.host_constant(1) == nullptr;
  if (roi_on_device && plan.attributes.coordinates == ops::Coordinates::kTfCropAndResize) {
    return ctx.error(StatusCode::kUnsupported, "needs a constant 'roi' input on CUDA");
  }
  for (const ops::AxisResize& axis : plan.axes) {
    if (!axis.out.known()) {
      return ctx.error(StatusCode::kUnsupported, "needs constant 'scales' or 'sizes' inputs on CUDA");
    }
  }
  auto state = std::make_unique<ResizeState>();
  state->interpolate = plan.attributes.mode != Interpolation::kNearest;
  state->extrapolation = plan.attributes.extrapolation_value;
  const bool wide = in.dtype() == DataType::kFloat64;
  const Shape strides = contiguous_strides(in.shape());
  std::vector<std::byte> tables;
  std::vector<ResizeAxis> axes;
  std::vector<std::pair<std::size_t, std::size_t>> at;  // per axis: table positions, or {} untapped
  std::vector<bool> has_taps;
  std::vector<int> widths;  // of the tapped axes
  for (std::size_t d = 0; d < plan.axes.size(); ++d) {
    const ops::AxisResize& axis = plan.axes[d];
    const bool tapped = ops::needs_pass(axis, plan.attributes);
    // Neighbouring untapped axes read contiguously: one axis (one index division fewer).
    if (!tapped && !axes.empty() && !has_taps.back()) {
      axes.back().out_dim *= axis.out.value;
      axes.back().stride = strides[d];
      continue;
    }
    axes.push_back(ResizeAxis{.out_dim = axis.out.value, .stride = strides[d]});
    has_taps.push_back(tapped);
    at.emplace_back();
    if (!tapped) continue;
    const ops::AxisTaps taps = ops::axis_taps(axis, plan.attributes);
    axes.back().width = static_cast<int>(taps.width);
    widths.push_back(axes.back().width);
    at.back() = wide ? append_taps<double>(tables, taps, strides[d], state->interpolate)
                     : append_taps<float>(tables, taps, strides[d], state->interpolate);
  }
  if (axes.size() > static_cast<std::size_t>(kMaxRank)) {
    return ctx.error(StatusCode::kUnsupported, "needs ", std::to_string(axes.size()),
                     " dims after merging untouched ones; the CUDA kernel takes at most ",
                     std::to_string(kMaxRank));
  }
  FOVEA_ASSIGN_OR_RETURN(state->tables, upload_to_device(tables.data(), tables.size()));
  const auto* d_tables = static_cast<const std::byte*>(state->tables.get());
  state->maps.rank = static_cast<int>(axes.size());
  for (std::size_t d = 0; d < axes.size(); ++d) {
    if (has_taps[d]) {
      axes[d].offsets = reinterpret_cast<const std::int64_t*>(d_tables + at[d].first);
      axes[d].weights = state->interpolate ? d_tables + at[d].second : nullptr;
    }
    state->maps.axes[d] = axes[d];
  }
  const bool same_width =
      std::all_of(widths.begin(), widths.end(), [&](int w) { return w == widths.front(); });
  state->width = !widths.empty() && same_width ? widths.front() : 0;
  // Interleaved when the last axis is untouched and contiguous and the two before it are resized with
  // taps the kernel unrolls (fewer axes count as leading ones of size 1).
  const std::size_t r = axes.size();
  if (r >= 3 && r <= 4 && !has_taps[r - 1] && axes[r - 1].stride == 1 && has_taps[r - 2] && has_taps[r - 3] &&
      (r == 3 || !has_taps[0]) && (state->width == 1 || state->width == 2 || state->width == 4)) {
    state->interleaved = true;
    state->interleaved_axes = InterleavedResize{.plane = r == 4 ? axes[0].stride : 0,
                                                .channels = axes[r - 1].out_dim,
                                                .y = axes[r - 3],
                                                .x = axes[r - 2]};
  }
  // Planar when at most the last two axes have taps (fewer axes count as leading axes of size 1).
  while (axes.size() < 3) {
    axes.insert(axes.begin(), ResizeAxis{});
    has_taps.insert(has_taps.begin(), false);
  }
  state->planar = axes.size() == 3 && !has_taps[0];
  state->planar_axes = PlanarResize{.plane = axes[0].stride, .y = axes[1], .x = axes[2]};
  return CudaPrepared{.state = std::move(state)};
}

template <int kValue>
using Constant = std::integral_constant<int, kValue>;

// Enough blocks to fill the GPU several times over; each thread then walks rows / grid.y rows, so
// its column taps are loaded once for all of them.
constexpr unsigned kPlanarBlocks = 4096;

// The planar kernel for the state's tap width (unrolled for 1, 2 and 4).
template <typename T, typename Index, bool kInterpolate>
void launch_planar(const T* in, T* out, const ResizeState& state, Index n, ComputeType<T> extrapolation,
                   cudaStream_t stream) {
  const auto with_width = [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    constexpr int kVec = kPlanarColumns<T, kWidth>;
    const std::int64_t out_w = state.planar_axes.x.out_dim;
    const auto rows = static_cast<Index>(n / out_w);
    const std::int64_t threads = (out_w + kVec - 1) / kVec;
    const auto block = static_cast<unsigned>(std::min<std::int64_t>(128, (threads + 31) / 32 * 32));
    const auto blocks_x = static_cast<unsigned>((threads + block - 1) / block);
    const auto blocks_y = static_cast<unsigned>(
        std::clamp<std::int64_t>(kPlanarBlocks / blocks_x, 1, std::min<std::int64_t>(rows, 65535)));
    const bool aligned = out_w % kVec == 0 && reinterpret_cast<std::uintptr_t>(out) % (kVec * sizeof(T)) == 0;
    resize_planar<T, Index, kInterpolate, kWidth, kVec><<<dim3(blocks_x, blocks_y), block, 0, stream>>>(
        in, out, state.planar_axes, rows, aligned, extrapolation);
  };
  if constexpr (!kInterpolate) {
    with_width(Constant<1>{});  // nearest reads the first tap only
  } else if (state.width == 2) {
    with_width(Constant<2>{});
  } else if (state.width == 4) {
    with_width(Constant<4>{});
  } else {
    with_width(Constant<0>{});
  }
}

// The interleaved kernel, when every 16-byte vector of channels starts on a vector boundary;
// returns whether it ran.
template <typename T, bool kInterpolate>
bool launch_interleaved(const T* in, T* out, const ResizeState& state, std::int64_t n,
                        ComputeType<T> extrapolation, cudaStream_t stream) {
  const InterleavedResize& p = state.interleaved_axes;
  constexpr auto kVec = static_cast<std::int64_t>(kVectorBytes / sizeof(T));
  if (!state.interleaved || p.channels % kVec != 0 || p.plane % kVec != 0 ||
      vector_elements(sizeof(T), {}, {in, out}) != kVec)
    return false;
  const auto with_width = [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    const std::int64_t threads = p.x.out_dim * (p.channels / kVec);
    const std::int64_t rows = n / (p.x.out_dim * p.channels);
    const auto block = static_cast<unsigned>(std::min<std::int64_t>(128, (threads + 31) / 32 * 32));
    const auto blocks_x = static_cast<unsigned>((threads + block - 1) / block);
    const auto blocks_y = static_cast<unsigned>(
        std::clamp<std::int64_t>(kPlanarBlocks / blocks_x, 1, std::min<std::int64_t>(rows, 65535)));
    resize_interleaved<T, kInterpolate, kWidth>
        <<<dim3(blocks_x, blocks_y), block, 0, stream>>>(in, out, p, rows, extrapolation);
  };
  if constexpr (!kInterpolate) {
    with_width(Constant<1>{});
  } else if (state.width == 2) {
    with_width(Constant<2>{});
  } else {
    with_width(Constant<4>{});
  }
  return true;
}

template <typename T, bool kInterpolate>
void launch_resize(const Tensor& in, Tensor& out, const ResizeState& state, ComputeType<T> extrapolation,
                   cudaStream_t stream) {
  const std::int64_t n = out.numel();
  if (launch_interleaved<T, kInterpolate>(static_cast<const T*>(in.raw()), static_cast<T*>(out.raw()), state,
                                          n, extrapolation, stream))
    return;
  dispatch_index(std::max(n, in.numel()), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const auto* src = static_cast<const T*>(in.raw());
    auto* dst = static_cast<T*>(out.raw());
    if (state.planar) {
      launch_planar<T, Index, kInterpolate>(src, dst, state, static_cast<Index>(n), extrapolation, stream);
    } else {
      resize_kernel<T, Index, kInterpolate><<<grid_for(n), kBlockSize, 0, stream>>>(
          src, dst, state.maps, static_cast<Index>(n), extrapolation);
    }
  });
}

Status run_resize(CudaKernelContext& ctx) {
  const ResizeState& state = ctx.state<ResizeState>();
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  if (state.interpolate) {
    const bool known = dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(
        in.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          launch_resize<T, true>(in, out, state, static_cast<ComputeType<T>>(state.extrapolation),
                                 ctx.stream());
        });
    if (!known) return ctx.error(StatusCode::kUnsupported, "interpolates float16, float32 and float64 only");
  } else {
    const std::array<std::byte, 8> fill = ops::element_bytes(in.dtype(), state.extrapolation);
    dispatch_by_bytes(data_type_size(in.dtype()), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T value;
      std::memcpy(&value, fill.data(), sizeof(T));
      launch_resize<T, false>(in, out, state, value, ctx.stream());
    });
  }
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Resize", .prepare = prepare_resize, .run = run_resize});
FOVEA_REGISTER_CUDA_OP({.op_type = "Upsample", .prepare = prepare_resize, .run = run_resize});

}  // namespace fovea::runtime::cuda
