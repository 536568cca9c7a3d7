// Constant, Shape, Size, ConstantOfShape and Range on CUDA. Plans normally fold them to constants;
// when one still runs, its values are known on the host at prepare() (Range's start and delta
// excepted, which the kernel reads on the device), so run() never copies from host memory, which a
// captured run could not do from pageable memory:
//
//   Constant Shape Size  the value, copied to the device at prepare(); run() copies device to device
//   ConstantOfShape      a fill kernel taking the value by argument
//   Range                out[i] = start + i * delta, start and delta read from device memory
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/constant_util.h"

namespace fovea::runtime::cuda {
namespace {

// ---- Constant, Shape, Size: a value known at plan time ----

struct ValueState : CudaNodeState {
  DeviceMemory value;
  std::size_t bytes = 0;
};

Result<CudaPrepared> prepared_value(CudaKernelContext& ctx, const Tensor& value) {
  const Tensor& out = ctx.output(0);
  if (value.dtype() != out.dtype() || value.bytes() != out.bytes()) {
    return ctx.error(StatusCode::kInternal, "the value does not match the planned output ",
                     data_type_name(out.dtype()), " ", shape_string(out.shape()));
  }
  auto state = std::make_unique<ValueState>();
  FOVEA_ASSIGN_OR_RETURN(state->value, upload_to_device(value.raw(), value.bytes()));
  state->bytes = value.bytes();
  return CudaPrepared{.state = std::move(state)};
}

Result<CudaPrepared> prepare_constant(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const Tensor value, ops::constant_value(ctx.node()));
  return prepared_value(ctx, value);
}

Result<CudaPrepared> prepare_shape(CudaKernelContext& ctx) {
  const Shape& shape = ctx.input(0).shape();
  FOVEA_ASSIGN_OR_RETURN(const ops::DimRange range,
                         ops::shape_range(ctx.node(), static_cast<std::int64_t>(shape.size())));
  const std::vector<std::int64_t> dims(shape.begin() + range.begin, shape.begin() + range.end);
  return prepared_value(ctx, Tensor::from_vector(DataType::kInt64, {range.end - range.begin}, dims));
}

Result<CudaPrepared> prepare_size(CudaKernelContext& ctx) {
  return prepared_value(ctx, Tensor::from_vector(DataType::kInt64, {}, std::vector{ctx.input(0).numel()}));
}

Status run_value(CudaKernelContext& ctx) {
  const ValueState& state = ctx.state<ValueState>();
  if (state.bytes == 0) return Status::ok();
  FOVEA_CUDA_TRY(cudaMemcpyAsync(ctx.output(0).raw(), state.value.get(), state.bytes,
                                 cudaMemcpyDeviceToDevice, ctx.stream()));
  return Status::ok();
}

// ---- ConstantOfShape ----

template <typename T>
__global__ void fill_kernel(T* __restrict__ out, std::int64_t n, T value) {
  FOVEA_GRID_STRIDE_LOOP(i, n) out[i] = value;
}

struct FillState : CudaNodeState {
  std::array<std::byte, 8> value{};
};

Result<CudaPrepared> prepare_constant_of_shape(CudaKernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const Tensor value, ops::fill_value(ctx.node()));
  auto state = std::make_unique<FillState>();
  std::memcpy(state->value.data(), value.raw(), value.bytes());  // one element: shape inference checked
  return CudaPrepared{.state = std::move(state)};
}

// Up to 16 bytes per store: the value repeated across the vector.
Status run_constant_of_shape(CudaKernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  const std::size_t size = data_type_size(out.dtype());
  const std::int64_t k = vector_elements(size, {out.numel()}, {out.raw()});
  std::array<std::byte, 16> repeated{};
  for (std::int64_t i = 0; i < k; ++i) {
    std::memcpy(repeated.data() + i * static_cast<std::int64_t>(size), ctx.state<FillState>().value.data(),
                size);
  }
  const std::int64_t n = out.numel() / k;
  dispatch_by_bytes(size * static_cast<std::size_t>(k), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value;
    std::memcpy(&value, repeated.data(), sizeof(T));
    fill_kernel<T><<<grid_for(n), kBlockSize, 0, ctx.stream()>>>(static_cast<T*>(out.raw()), n, value);
  });
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- Range ----

// start + i * delta rather than repeated addition, as on the CPU; half computes in float.
template <typename T>
__global__ void range_kernel(T* __restrict__ out, std::int64_t n, const T* __restrict__ start,
                             const T* __restrict__ delta) {
  using C = ComputeType<T>;
  const C first = load_compute(start, 0);
  const C step = load_compute(delta, 0);
  FOVEA_GRID_STRIDE_LOOP(i, n) store_compute(out, i, static_cast<C>(first + static_cast<C>(i) * step));
}

Status run_range(CudaKernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  const bool known = dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64,
                                     DataType::kInt64, DataType::kInt32>(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    range_kernel<T><<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(
        static_cast<T*>(out.raw()), out.numel(), ctx.input(0).data<T>(), ctx.input(2).data<T>());
  });
  if (!known) return ctx.error(StatusCode::kUnsupported, "Range of ", data_type_name(out.dtype()));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Constant", .prepare = prepare_constant, .run = run_value});
FOVEA_REGISTER_CUDA_OP({.op_type = "Shape", .prepare = prepare_shape, .run = run_value});
FOVEA_REGISTER_CUDA_OP({.op_type = "Size", .prepare = prepare_size, .run = run_value});
FOVEA_REGISTER_CUDA_OP({.op_type = "ConstantOfShape",
                        .prepare = prepare_constant_of_shape,
                        .run = run_constant_of_shape});
FOVEA_REGISTER_CUDA_OP({.op_type = "Range", .run = run_range});

}  // namespace fovea::runtime::cuda
