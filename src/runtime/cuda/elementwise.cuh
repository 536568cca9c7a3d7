// The one kernel behind every pointwise op on CUDA (arithmetic, activations, comparisons, logic,
// Where, Cast): out[i] = op(in_0[...], ..., in_k[...]) with numpy broadcasting. An op is a functor
// on compute values (float for float16 storage, see kernel_util.cuh) and a registration line.
//
// Paths, chosen on the host from elementwise_layout():
//   flat     every input has the output's shape or is a scalar: one grid-stride loop over 16-byte
//            vectors, no index arithmetic (residual Add, activations, Cast, x * 0.5).
//   chunked  anything else whose innermost dim is a multiple of the vector width: one broadcast
//            index decomposition per vector, inputs broadcast along the innermost dim read one
//            scalar (a per-channel [C, 1, 1] bias over [N, C, H, W] is [N, C, H*W] here).
//   scalar   the rest (odd innermost dims, misaligned views): one decomposition per element.
#pragma once

#include <cuda/std/limits>
#include <cuda/std/tuple>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "core/cuda_check.h"
#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/elementwise_layout.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/integer_math.h"
#include "runtime/ops/op_util.h"

namespace fovea::runtime::cuda {

template <typename Out, typename... In>
struct ElementwiseArgs {
  static constexpr int kInputs = sizeof...(In);
  Out* out = nullptr;
  ::cuda::std::tuple<const In*...> in;
  std::int64_t n = 0;       // output elements
  std::int64_t chunks = 0;  // vectors of V elements (the flat path does the n % V tail apart)
  // Each input's stride along the innermost dim: 1, or 0 where it is broadcast (a scalar).
  std::int64_t inner_stride[kInputs] = {};
  // Chunked and scalar paths: each input's offset of the first element of chunk c.
  BroadcastIndexer<kInputs> chunk_indexer;
};

// V elements of one input from `p`: one vector load, or one scalar repeated when the input is
// broadcast along the innermost dim.
template <int V, typename T>
__device__ __forceinline__ Vector<T, V> load_chunk(const T* p, std::int64_t stride) {
  if (stride != 0) return *reinterpret_cast<const Vector<T, V>*>(p);
  Vector<T, V> x;
  const T value = *p;
#pragma unroll
  for (int e = 0; e < V; ++e) x.v[e] = value;
  return x;
}

template <int V, typename Op, typename Out, typename... In, std::size_t... K>
__device__ __forceinline__ void compute_chunk(const ElementwiseArgs<Out, In...>& args, const Op& op,
                                              std::int64_t out_index,
                                              const std::int64_t (&offsets)[sizeof...(In)],
                                              std::index_sequence<K...>) {
  const ::cuda::std::tuple<Vector<In, V>...> values{
      load_chunk<V>(::cuda::std::get<K>(args.in) + offsets[K], args.inner_stride[K])...};
  Vector<Out, V> result;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    store_compute(result.v, e, op(load_compute(::cuda::std::get<K>(values).v, e)...));
  }
  *reinterpret_cast<Vector<Out, V>*>(args.out + out_index) = result;
}

template <int V, bool kFlat, typename Op, typename Out, typename... In>
__global__ void __launch_bounds__(kBlockSize) elementwise_kernel(ElementwiseArgs<Out, In...> args, Op op) {
  constexpr int kInputs = sizeof...(In);
  std::int64_t offsets[kInputs];
  FOVEA_GRID_STRIDE_LOOP(c, args.chunks) {
    if constexpr (kFlat) {
#pragma unroll
      for (int k = 0; k < kInputs; ++k) offsets[k] = c * V * args.inner_stride[k];
    } else {
      args.chunk_indexer.offsets(c, offsets);
    }
    compute_chunk<V>(args, op, c * V, offsets, std::index_sequence_for<In...>{});
  }
  if constexpr (kFlat) {
    // The last n % V elements, one per thread of the first block.
    const std::int64_t i = args.chunks * V + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < args.n) {
#pragma unroll
      for (int k = 0; k < kInputs; ++k) offsets[k] = i * args.inner_stride[k];
      compute_chunk<1>(args, op, i, offsets, std::index_sequence_for<In...>{});
    }
  }
}

// The broadcast indexer over chunks of v elements along the layout's innermost dim.
template <int kInputs>
BroadcastIndexer<kInputs> chunk_indexer(const ElementwiseLayout& layout, std::int64_t v) {
  BroadcastIndexer<kInputs> indexer;
  indexer.rank = static_cast<int>(layout.dims.size());
  const int inner = indexer.rank - 1;
  for (int d = 0; d < indexer.rank; ++d) {
    const auto sd = static_cast<std::size_t>(d);
    indexer.out_dims[d] = d == inner ? layout.dims[sd] / v : layout.dims[sd];
    for (int k = 0; k < kInputs; ++k) {
      const std::int64_t stride = layout.strides[static_cast<std::size_t>(k)][sd];
      indexer.in_strides[k][d] = d == inner ? stride * v : stride;
    }
  }
  return indexer;
}

// out = op(in...) elementwise, `in` broadcast to out's shape. Out and In are device storage types
// (element types of out and in); op maps ComputeType<In>... to a value store_compute turns into
// Out. An input may alias out when it has out's shape (the variadic ops fold in place).
template <typename Out, typename... In, typename Op>
Status launch_elementwise(CudaKernelContext& ctx, const Op& op, Tensor& out,
                          const std::conditional_t<true, Tensor, In>&... in) {
  constexpr int kInputs = sizeof...(In);
  constexpr int kV = static_cast<int>(kVectorBytes / std::max({sizeof(Out), sizeof(In)...}));
  ElementwiseArgs<Out, In...> args;
  args.n = out.numel();
  if (args.n == 0) return Status::ok();
  args.out = out.data<Out>();
  args.in = ::cuda::std::tuple<const In*...>{in.template data<In>()...};
  const ElementwiseLayout layout = elementwise_layout(out.shape(), {in.shape()...});
  const int rank = static_cast<int>(layout.dims.size());
  for (int k = 0; k < kInputs; ++k) args.inner_stride[k] = layout.strides[static_cast<std::size_t>(k)].back();
  // Vector accesses need every pointer they touch aligned to the vector's bytes.
  bool aligned = aligned_to(args.out, kV * sizeof(Out));
  int k = 0;
  ((aligned = aligned && (args.inner_stride[k++] == 0 || aligned_to(in.raw(), kV * sizeof(In)))), ...);

  if (rank == 1 && aligned) {
    args.chunks = args.n / kV;
    elementwise_kernel<kV, true><<<grid_for(args.chunks), kBlockSize, 0, ctx.stream()>>>(args, op);
  } else {
    if (rank > kMaxRank) {
      return ctx.error(StatusCode::kUnsupported, "broadcasting ", shape_string(out.shape()), " needs ",
                       std::to_string(rank), " dims after merging; CUDA kernels index at most ",
                       std::to_string(kMaxRank));
    }
    const bool vectors = aligned && layout.dims.back() % kV == 0;
    args.chunks = vectors ? args.n / kV : args.n;
    args.chunk_indexer = chunk_indexer<kInputs>(layout, vectors ? kV : 1);
    if (vectors) {
      elementwise_kernel<kV, false><<<grid_for(args.chunks), kBlockSize, 0, ctx.stream()>>>(args, op);
    } else {
      elementwise_kernel<1, false><<<grid_for(args.chunks), kBlockSize, 0, ctx.stream()>>>(args, op);
    }
  }
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// The dtype groups of the CPU ops (ops/op_util.h), plus float16: in a float16 plan every float op
// gets float16 tensors, which the reference widens to float32 and CUDA computes in float.
#define FOVEA_CUDA_FLOAT_TYPES \
  ::fovea::DataType::kFloat32, ::fovea::DataType::kFloat64, ::fovea::DataType::kFloat16
#define FOVEA_CUDA_NUMERIC_TYPES FOVEA_CUDA_FLOAT_TYPES, FOVEA_INT_TYPES
#define FOVEA_CUDA_SIGNED_TYPES \
  FOVEA_CUDA_FLOAT_TYPES, ::fovea::DataType::kInt64, ::fovea::DataType::kInt32, ::fovea::DataType::kInt8

// Calls f(DeviceTypeTag<T>{}) -> Status for `dtype` among Ds; an error naming the dtype otherwise.
template <DataType... Ds, typename F>
Status dispatch_elementwise(const CudaKernelContext& ctx, DataType dtype, F&& f) {
  Status status;
  // The cast: nvcc flags the discarded result of operator= on a [[nodiscard]] type.
  if (!dispatch_device<Ds...>(dtype, [&](auto tag) { static_cast<void>(status = f(tag)); })) {
    return ctx.error(StatusCode::kUnsupported, "no CUDA kernel for ", data_type_name(dtype), " inputs");
  }
  return status;
}

// An op functor built from the node's attributes when it has any (Op::make), else default.
template <typename Op>
Result<Op> make_device_op(const Node& node) {
  if constexpr (requires { Op::make(node); }) {
    return Op::make(node);
  } else {
    return Op{};
  }
}

// y = op(x), y of x's dtype, x in Ds.
template <typename Op, DataType... Ds>
Status run_unary(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const Op op, make_device_op<Op>(ctx.node()));
  return dispatch_elementwise<Ds...>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<T, T>(ctx, op, ctx.output(0), ctx.input(0));
  });
}

// c = op(a, b), a and b of one dtype in Ds; c of that dtype, or bool when op returns bool.
template <typename Op, DataType... Ds>
Status run_binary(CudaKernelContext& ctx) {
  return dispatch_elementwise<Ds...>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    using Out = std::conditional_t<std::is_same_v<std::invoke_result_t<Op, C, C>, bool>, bool, T>;
    return launch_elementwise<Out, T, T>(ctx, Op{}, ctx.output(0), ctx.input(0), ctx.input(1));
  });
}

// Device arithmetic with the CPU reference's semantics (ops/elementwise_util.h).

template <typename T>
__device__ __forceinline__ bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return isnan(x);
  } else {
    return false;
  }
}

// Floating to integer as Cast defines it: truncation toward zero, saturating at T's range, NaN 0.
template <typename T, typename F>
__device__ __forceinline__ T saturate_cast(F value) {
  if (isnan(value)) return T{0};
  // The limits as F, exactly: lowest() is -2^k (exact) and max()+1 is 2^k (exact).
  const F low = static_cast<F>(::cuda::std::numeric_limits<T>::lowest());
  const F high = static_cast<F>(::cuda::std::numeric_limits<T>::max() / 2 + 1) * F{2};
  if (value <= low) return ::cuda::std::numeric_limits<T>::lowest();
  if (value >= high) return ::cuda::std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

}  // namespace fovea::runtime::cuda
