// TopK and NonMaxSuppression: ops that select elements by value. NonMaxSuppression's output size
// depends on the data, so its kernel allocates the output itself. Its ranking and IoU are
// nms_util.h's, which the CUDA kernel (cuda/ops/nms.cu) shares, so both select the same boxes; NaN
// scores, which ONNX leaves unranked, are dropped on both.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "runtime/ops/movement_util.h"
#include "runtime/ops/nms_util.h"
#include "runtime/ops/reduce_util.h"

namespace fovea::runtime::ops {
namespace {

// ---- TopK ----

Status infer_topk(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_NUMERIC_TYPES}));
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  const Dims* in = ctx.input_dims(0);
  if (in == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    ctx.set_output(1, DataType::kInt64, std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const TopKPlan plan, topk_plan(ctx, *in));
  Dims out = *in;
  out[static_cast<std::size_t>(plan.axis)] = plan.k ? Dim::known_size(*plan.k) : Dim::unknown();
  ctx.set_output(0, ctx.input_dtype(0), out);
  ctx.set_output(1, DataType::kInt64, std::move(out));
  return Status::ok();
}

// A strict order for sorting: NaN ranks above every number, so comparisons stay consistent.
template <typename T>
bool ranks_above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return false;
    if (std::isnan(a)) return true;
  }
  return a > b;
}

template <typename T>
void topk_typed(const Tensor& in, Tensor& values, Tensor& indices, const TopKPlan& plan) {
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (int d = 0; d < in.rank(); ++d) {
    if (d < plan.axis) outer *= in.dim(d);
    if (d > plan.axis) inner *= in.dim(d);
  }
  const std::int64_t n = in.dim(plan.axis);
  const std::int64_t k = *plan.k;
  const T* src = in.data<T>();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const T* row = src + o * n * inner + i;
      auto at = [&](std::int64_t j) { return row[j * inner]; };
      // Ties go to the lower index, as the spec asks.
      auto before = [&](std::int64_t a, std::int64_t b) {
        if (ranks_above(at(a), at(b))) return plan.largest;
        if (ranks_above(at(b), at(a))) return !plan.largest;
        return a < b;
      };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t out = (o * k + j) * inner + i;
        values.data<T>()[out] = at(order[static_cast<std::size_t>(j)]);
        indices.data<std::int64_t>()[out] = order[static_cast<std::size_t>(j)];
      }
    }
  }
}

Status run_topk(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const TopKPlan plan, topk_plan(ctx.inference(), dims_of(in.shape())));
  dispatch<FOVEA_NUMERIC_TYPES>(in.dtype(), [&](auto tag) {
    topk_typed<typename decltype(tag)::type>(in, ctx.output(0), ctx.output(1), plan);
  });
  return Status::ok();
}

// ---- NonMaxSuppression ----

struct NmsParams {
  std::int64_t max_per_class = 0;
  float iou_threshold = 0;
  std::optional<float> score_threshold;
  bool center_point_box = false;
};

Status infer_nms(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {DataType::kFloat32}));
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kFloat32}));
  FOVEA_TRY(ctx.require_rank(0, 3, 3));
  FOVEA_TRY(ctx.require_rank(1, 3, 3));
  if (ctx.has_input(2)) FOVEA_TRY(ctx.require_dtype(2, {DataType::kInt64}));
  if (ctx.has_input(3)) FOVEA_TRY(ctx.require_dtype(3, {DataType::kFloat32}));
  if (ctx.has_input(4)) FOVEA_TRY(ctx.require_dtype(4, {DataType::kFloat32}));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t center, ctx.node().attr_int("center_point_box", 0));
  if (center != 0 && center != 1) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("center_point_box is {}, expected 0 or 1", center));
  }
  const Dims* boxes = ctx.input_dims(0);
  const Dims* scores = ctx.input_dims(1);
  if (boxes != nullptr && scores != nullptr) {
    const Dim& coordinates = (*boxes)[2];
    if (coordinates.known() && coordinates.value != 4) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("boxes {} must have 4 coordinates in dim 2", dims_string(*boxes)));
    }
    for (auto [box_dim, score_dim] : {std::pair{0, 0}, std::pair{1, 2}}) {
      const Dim& a = (*boxes)[static_cast<std::size_t>(box_dim)];
      const Dim& b = (*scores)[static_cast<std::size_t>(score_dim)];
      if (a.known() && b.known() && a.value != b.value) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("boxes {} and scores {} disagree on batches or boxes",
                                     dims_string(*boxes), dims_string(*scores)));
      }
    }
  }
  ctx.set_output(0, DataType::kInt64, Dims{Dim::unknown(), Dim::known_size(3)});
  return Status::ok();
}

NmsParams nms_params(const KernelContext& ctx) {
  NmsParams params;
  auto given = [&](int i) { return ctx.has_input(i) && ctx.input(i).numel() > 0; };
  if (given(2)) params.max_per_class = integer_at(ctx.input(2), 0);
  if (given(3)) params.iou_threshold = static_cast<float>(number_at(ctx.input(3), 0));
  if (given(4)) params.score_threshold = static_cast<float>(number_at(ctx.input(4), 0));
  params.center_point_box = ctx.node().attr_int("center_point_box", 0).value() != 0;
  return params;
}

// The candidates of one (batch, class) in rank order, as keys: descending score, then ascending
// box index (nms_util.h). NaN scores are dropped (see onnx_nms_candidate).
void rank_candidates(const float* scores, std::int64_t n, const NmsParams& params,
                     std::vector<std::uint64_t>& keys) {
  keys.clear();
  for (std::int64_t i = 0; i < n; ++i) {
    if (onnx_nms_candidate(scores[i], params.score_threshold.has_value(),
                           params.score_threshold.value_or(0))) {
      keys.push_back(descending_score_key(scores[i], static_cast<std::uint32_t>(i)));
    }
  }
  std::sort(keys.begin(), keys.end());
}

Status run_nms(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  const NmsParams params = nms_params(ctx);
  const std::int64_t batches = scores.dim(0);
  const std::int64_t classes = scores.dim(1);
  const std::int64_t n = scores.dim(2);
  std::vector<std::int64_t> selected;  // (batch, class, box) triples
  std::vector<std::uint64_t> candidates;
  std::vector<Box> kept;
  for (std::int64_t b = 0; b < batches; ++b) {
    const float* batch_boxes = boxes.data<float>() + b * n * 4;
    for (std::int64_t c = 0; c < classes; ++c) {
      rank_candidates(scores.data<float>() + (b * classes + c) * n, n, params, candidates);
      kept.clear();
      for (std::uint64_t key : candidates) {
        if (static_cast<std::int64_t>(kept.size()) >= params.max_per_class) break;
        const std::int64_t i = key_index(key);
        const Box box = onnx_nms_box(batch_boxes + i * 4, params.center_point_box);
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const Box& k) { return onnx_nms_suppresses(k, box, params.iou_threshold); })) {
          continue;
        }
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  Tensor& out = ctx.allocate_output(0, {static_cast<std::int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.data<std::int64_t>());
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "TopK",
                   .max_inputs = 2,
                   .min_outputs = 2,
                   .max_outputs = 2,
                   .infer = infer_topk,
                   .run = run_topk});
FOVEA_REGISTER_OP(
    {.op_type = "NonMaxSuppression", .min_inputs = 2, .max_inputs = 5, .infer = infer_nms, .run = run_nms});

}  // namespace fovea::runtime::ops
