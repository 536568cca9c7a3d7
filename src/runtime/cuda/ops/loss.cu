// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on CUDA, with the CPU reference's plan and
// per-target arithmetic (ops/loss_util.h):
//
//   one thread per target (grid-stride): the log-probability of its class (SoftmaxCrossEntropyLoss:
//   the LogSoftmax shift over its C scores, also writing that line of log_prob when the node asks),
//   then its weighted loss. Reduction none writes it; sum and mean reduce each block's terms to a
//   partial in the workspace, and one block folds the partials, always in the same order for a
//   plan, so a run is deterministic.
//
//   dtypes: float32 and float16 scores (float arithmetic), int64/32 targets. A target outside
//   [0, C) counts as ignored (the CPU rejects it).
#include <cub/block/block_reduce.cuh>

#include "runtime/cuda/elementwise.cuh"
#include "runtime/ops/loss_util.h"

namespace fovea::runtime::cuda {
namespace {

using ops::LossPlan;
using ops::LossReduction;
using Term = ops::LossTerm<float>;

#define FOVEA_CUDA_LOSS_TYPES ::fovea::DataType::kFloat32, ::fovea::DataType::kFloat16

struct AddTerms {
  __device__ Term operator()(Term a, Term b) const { return Term{a.loss + b.loss, a.weight + b.weight}; }
};

struct LossState final : CudaNodeState {
  LossPlan plan;
  unsigned blocks = 1;  // of the term kernel, one partial each
};

// `partials` nullptr: reduction none, each term written to out.
template <typename T, typename I, bool kSoftmax>
__global__ void __launch_bounds__(kBlockSize)
    loss_terms(const T* __restrict__ scores, const I* __restrict__ targets, const T* __restrict__ weight,
               LossPlan plan, T* __restrict__ out, T* __restrict__ log_prob, Term* __restrict__ partials) {
  const auto score = [&](std::int64_t offset) { return static_cast<float>(load_compute(scores, offset)); };
  const auto weight_of = [&](std::int64_t c) {
    return weight != nullptr ? static_cast<float>(load_compute(weight, c)) : 1.0f;
  };
  Term mine{0.0f, 0.0f};
  FOVEA_GRID_STRIDE_LOOP(i, plan.targets()) {
    float shift = 0.0f;
    if constexpr (kSoftmax) {
      shift = ops::log_softmax_shift<float>(plan, i, score);
      for (std::int64_t c = 0; log_prob != nullptr && c < plan.classes; ++c) {
        const std::int64_t offset = ops::loss_score_offset(plan, i, c);
        store_compute(log_prob, offset, score(offset) - shift);
      }
    }
    const Term term = ops::loss_term<float>(
        plan, i, static_cast<std::int64_t>(targets[i]),
        [&](std::int64_t offset) { return score(offset) - shift; }, weight_of);
    if (partials == nullptr) {
      store_compute(out, i, term.loss);
    } else {
      mine = AddTerms{}(mine, term);
    }
  }
  if (partials == nullptr) return;  // the same for every thread of the grid
  using Reduce = cub::BlockReduce<Term, kBlockSize>;
  __shared__ typename Reduce::TempStorage storage;
  const Term block = Reduce(storage).Reduce(mine, AddTerms{});
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

// One block: the partials folded, the reduction finished into out[0].
template <typename T>
__global__ void __launch_bounds__(kBlockSize) finish_loss(const Term* __restrict__ partials, unsigned count,
                                                          LossReduction reduction, T* __restrict__ out) {
  Term mine{0.0f, 0.0f};
  for (unsigned b = threadIdx.x; b < count; b += blockDim.x) mine = AddTerms{}(mine, partials[b]);
  using Reduce = cub::BlockReduce<Term, kBlockSize>;
  __shared__ typename Reduce::TempStorage storage;
  const Term total = Reduce(storage).Reduce(mine, AddTerms{});
  if (threadIdx.x == 0) store_compute(out, 0, ops::reduce_loss(reduction, total));
}

Result<CudaPrepared> prepare_loss(CudaKernelContext& ctx) {
  auto state = std::make_unique<LossState>();
  const Shape weight = ctx.has_input(2) ? ctx.input(2).shape() : Shape{};
  FOVEA_ASSIGN_OR_RETURN(state->plan,
                         ops::loss_plan(ctx.inference(), ctx.input(0).shape(), ctx.input(1).shape(),
                                        ctx.has_input(2) ? &weight : nullptr));
  state->blocks = grid_for(state->plan.targets());
  const std::size_t workspace =
      state->plan.reduction == LossReduction::kNone ? 0 : state->blocks * sizeof(Term);
  return CudaPrepared{std::move(state), workspace};
}

template <bool kSoftmax>
Status run_loss(CudaKernelContext& ctx) {
  const LossState& state = ctx.state<LossState>();
  const bool reduces = state.plan.reduction != LossReduction::kNone;
  if (!reduces && state.plan.targets() == 0) return Status::ok();
  const bool writes_log_prob = kSoftmax && ctx.output_count() > 1 && ctx.node().outputs[1] != kNoValue;
  auto* partials = reduces ? static_cast<Term*>(ctx.workspace()) : nullptr;
  FOVEA_TRY(dispatch_elementwise<FOVEA_CUDA_LOSS_TYPES>(ctx, ctx.input(0).dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* out = ctx.output(0).data<T>();
    T* log_prob = writes_log_prob ? ctx.output(1).data<T>() : nullptr;
    const T* weight = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
    dispatch_device<::fovea::DataType::kInt64, ::fovea::DataType::kInt32>(
        ctx.input(1).dtype(), [&](auto index_tag) {
          using I = typename decltype(index_tag)::type;
          loss_terms<T, I, kSoftmax><<<state.blocks, kBlockSize, 0, ctx.stream()>>>(
              ctx.input(0).data<T>(), ctx.input(1).data<I>(), weight, state.plan, out, log_prob, partials);
        });
    FOVEA_CUDA_TRY_LAUNCH();
    if (reduces) {
      finish_loss<T><<<1, kBlockSize, 0, ctx.stream()>>>(partials, state.blocks, state.plan.reduction, out);
      FOVEA_CUDA_TRY_LAUNCH();
    }
    return Status::ok();
  }));
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "NegativeLogLikelihoodLoss",
                        .prepare = prepare_loss,
                        .run = run_loss<false>});
FOVEA_REGISTER_CUDA_OP({.op_type = "SoftmaxCrossEntropyLoss",
                        .prepare = prepare_loss,
                        .run = run_loss<true>});

}  // namespace fovea::runtime::cuda
