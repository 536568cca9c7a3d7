// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, shared by the CPU reference (loss.cpp) and
// the CUDA kernels (cuda/ops/loss.cu): the plan read from the node and its shapes, and per-element
// functions (FOVEA_HD) that both sides call, so they agree on which score each target reads.
//
// Scores are [N, C, d1..dk] (k >= 0), targets [N, d1..dk], the optional weight [C]. Target element
// i selects class c = target[i]; its loss is -w * log_prob[n, c, d] with w = weight[c] (1 without a
// weight input), and w = 0 with loss 0 where target[i] == ignore_index. Reductions: none (the
// losses, target's shape), sum, and mean = sum of losses / sum of w (NaN when every target is
// ignored, as ONNX's reference divides 0 by 0). These are evaluation losses: forward only.
//
// SoftmaxCrossEntropyLoss takes log_prob = LogSoftmax(scores) along C (also its optional second
// output); NegativeLogLikelihoodLoss takes the scores as log_prob.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

enum class LossReduction : std::uint8_t { kNone, kSum, kMean };

struct LossPlan {
  std::int64_t batch = 0;    // N
  std::int64_t classes = 0;  // C
  std::int64_t inner = 1;    // d1 * ... * dk: positions per sample
  LossReduction reduction = LossReduction::kMean;
  bool ignores = false;  // the ignore_index attribute is given
  std::int64_t ignore_index = 0;
  FOVEA_HD std::int64_t targets() const { return batch * inner; }
};

// Checks the reduction and the shapes (scores of rank >= 2, targets [N, d1..dk], weight [C];
// `weight` nullptr without one) and returns the plan.
Result<LossPlan> loss_plan(const InferContext& ctx, const Shape& scores, const Shape& targets,
                           const Shape* weight);

// The reduction attribute alone (for shape inference before the shapes are known).
Result<LossReduction> loss_reduction(const InferContext& ctx);

// The class a target selects; -1 when it equals ignore_index or lies outside [0, C) (the CPU
// rejects the latter; CUDA counts it as ignored and never reads outside the scores).
FOVEA_HD std::int64_t loss_class(const LossPlan& plan, std::int64_t target) {
  if (plan.ignores && target == plan.ignore_index) return -1;
  return target >= 0 && target < plan.classes ? target : -1;
}

// The scores offset of class c at target element i.
FOVEA_HD std::int64_t loss_score_offset(const LossPlan& plan, std::int64_t i, std::int64_t c) {
  return ((i / plan.inner) * plan.classes + c) * plan.inner + i % plan.inner;
}

// LogSoftmax along C of the scores line of target element i: log_prob[c] = score[c] - shift with
// shift = max + log(sum(exp(score - max))). `score(offset)` reads a score as C (float or double).
template <typename C, typename Score>
FOVEA_HD C log_softmax_shift(const LossPlan& plan, std::int64_t i, Score score) {
  const std::int64_t first = loss_score_offset(plan, i, 0);
  C max = score(first);
  for (std::int64_t c = 1; c < plan.classes; ++c) {
    const C value = score(first + c * plan.inner);
    max = value > max ? value : max;
  }
  C sum = 0;
  for (std::int64_t c = 0; c < plan.classes; ++c) sum += exp(score(first + c * plan.inner) - max);
  return max + log(sum);
}

// One target's weighted loss and its weight (both 0 when ignored).
template <typename C>
struct LossTerm {
  C loss = 0;
  C weight = 0;
};

// Target element i's term; `log_prob(offset)` reads the log-probability at a scores offset, and
// `weight_of(c)` class c's weight.
template <typename C, typename LogProb, typename WeightOf>
FOVEA_HD LossTerm<C> loss_term(const LossPlan& plan, std::int64_t i, std::int64_t target, LogProb log_prob,
                               WeightOf weight_of) {
  const std::int64_t c = loss_class(plan, target);
  if (c < 0) return LossTerm<C>{};
  const C w = weight_of(c);
  return LossTerm<C>{-log_prob(loss_score_offset(plan, i, c)) * w, w};
}

// The reduced loss from the sums of the terms.
template <typename C>
FOVEA_HD C reduce_loss(LossReduction reduction, LossTerm<C> total) {
  return reduction == LossReduction::kMean ? total.loss / total.weight : total.loss;
}

}  // namespace fovea::runtime::ops
