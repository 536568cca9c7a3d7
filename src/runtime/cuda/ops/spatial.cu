// RoiAlign, GridSample, LRN and MaxUnpool on CUDA, each output element computed by the CPU
// reference's functions (ops/spatial_util.h):
//
//   op          kernel
//   RoiAlign    one thread per output element (roi, channel, bin): its bin's samples in order
//   GridSample  one thread per output element
//   LRN         one thread per output element over its channel window
//   MaxUnpool   the output zeroed, then one thread per input element writing to its index
//
//   dtypes: float32/64 and float16 (computed in float); RoiAlign's batch indices and MaxUnpool's
//   indices int64
//
// A batch index or unpool index outside its range writes 0 or nothing (the CPU rejects it in
// infer()). MaxUnpool's repeated indices (which MaxPool never produces) keep any one of their
// values, where the CPU keeps the last.
#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/spatial_util.h"

namespace fovea::runtime::cuda {
namespace {

// ---- RoiAlign ----

template <typename T>
__global__ void roi_align(const T* __restrict__ x, const T* __restrict__ rois,
                          const std::int64_t* __restrict__ batch, T* __restrict__ out, ops::RoiAlignPlan plan,
                          std::int64_t batches, std::int64_t n) {
  using C = ComputeType<T>;
  const std::int64_t bins = plan.out_height * plan.out_width;
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    const std::int64_t roi = o / (plan.channels * bins);
    const std::int64_t c = (o / bins) % plan.channels;
    const std::int64_t b = batch[roi];
    if (b < 0 || b >= batches) {
      store_compute(out, o, C(0));
      continue;
    }
    const T* image = x + (b * plan.channels + c) * plan.height * plan.width;
    const C box[4] = {load_compute(rois, roi * 4), load_compute(rois, roi * 4 + 1),
                      load_compute(rois, roi * 4 + 2), load_compute(rois, roi * 4 + 3)};
    store_compute(out, o,
                  ops::roi_align_value(plan, box, (o % bins) / plan.out_width, o % plan.out_width,
                                       [&](std::int64_t offset) { return load_compute(image, offset); }));
  }
}

Status run_roi_align(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ops::RoiAlignPlan plan,
                         ops::roi_align_plan(ctx.inference(), x.shape(), rois.shape()));
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    roi_align<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(
        x.data<T>(), rois.data<T>(), ctx.input(2).data<std::int64_t>(), out.data<T>(), plan, x.dim(0),
        out.numel());
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- GridSample ----

template <typename T>
__global__ void grid_sample(const T* __restrict__ x, const T* __restrict__ grid, T* __restrict__ out,
                            ops::GridSamplePlan plan, std::int64_t n) {
  const std::int64_t pixels = plan.out_height * plan.out_width;
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    const std::int64_t nc = o / pixels;  // n * channels + c
    const std::int64_t at = ((nc / plan.channels) * pixels + o % pixels) * 2;
    const T* image = x + nc * plan.height * plan.width;
    store_compute(out, o,
                  ops::grid_sample_value(plan, load_compute(grid, at), load_compute(grid, at + 1),
                                         [&](std::int64_t offset) { return load_compute(image, offset); }));
  }
}

Status run_grid_sample(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ops::GridSamplePlan plan,
                         ops::grid_sample_plan(ctx.inference(), x.shape(), grid.shape()));
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    grid_sample<<<grid_for(out.numel()), kBlockSize, 0, ctx.stream()>>>(x.data<T>(), grid.data<T>(),
                                                                        out.data<T>(), plan, out.numel());
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- LRN ----

template <typename T>
__global__ void lrn(const T* __restrict__ x, T* __restrict__ out, ops::LrnPlan plan, std::int64_t n) {
  using C = ComputeType<T>;
  FOVEA_GRID_STRIDE_LOOP(o, n) {
    store_compute(out, o,
                  ops::lrn_value<C>(plan, o, [&](std::int64_t offset) { return load_compute(x, offset); }));
  }
}

Status run_lrn(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const ops::LrnPlan plan, ops::lrn_plan(ctx.inference(), x.shape()));
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    lrn<<<grid_for(x.numel()), kBlockSize, 0, ctx.stream()>>>(x.data<T>(), ctx.output(0).data<T>(), plan,
                                                              x.numel());
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// ---- MaxUnpool ----

template <typename T>
__global__ void max_unpool(const T* __restrict__ x, const std::int64_t* __restrict__ indices,
                           T* __restrict__ out, ops::MaxUnpoolPlan plan, std::int64_t n) {
  FOVEA_GRID_STRIDE_LOOP(i, n) {
    const std::int64_t offset = indices[i] < 0 ? -1 : ops::max_unpool_offset(plan, indices[i]);
    if (offset >= 0) out[offset] = x[i];
  }
}

Status run_max_unpool(CudaKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  FOVEA_CUDA_TRY(cudaMemsetAsync(out.raw(), 0, out.bytes(), ctx.stream()));
  if (x.numel() == 0) return Status::ok();
  // The output is planned at its final shape, so output_shape's values need not reach the host.
  FOVEA_ASSIGN_OR_RETURN(ops::MaxUnpoolPlan plan, ops::max_unpool_plan(ctx.inference(), x.shape(), nullptr));
  for (int d = 0; d < plan.rank; ++d) plan.out[d] = out.dim(d);
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_unpool<<<grid_for(x.numel()), kBlockSize, 0, ctx.stream()>>>(
        x.data<T>(), ctx.input(1).data<std::int64_t>(), out.data<T>(), plan, x.numel());
    return Status::ok();
  }));
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "RoiAlign", .run = run_roi_align});
FOVEA_REGISTER_CUDA_OP({.op_type = "GridSample", .run = run_grid_sample});
FOVEA_REGISTER_CUDA_OP({.op_type = "LRN", .run = run_lrn});
FOVEA_REGISTER_CUDA_OP({.op_type = "MaxUnpool", .run = run_max_unpool});

}  // namespace fovea::runtime::cuda
