// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the CPU (opsets 12/13 and later:
// reductions none, sum and mean, the weight input, ignore_index, scores [N, C] and
// [N, C, d1..dk]). loss_util.h states the arithmetic, which the CUDA kernels share.
//
//   op                          dtypes
//   NegativeLogLikelihoodLoss   scores and weight float32/64 (float16 via float32); targets int64/32
//   SoftmaxCrossEntropyLoss     the same; the optional second output is log_prob, the scores' shape
//
// Sums accumulate in double. A target outside [0, C) that is not ignore_index is rejected in
// infer() once the targets are known, which at run time they are.
#include <fmt/format.h>

#include "runtime/ops/elementwise_util.h"
#include "runtime/ops/loss_util.h"

namespace fovea::runtime::ops {

Result<LossReduction> loss_reduction(const InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(const std::string reduction, ctx.node().attr_string("reduction", "mean"));
  if (reduction == "none") return LossReduction::kNone;
  if (reduction == "sum") return LossReduction::kSum;
  if (reduction == "mean") return LossReduction::kMean;
  return ctx.error(StatusCode::kInvalidArgument, "reduction '", reduction,
                   "' is none of 'none', 'sum' and 'mean'");
}

Result<LossPlan> loss_plan(const InferContext& ctx, const Shape& scores, const Shape& targets,
                           const Shape* weight) {
  if (scores.size() < 2) {
    return ctx.error(StatusCode::kInvalidArgument, "scores need rank >= 2 ([N, C, ...]), got shape ",
                     shape_string(scores));
  }
  Shape expected_targets = scores;
  expected_targets.erase(expected_targets.begin() + 1);
  if (targets != expected_targets) {
    return ctx.error(StatusCode::kInvalidArgument, "targets of shape ", shape_string(targets),
                     " for scores of shape ", shape_string(scores), ", expected ",
                     shape_string(expected_targets));
  }
  LossPlan plan;
  plan.batch = scores[0];
  plan.classes = scores[1];
  plan.inner = element_count(Shape(scores.begin() + 2, scores.end()));
  if (weight != nullptr && *weight != Shape{plan.classes}) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("weight of shape {} for {} classes", shape_string(*weight), plan.classes));
  }
  FOVEA_ASSIGN_OR_RETURN(plan.reduction, loss_reduction(ctx));
  plan.ignores = ctx.node().has_attribute("ignore_index");
  if (plan.ignores) {
    FOVEA_ASSIGN_OR_RETURN(plan.ignore_index, ctx.node().attr_int("ignore_index"));
  }
  return plan;
}

namespace {

using IndexTypes = DTypes<DataType::kInt64, DataType::kInt32>;

// Every target is ignore_index or a class in [0, C).
Status check_targets(const InferContext& ctx, const LossPlan& plan, const Tensor& targets) {
  for (std::int64_t i = 0; i < targets.numel(); ++i) {
    const std::int64_t target = integer_at(targets, i);
    if (loss_class(plan, target) < 0 && !(plan.ignores && target == plan.ignore_index)) {
      return ctx.error(
          StatusCode::kInvalidArgument,
          fmt::format("target {} is outside the {} classes and not ignore_index", target, plan.classes));
    }
  }
  return Status::ok();
}

bool has_log_prob_output(int output_count, const Node& node) {
  return output_count > 1 && node.outputs[1] != kNoValue;
}

// Inputs: scores, targets, optional weight. Outputs: the loss (targets' shape with reduction none,
// a scalar otherwise) and, for SoftmaxCrossEntropyLoss, the optional log_prob.
Status infer_loss(InferContext& ctx) {
  FOVEA_TRY(FloatTypes::require(ctx, 0));
  FOVEA_TRY(IndexTypes::require(ctx, 1));
  if (ctx.has_input(2)) FOVEA_TRY(ctx.require_same_dtype(0, 2));
  FOVEA_TRY(ctx.require_rank(0, 2, kMaxTensorRank));
  FOVEA_ASSIGN_OR_RETURN(const LossReduction reduction, loss_reduction(ctx));
  const std::optional<Shape> scores = known_shape(ctx, 0);
  const std::optional<Shape> targets = known_shape(ctx, 1);
  const std::optional<Shape> weight = ctx.has_input(2) ? known_shape(ctx, 2) : std::nullopt;
  if (scores && targets && (weight || !ctx.has_input(2))) {
    FOVEA_ASSIGN_OR_RETURN(const LossPlan plan,
                           loss_plan(ctx, *scores, *targets, weight ? &*weight : nullptr));
    if (const Tensor* values = ctx.input_value(1)) FOVEA_TRY(check_targets(ctx, plan, *values));
  }
  const DataType dtype = ctx.input_dtype(0);
  ctx.set_output(0, dtype, reduction == LossReduction::kNone ? ctx.input_type(1).dims : Dims{});
  if (ctx.output_count() > 1) ctx.set_output(1, dtype, ctx.input_type(0).dims);
  return Status::ok();
}

// The losses (and log_prob where asked), the log-probabilities being the scores themselves or,
// with `softmax`, their LogSoftmax along C.
template <typename T, typename I>
void compute_loss(KernelContext& ctx, const LossPlan& plan, bool softmax) {
  const T* scores = ctx.input(0).data<T>();
  const I* targets = ctx.input(1).data<I>();
  const T* weight = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  T* out = ctx.output(0).data<T>();
  T* log_prob =
      softmax && has_log_prob_output(ctx.output_count(), ctx.node()) ? ctx.output(1).data<T>() : nullptr;
  const auto score = [&](std::int64_t offset) { return static_cast<double>(scores[offset]); };
  const auto weight_of = [&](std::int64_t c) {
    return weight != nullptr ? static_cast<double>(weight[c]) : 1.0;
  };
  LossTerm<double> total;
  for (std::int64_t i = 0; i < plan.targets(); ++i) {
    const double shift = softmax ? log_softmax_shift<double>(plan, i, score) : 0.0;
    const auto shifted = [&](std::int64_t offset) { return score(offset) - shift; };
    if (log_prob != nullptr) {
      for (std::int64_t c = 0; c < plan.classes; ++c) {
        const std::int64_t offset = loss_score_offset(plan, i, c);
        log_prob[offset] = static_cast<T>(shifted(offset));
      }
    }
    const LossTerm<double> term =
        loss_term<double>(plan, i, static_cast<std::int64_t>(targets[i]), shifted, weight_of);
    if (plan.reduction == LossReduction::kNone) out[i] = static_cast<T>(term.loss);
    total.loss += term.loss;
    total.weight += term.weight;
  }
  if (plan.reduction != LossReduction::kNone) out[0] = static_cast<T>(reduce_loss(plan.reduction, total));
}

template <bool kSoftmax>
Status run_loss(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  const Tensor& targets = ctx.input(1);
  const Shape weight = ctx.has_input(2) ? ctx.input(2).shape() : Shape{};
  FOVEA_ASSIGN_OR_RETURN(const LossPlan plan, loss_plan(ctx.inference(), scores.shape(), targets.shape(),
                                                        ctx.has_input(2) ? &weight : nullptr));
  FloatTypes::dispatch(scores.dtype(), [&](auto tag) {
    IndexTypes::dispatch(targets.dtype(), [&](auto index_tag) {
      compute_loss<typename decltype(tag)::type, typename decltype(index_tag)::type>(ctx, plan, kSoftmax);
    });
  });
  return Status::ok();
}

// One term per target, plus C exponentials each for the softmax.
template <bool kSoftmax>
double loss_flops(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  const double scores = static_cast<double>(element_count(inputs[0]));
  return kSoftmax ? 4 * scores : static_cast<double>(element_count(inputs[1]));
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "NegativeLogLikelihoodLoss",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_loss,
                   .run = run_loss<false>,
                   .flops = loss_flops<false>});
FOVEA_REGISTER_OP({.op_type = "SoftmaxCrossEntropyLoss",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .max_outputs = 2,
                   .infer = infer_loss,
                   .run = run_loss<true>,
                   .flops = loss_flops<true>});

}  // namespace fovea::runtime::ops
