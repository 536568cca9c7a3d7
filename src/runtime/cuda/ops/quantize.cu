// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on CUDA, with the CPU reference's
// layout and per-element arithmetic (ops/quantize_util.h), so that integer outputs are the same bit
// for bit:
//
//   QuantizeLinear, DequantizeLinear  one grid-stride loop; element i reads the scale and zero point
//                                     at layout.scale_index(i) (per tensor, per axis, blocked)
//   DynamicQuantizeLinear             three launches, no host round trip: each block's range of x
//                                     into the workspace (a block reduction, group_reduce.cuh); one
//                                     block folds the ranges into the scale and zero point (outputs 1
//                                     and 2, and the float32 scale in the workspace, which y uses
//                                     even when output 1 is float16, as on the CPU); then
//                                     QuantizeLinear's loop, per tensor
//
//   dtypes: x float32 / float16; scales float32 / float16 (QuantizeLinear's stays float32 in a
//   float16 plan); quantized int8 / uint8, DequantizeLinear's x also int32. Arithmetic in float.
#include "runtime/cuda/elementwise.cuh"
#include "runtime/cuda/group_reduce.cuh"
#include "runtime/ops/quantize_util.h"

namespace fovea::runtime::cuda {
namespace {

using ops::QuantLayout;
using ops::QuantRange;

#define FOVEA_CUDA_QUANT_FLOAT_TYPES ::fovea::DataType::kFloat32, ::fovea::DataType::kFloat16
#define FOVEA_CUDA_QUANTIZED_TYPES ::fovea::DataType::kInt8, ::fovea::DataType::kUInt8
// DequantizeLinear's x: the quantized types and int32 (a bias).
#define FOVEA_CUDA_DEQUANTIZE_TYPES FOVEA_CUDA_QUANTIZED_TYPES, ::fovea::DataType::kInt32

constexpr int kScaleInput = 1;
constexpr int kZeroPointInput = 2;

// `zero_point` nullptr: zero point 0.
template <typename T, typename S, typename Q>
__global__ void __launch_bounds__(kBlockSize)
    quantize(const T* __restrict__ x, std::int64_t count, const S* __restrict__ scale,
             const Q* __restrict__ zero_point, QuantLayout layout, Q* __restrict__ y) {
  FOVEA_GRID_STRIDE_LOOP(i, count) {
    const std::int64_t s = layout.scale_index(i);
    y[i] = ops::quantize_value(static_cast<float>(load_compute(x, i)),
                               static_cast<float>(load_compute(scale, s)),
                               zero_point != nullptr ? zero_point[s] : Q{0});
  }
}

// QuantizeLinear per tensor over whole vectors of kQuantVector elements: 16- or 32-byte loads and
// 8-byte stores, the scale and zero point read once. The int8 plans quantize each block's output
// this way (a ResNet-50 at batch 256 spent 3 ms a batch in the element-wise loop above, call 34).
constexpr int kQuantVector = 8;

template <typename T, typename S, typename Q>
__global__ void __launch_bounds__(kBlockSize)
    quantize_per_tensor(const Vector<T, kQuantVector>* __restrict__ x, std::int64_t vectors,
                        const S* __restrict__ scale, const Q* __restrict__ zero_point,
                        Vector<Q, kQuantVector>* __restrict__ y) {
  const float s = static_cast<float>(load_compute(scale, 0));
  const Q z = zero_point != nullptr ? zero_point[0] : Q{0};
  FOVEA_GRID_STRIDE_LOOP(i, vectors) {
    const Vector<T, kQuantVector> in = x[i];
    Vector<Q, kQuantVector> out;
#pragma unroll
    for (int e = 0; e < kQuantVector; ++e)
      out.v[e] = ops::quantize_value(static_cast<float>(load_compute(in.v, e)), s, z);
    y[i] = out;
  }
}

// y has the scale's type S.
template <typename X, typename S>
__global__ void __launch_bounds__(kBlockSize)
    dequantize(const X* __restrict__ x, std::int64_t count, const S* __restrict__ scale,
               const X* __restrict__ zero_point, QuantLayout layout, S* __restrict__ y) {
  FOVEA_GRID_STRIDE_LOOP(i, count) {
    const std::int64_t s = layout.scale_index(i);
    store_compute(y, i,
                  ops::dequantize_value(x[i], zero_point != nullptr ? zero_point[s] : X{0},
                                        static_cast<float>(load_compute(scale, s))));
  }
}

struct MergeRanges {
  __device__ QuantRange operator()(QuantRange a, QuantRange b) const { return ops::merge_ranges(a, b); }
};

using BlockReducer = GroupReducer<QuantRange, kBlockSize, kBlockSize>;

// One range per block of the grid.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    block_ranges(const T* __restrict__ x, std::int64_t count, QuantRange* __restrict__ ranges) {
  QuantRange mine = ops::zero_range();
  FOVEA_GRID_STRIDE_LOOP(i, count) mine = ops::widen_range(mine, static_cast<float>(load_compute(x, i)));
  __shared__ BlockReducer::TempStorage storage;
  const QuantRange block = BlockReducer::reduce(storage, mine, MergeRanges{});
  if (threadIdx.x == 0) ranges[blockIdx.x] = block;
}

// One block: the ranges folded into the scale (`scale` in float32 for y, `scale_out` in x's type)
// and the zero point.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    finish_range(const QuantRange* __restrict__ ranges, unsigned count, float* __restrict__ scale,
                 T* __restrict__ scale_out, std::uint8_t* __restrict__ zero_point) {
  QuantRange mine = ops::zero_range();
  for (unsigned b = threadIdx.x; b < count; b += blockDim.x) mine = ops::merge_ranges(mine, ranges[b]);
  __shared__ BlockReducer::TempStorage storage;
  const QuantRange total = BlockReducer::reduce(storage, mine, MergeRanges{});
  if (threadIdx.x != 0) return;
  const ops::DynamicQuantParams params = ops::dynamic_quant_params(total);
  *scale = params.scale;
  store_compute(scale_out, 0, params.scale);
  *zero_point = params.zero_point;
}

template <typename T, typename S, typename Q>
void launch_quantize(const CudaKernelContext& ctx, const Tensor& x, const S* scale, const Q* zero_point,
                     const QuantLayout& layout, Tensor& y) {
  using In = Vector<T, kQuantVector>;
  using Out = Vector<Q, kQuantVector>;
  if (layout.mode == ops::QuantMode::kPerTensor && x.numel() % kQuantVector == 0 &&
      aligned_to(x.raw(), sizeof(In)) && aligned_to(y.raw(), sizeof(Out))) {
    const std::int64_t vectors = x.numel() / kQuantVector;
    quantize_per_tensor<T, S, Q><<<grid_for(vectors), kBlockSize, 0, ctx.stream()>>>(
        static_cast<const In*>(x.raw()), vectors, scale, zero_point, static_cast<Out*>(y.raw()));
    return;
  }
  quantize<T, S, Q><<<grid_for(x.numel()), kBlockSize, 0, ctx.stream()>>>(x.data<T>(), x.numel(), scale,
                                                                          zero_point, layout, y.data<Q>());
}

Status run_quantize(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const QuantLayout layout, ops::quant_layout(ctx.inference()));
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(kScaleInput);
  Tensor& y = ctx.output(0);
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_QUANT_FLOAT_TYPES>(ctx, x.dtype(), [&](auto x_tag) {
    using T = typename decltype(x_tag)::type;
    return dispatch_elementwise<FOVEA_CUDA_QUANT_FLOAT_TYPES>(ctx, scale.dtype(), [&](auto scale_tag) {
      using S = typename decltype(scale_tag)::type;
      return dispatch_elementwise<FOVEA_CUDA_QUANTIZED_TYPES>(ctx, y.dtype(), [&](auto q_tag) {
        using Q = typename decltype(q_tag)::type;
        const Q* zero_point = ctx.has_input(kZeroPointInput) ? ctx.input(kZeroPointInput).data<Q>() : nullptr;
        launch_quantize<T>(ctx, x, scale.data<S>(), zero_point, layout, y);
        return Status::ok();
      });
    });
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status run_dequantize(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const QuantLayout layout, ops::quant_layout(ctx.inference()));
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(kScaleInput);
  Tensor& y = ctx.output(0);
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_DEQUANTIZE_TYPES>(ctx, x.dtype(), [&](auto x_tag) {
    using X = typename decltype(x_tag)::type;
    const X* zero_point = ctx.has_input(kZeroPointInput) ? ctx.input(kZeroPointInput).data<X>() : nullptr;
    return dispatch_elementwise<FOVEA_CUDA_QUANT_FLOAT_TYPES>(ctx, scale.dtype(), [&](auto scale_tag) {
      using S = typename decltype(scale_tag)::type;
      dequantize<X, S><<<grid_for(x.numel()), kBlockSize, 0, ctx.stream()>>>(
          x.data<X>(), x.numel(), scale.data<S>(), zero_point, layout, y.data<S>());
      return Status::ok();
    });
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

struct DynamicQuantizeState final : CudaNodeState {
  unsigned blocks = 1;  // of block_ranges, one range each in the workspace
};

// The workspace: the blocks' ranges, then the float32 scale.
Result<CudaPrepared> prepare_dynamic_quantize(CudaKernelContext& ctx) {
  auto state = std::make_unique<DynamicQuantizeState>();
  state->blocks = grid_for(ctx.input(0).numel());
  const std::size_t workspace = state->blocks * sizeof(QuantRange) + sizeof(float);
  return CudaPrepared{std::move(state), workspace};
}

Status run_dynamic_quantize(CudaKernelContext& ctx) {
  const unsigned blocks = ctx.state<DynamicQuantizeState>().blocks;
  auto* ranges = static_cast<QuantRange*>(ctx.workspace());
  auto* scale = reinterpret_cast<float*>(ranges + blocks);
  const Tensor& x = ctx.input(0);
  auto* zero_point = ctx.output(2).data<std::uint8_t>();
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_QUANT_FLOAT_TYPES>(ctx, x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    block_ranges<T><<<blocks, kBlockSize, 0, ctx.stream()>>>(x.data<T>(), x.numel(), ranges);
    FOVEA_CUDA_TRY_LAUNCH();
    // Output 1 has x's type: float16 in a float16 plan.
    finish_range<T>
        <<<1, kBlockSize, 0, ctx.stream()>>>(ranges, blocks, scale, ctx.output(1).data<T>(), zero_point);
    FOVEA_CUDA_TRY_LAUNCH();
    launch_quantize<T>(ctx, x, static_cast<const float*>(scale), static_cast<const std::uint8_t*>(zero_point),
                       QuantLayout{}, ctx.output(0));
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "QuantizeLinear", .run = run_quantize});
FOVEA_REGISTER_CUDA_OP({.op_type = "DequantizeLinear", .run = run_dequantize});
FOVEA_REGISTER_CUDA_OP({.op_type = "DynamicQuantizeLinear",
                        .prepare = prepare_dynamic_quantize,
                        .run = run_dynamic_quantize});

}  // namespace fovea::runtime::cuda
