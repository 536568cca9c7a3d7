// RoiAlign, GridSample, LRN and MaxUnpool on the CPU: the reference loops over output elements,
// each computed by spatial_util.h's functions, which the CUDA kernels (cuda/ops/spatial.cu) share.
//
//   op          dtypes                               inputs
//   RoiAlign    float32/64 (float16 via float32)     X, rois [R, 4], batch_indices int64 [R]
//   GridSample  float32/64 (float16 via float32)     X 4-D, grid [N, H_out, W_out, 2] of X's dtype
//   LRN         float32/64 (float16 via float32)     X [N, C, ...]
//   MaxUnpool   float32/64 (float16 via float32)     X, I int64 (MaxPool's indices), output_shape
//
// Batch indices and MaxUnpool's indices are checked against their range in infer() once their
// values are known, which at run time they are.
#include <cstring>

#include <fmt/format.h>

#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/movement_util.h"
#include "runtime/ops/spatial_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

std::optional<Shape> known_shape(const InferContext& ctx, int i) {
  const Dims* dims = ctx.input_dims(i);
  if (dims == nullptr || !all_known(*dims)) return std::nullopt;
  return shape_of(*dims);
}

// Every value of the integer tensor `indices` is in [0, limit).
Status check_range(const InferContext& ctx, const Tensor& indices, std::int64_t limit, const char* what) {
  for (std::int64_t i = 0; i < indices.numel(); ++i) {
    const std::int64_t index = integer_at(indices, i);
    if (index < 0 || index >= limit) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("{} {} is outside [0, {})", what, index, limit));
    }
  }
  return Status::ok();
}

// ---- RoiAlign ----

// Output elements per parallel chunk: each one is a few bilinear samples.
constexpr std::int64_t kRoiAlignChunk = 2048;

Status infer_roi_align(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  FOVEA_TRY(ctx.require_dtype(2, {DataType::kInt64}));
  FOVEA_TRY(ctx.require_rank(0, 4, 4));
  FOVEA_TRY(ctx.require_rank(1, 2, 2));
  const std::optional<Shape> x = known_shape(ctx, 0);
  const std::optional<Shape> rois = known_shape(ctx, 1);
  if (!x || !rois) {
    const Dim rows = ctx.input_dims(1) != nullptr ? (*ctx.input_dims(1))[0] : Dim::unknown();
    ctx.set_output(0, ctx.input_dtype(0), Dims{rows, Dim::unknown(), Dim::unknown(), Dim::unknown()});
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const RoiAlignPlan plan, roi_align_plan(ctx, *x, *rois));
  if (const Tensor* batch = ctx.input_value(2)) {
    if (batch->numel() != (*rois)[0]) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("{} batch indices for {} rois", batch->numel(), (*rois)[0]));
    }
    FOVEA_TRY(check_range(ctx, *batch, (*x)[0], "batch index"));
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape{(*rois)[0], plan.channels, plan.out_height, plan.out_width});
  return Status::ok();
}

Status run_roi_align(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const auto* batch = ctx.input(2).data<std::int64_t>();
  FOVEA_ASSIGN_OR_RETURN(const RoiAlignPlan plan, roi_align_plan(ctx.inference(), x.shape(), rois.shape()));
  FloatTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    const std::int64_t plane = plan.height * plan.width;
    const std::int64_t bins = plan.out_height * plan.out_width;
    // Each output element on its own (detectors pool thousands of boxes over 256 channels).
    parallel_for(ctx.output(0).numel(), kRoiAlignChunk, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t o = begin; o < end; ++o) {
        const std::int64_t roi = o / (plan.channels * bins);
        const std::int64_t c = (o / bins) % plan.channels;
        const T* image = in + (batch[roi] * plan.channels + c) * plane;
        const T* box = rois.data<T>() + roi * 4;
        out[o] = roi_align_value(plan, box, (o % bins) / plan.out_width, o % plan.out_width,
                                 [&](std::int64_t offset) { return image[offset]; });
      }
    });
  });
  return Status::ok();
}

// ---- GridSample ----

Status infer_grid_sample(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  FOVEA_TRY(ctx.require_rank(0, 4, 4));
  FOVEA_TRY(ctx.require_rank(1, 4, 4));
  const std::optional<Shape> x = known_shape(ctx, 0);
  const std::optional<Shape> grid = known_shape(ctx, 1);
  if (!x || !grid) {
    ctx.set_output(0, ctx.input_dtype(0), Dims(4, Dim::unknown()));
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const GridSamplePlan plan, grid_sample_plan(ctx, *x, *grid));
  ctx.set_output(0, ctx.input_dtype(0), Shape{(*x)[0], plan.channels, plan.out_height, plan.out_width});
  return Status::ok();
}

Status run_grid_sample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  FOVEA_ASSIGN_OR_RETURN(const GridSamplePlan plan,
                         grid_sample_plan(ctx.inference(), x.shape(), grid.shape()));
  FloatTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    const T* g = grid.data<T>();
    T* out = ctx.output(0).data<T>();
    const std::int64_t pixels = plan.out_height * plan.out_width;
    for (std::int64_t o = 0; o < ctx.output(0).numel(); ++o) {
      const std::int64_t nc = o / pixels;  // n * channels + c
      const T* at = g + ((nc / plan.channels) * pixels + o % pixels) * 2;
      const T* image = in + nc * plan.height * plan.width;
      out[o] = grid_sample_value(plan, at[0], at[1], [&](std::int64_t offset) { return image[offset]; });
    }
  });
  return Status::ok();
}

// ---- LRN ----

Status infer_lrn(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_rank(0, 3, kMaxTensorRank));
  if (const std::optional<Shape> x = known_shape(ctx, 0)) FOVEA_TRY(lrn_plan(ctx, *x).status());
  return infer_same_as_input(ctx);
}

Status run_lrn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const LrnPlan plan, lrn_plan(ctx.inference(), x.shape()));
  FloatTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    for (std::int64_t o = 0; o < x.numel(); ++o) {
      out[o] = lrn_value<T>(plan, o, [&](std::int64_t offset) { return in[offset]; });
    }
  });
  return Status::ok();
}

// ---- MaxUnpool ----

Status infer_max_unpool(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kInt64}));
  FOVEA_TRY(ctx.require_rank(0, 3, kMaxTensorRank));
  if (ctx.has_input(2)) FOVEA_TRY(ctx.require_dtype(2, {DataType::kInt64}));
  const std::optional<Shape> x = known_shape(ctx, 0);
  const std::optional<Shape> indices = known_shape(ctx, 1);
  if (x && indices && *x != *indices) {
    return ctx.error(StatusCode::kInvalidArgument, "indices of shape ", shape_string(*indices),
                     " differ from X of shape ", shape_string(*x));
  }
  const Tensor* output_shape = ctx.has_input(2) ? ctx.input_value(2) : nullptr;
  if (!x || (ctx.has_input(2) && output_shape == nullptr)) {
    const Dims* dims = ctx.input_dims(0);
    ctx.set_output(0, ctx.input_dtype(0),
                   dims == nullptr ? std::nullopt : std::optional<Dims>(Dims(dims->size(), Dim::unknown())));
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const MaxUnpoolPlan plan, max_unpool_plan(ctx, *x, output_shape));
  if (const Tensor* values = ctx.input_value(1)) {
    FOVEA_TRY(
        check_range(ctx, *values, element_count(Shape(plan.unpooled, plan.unpooled + plan.rank)), "index"));
  }
  ctx.set_output(0, ctx.input_dtype(0), max_unpool_output_shape(plan));
  return Status::ok();
}

Status run_max_unpool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto* indices = ctx.input(1).data<std::int64_t>();
  Tensor& out = ctx.output(0);
  FOVEA_ASSIGN_OR_RETURN(
      const MaxUnpoolPlan plan,
      max_unpool_plan(ctx.inference(), x.shape(), ctx.has_input(2) ? &ctx.input(2) : nullptr));
  std::memset(out.raw(), 0, out.bytes());
  FloatTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < x.numel(); ++i) o[max_unpool_offset(plan, indices[i])] = in[i];
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "RoiAlign",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_roi_align,
                   .run = run_roi_align});
FOVEA_REGISTER_OP({.op_type = "GridSample",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_grid_sample,
                   .run = run_grid_sample});
FOVEA_REGISTER_OP({.op_type = "LRN", .infer = infer_lrn, .run = run_lrn});
FOVEA_REGISTER_OP({.op_type = "MaxUnpool",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_max_unpool,
                   .run = run_max_unpool,
                   .flops = no_flops});

}  // namespace fovea::runtime::ops
