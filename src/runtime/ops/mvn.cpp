// MeanVarianceNormalization on the CPU (opsets 9 and 13): mvn_util.h states the arithmetic, which
// the CUDA kernel shares. float32/64 (float16 via float32); the mean and variance accumulate in
// double.
#include <math.h>

#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/mvn_util.h"

namespace fovea::runtime::ops {

Result<MvnPlan> mvn_plan(const InferContext& ctx, const Shape& shape) {
  const int rank = static_cast<int>(shape.size());
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> axes_attr,
                         ctx.node().attr_ints("axes", std::vector<std::int64_t>{0, 2, 3}));
  FOVEA_ASSIGN_OR_RETURN(const std::vector<int> axes, normalize_axes(ctx, axes_attr, rank));
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (int axis : axes) reduced[static_cast<std::size_t>(axis)] = true;
  const Shape strides = contiguous_strides(shape);
  MvnPlan plan;
  for (int d = 0; d < rank; ++d) {
    const auto sd = static_cast<std::size_t>(d);
    if (reduced[sd]) {
      plan.reduced_dims[plan.reduced_rank] = shape[sd];
      plan.reduced_strides[plan.reduced_rank++] = strides[sd];
      plan.members *= shape[sd];
    } else {
      plan.kept_dims[plan.kept_rank] = shape[sd];
      plan.kept_strides[plan.kept_rank++] = strides[sd];
      plan.groups *= shape[sd];
    }
  }
  return plan;
}

namespace {

Status infer_mvn(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  if (const Dims* dims = ctx.input_dims(0); dims != nullptr) {
    Shape any_shape(dims->size(), 1);  // the axes are checked against the rank alone
    FOVEA_TRY(mvn_plan(ctx, any_shape).status());
  }
  return infer_same_as_input(ctx);
}

Status run_mvn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const MvnPlan plan, mvn_plan(ctx.inference(), x.shape()));
  if (plan.members == 0) return Status::ok();
  FloatTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    const auto members = static_cast<double>(plan.members);
    for (std::int64_t g = 0; g < plan.groups; ++g) {
      double sum = 0;
      for (std::int64_t m = 0; m < plan.members; ++m) sum += static_cast<double>(in[mvn_offset(plan, g, m)]);
      const double mean = sum / members;
      double squares = 0;
      for (std::int64_t m = 0; m < plan.members; ++m) {
        const double d = static_cast<double>(in[mvn_offset(plan, g, m)]) - mean;
        squares += d * d;
      }
      const double scale = 1.0 / (sqrt(squares / members) + kMvnEpsilon);
      for (std::int64_t m = 0; m < plan.members; ++m) {
        const std::int64_t at = mvn_offset(plan, g, m);
        out[at] = static_cast<T>((static_cast<double>(in[at]) - mean) * scale);
      }
    }
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "MeanVarianceNormalization", .infer = infer_mvn, .run = run_mvn});

}  // namespace fovea::runtime::ops
