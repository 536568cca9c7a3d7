// The Reduce* family (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare) through one
// templated reducer, and ArgMax / ArgMin. Axes are an attribute before opset 13 (ReduceSum) or 18
// (the others) and an optional input from then on; empty axes reduce everything unless
// noop_with_empty_axes is set.
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"
#include "runtime/ops/reduce_util.h"

namespace fovea::runtime::ops {
namespace {

Status infer_reduce(InferContext& ctx, Reduction r) {
  if (reduction_needs_float(r)) {
    FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  } else {
    FOVEA_TRY(ctx.require_dtype(0, {FOVEA_NUMERIC_TYPES}));
  }
  const Dims* x = ctx.input_dims(0);
  if (x == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(ctx, r, static_cast<int>(x->size())));
  if (!plan.reduced) {
    // Unknown axes: with keepdims the rank survives, nothing else is known.
    ctx.set_output(0, ctx.input_dtype(0),
                   plan.keepdims ? std::optional<Dims>(Dims(x->size(), Dim::unknown())) : std::nullopt);
    return Status::ok();
  }
  Dims out;
  for (std::size_t d = 0; d < x->size(); ++d) {
    if (!(*plan.reduced)[d]) {
      out.push_back((*x)[d]);
    } else if (plan.keepdims) {
      out.push_back(Dim::known_size(1));
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

// Accumulates in double for floating types and in int64 for integers.
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

template <typename A>
A initial_value(Reduction r) {
  switch (r) {
    case Reduction::kMax:
      return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                         : std::numeric_limits<A>::lowest();
    case Reduction::kMin:
      return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
    case Reduction::kProd: return A(1);
    default: return A(0);
  }
}

template <typename A>
A step(Reduction r, A acc, A x) {
  switch (r) {
    case Reduction::kMax: return std::max(acc, x);
    case Reduction::kMin: return std::min(acc, x);
    case Reduction::kProd: return acc * x;
    case Reduction::kL1: return acc + (x < A(0) ? -x : x);
    case Reduction::kL2:
    case Reduction::kSumSquare: return acc + x * x;
    case Reduction::kLogSumExp: return acc + static_cast<A>(std::exp(static_cast<double>(x)));
    default: return acc + x;
  }
}

template <typename A>
A finish(Reduction r, A acc, std::int64_t count) {
  switch (r) {
    case Reduction::kMean:
      if constexpr (std::is_floating_point_v<A>) {
        return acc / static_cast<A>(count);
      } else {
        return count == 0 ? A(0) : acc / count;
      }
    case Reduction::kL2: return static_cast<A>(std::sqrt(static_cast<double>(acc)));
    case Reduction::kLogSum:
    case Reduction::kLogSumExp: return static_cast<A>(std::log(static_cast<double>(acc)));
    default: return acc;
  }
}

template <typename T>
void reduce_typed(Reduction r, const Tensor& x, const std::vector<bool>& reduced, Tensor& y) {
  using A = Accumulator<T>;
  // Each input element adds into the output element at its index with the reduced dims zeroed.
  Shape kept = x.shape();
  for (std::size_t d = 0; d < kept.size(); ++d) {
    if (reduced[d]) kept[d] = 1;
  }
  Shape out_strides = contiguous_strides(kept);
  for (std::size_t d = 0; d < kept.size(); ++d) {
    if (reduced[d]) out_strides[d] = 0;
  }
  std::vector<A> acc(static_cast<std::size_t>(y.numel()), initial_value<A>(r));
  const T* in = x.data<T>();
  for_each_broadcast(x.shape(), {out_strides}, [&](std::int64_t i, const std::vector<std::int64_t>& offsets) {
    A& a = acc[static_cast<std::size_t>(offsets[0])];
    a = step(r, a, static_cast<A>(in[i]));
  });
  const std::int64_t count = y.numel() == 0 ? 0 : x.numel() / y.numel();
  for (std::size_t i = 0; i < acc.size(); ++i) y.data<T>()[i] = static_cast<T>(finish(r, acc[i], count));
}

Status run_reduce(KernelContext& ctx, Reduction r) {
  const InferContext concrete = ctx.inference();
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(concrete, r, x.rank()));
  dispatch<FOVEA_NUMERIC_TYPES>(x.dtype(), [&](auto tag) {
    reduce_typed<typename decltype(tag)::type>(r, x, *plan.reduced, ctx.output(0));
  });
  return Status::ok();
}

double input_elements(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  return static_cast<double>(element_count(inputs[0]));
}

Status infer_arg(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_NUMERIC_TYPES}));
  const Dims* x = ctx.input_dims(0);
  if (x == nullptr) {
    ctx.set_output(0, DataType::kInt64, std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(ArgPlan plan, plan_arg(ctx, static_cast<int>(x->size())));
  Dims out = *x;
  if (!out.empty()) {
    const auto axis = static_cast<std::size_t>(plan.axis);
    if (out[axis].known() && out[axis].value == 0) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("axis {} of {} is empty", plan.axis, dims_string(*x)));
    }
    if (plan.keepdims) {
      out[axis] = Dim::known_size(1);
    } else {
      out.erase(out.begin() + plan.axis);
    }
  }
  ctx.set_output(0, DataType::kInt64, std::move(out));
  return Status::ok();
}

Status run_arg(KernelContext& ctx, bool is_max) {
  const InferContext concrete = ctx.inference();
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(ArgPlan plan, plan_arg(concrete, x.rank()));
  const Shape& shape = x.shape();
  const std::int64_t length = shape.empty() ? 1 : shape[static_cast<std::size_t>(plan.axis)];
  const std::int64_t inner =
      shape.empty() ? 1 : element_count(Shape(shape.begin() + plan.axis + 1, shape.end()));
  std::int64_t* out = ctx.output(0).data<std::int64_t>();
  dispatch<FOVEA_NUMERIC_TYPES>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (std::int64_t o = 0; o < ctx.output(0).numel(); ++o) {
      const T* row = x.data<T>() + (o / inner) * length * inner + o % inner;
      std::int64_t best = 0;
      for (std::int64_t i = 1; i < length; ++i) {
        const T v = row[i * inner];
        const T b = row[best * inner];
        const bool better = is_max ? v > b : v < b;
        if (better || (plan.last && v == b)) best = i;
      }
      out[o] = best;
    }
  });
  return Status::ok();
}

template <Reduction R>
Status infer_reduction(InferContext& ctx) {
  return infer_reduce(ctx, R);
}
template <Reduction R>
Status run_reduction(KernelContext& ctx) {
  return run_reduce(ctx, R);
}
Status run_argmax(KernelContext& ctx) {
  return run_arg(ctx, true);
}
Status run_argmin(KernelContext& ctx) {
  return run_arg(ctx, false);
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "ReduceSum",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kSum>,
                   .run = run_reduction<Reduction::kSum>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceMean",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kMean>,
                   .run = run_reduction<Reduction::kMean>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceMax",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kMax>,
                   .run = run_reduction<Reduction::kMax>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceMin",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kMin>,
                   .run = run_reduction<Reduction::kMin>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceProd",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kProd>,
                   .run = run_reduction<Reduction::kProd>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceL1",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kL1>,
                   .run = run_reduction<Reduction::kL1>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceL2",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kL2>,
                   .run = run_reduction<Reduction::kL2>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceLogSum",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kLogSum>,
                   .run = run_reduction<Reduction::kLogSum>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceLogSumExp",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kLogSumExp>,
                   .run = run_reduction<Reduction::kLogSumExp>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ReduceSumSquare",
                   .max_inputs = 2,
                   .infer = infer_reduction<Reduction::kSumSquare>,
                   .run = run_reduction<Reduction::kSumSquare>,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ArgMax", .infer = infer_arg, .run = run_argmax, .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "ArgMin", .infer = infer_arg, .run = run_argmin, .flops = input_elements});

}  // namespace fovea::runtime::ops
