#include "runtime/ops/indexing_util.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "runtime/onnx_loader.h"
#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {

Result<ElementsPlan> elements_plan(const InferContext& ctx, const Shape& data, const Shape& indices) {
  if (data.size() != indices.size()) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("indices of rank {} for data of rank {}", indices.size(), data.size()));
  }
  const int rank = static_cast<int>(data.size());
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis", 0));
  FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, rank));
  ElementsPlan plan;
  plan.rank = rank;
  plan.axis = axis;
  plan.axis_dim = data[static_cast<std::size_t>(axis)];
  const Shape strides = contiguous_strides(data);
  for (int d = 0; d < rank; ++d) {
    const auto sd = static_cast<std::size_t>(d);
    if (d != axis && indices[sd] > data[sd]) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("indices dim {} is {}, above data's {}", d, indices[sd], data[sd]));
    }
    plan.indices_dims[d] = indices[sd];
    plan.data_strides[d] = strides[static_cast<std::size_t>(d)];
  }
  return plan;
}

Result<NdPlan> nd_plan(const InferContext& ctx, const Shape& data, const Shape& indices,
                       std::int64_t batch_dims) {
  const auto rank = static_cast<std::int64_t>(data.size());
  const auto indices_rank = static_cast<std::int64_t>(indices.size());
  if (indices_rank < 1) return ctx.error(StatusCode::kInvalidArgument, "indices must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(rank, indices_rank)) {
    return ctx.error(
        StatusCode::kInvalidArgument,
        fmt::format("batch_dims {} must be below both ranks ({} and {})", batch_dims, rank, indices_rank));
  }
  NdPlan plan;
  const std::int64_t k = indices.back();
  if (k < 1 || k > rank - batch_dims) {
    return ctx.error(
        StatusCode::kInvalidArgument,
        fmt::format("index tuples of {} for data of rank {} with {} batch dims", k, rank, batch_dims));
  }
  plan.tuple_size = static_cast<int>(k);
  plan.batch_dims = static_cast<int>(batch_dims);
  const Shape strides = contiguous_strides(data);
  std::int64_t batch = 1;
  for (std::int64_t d = 0; d < batch_dims; ++d) {
    const auto sd = static_cast<std::size_t>(d);
    if (data[sd] != indices[sd]) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("batch dim {} is {} in data but {} in indices", d, data[sd], indices[sd]));
    }
    batch *= data[sd];
  }
  plan.tuples = element_count(indices) / k;
  plan.tuples_per_batch = batch == 0 ? 0 : plan.tuples / batch;
  plan.batch_stride =
      batch_dims == 0 ? element_count(data) : strides[static_cast<std::size_t>(batch_dims - 1)];
  for (int m = 0; m < plan.tuple_size; ++m) {
    const auto d = static_cast<std::size_t>(batch_dims + m);
    plan.dims[m] = data[d];
    plan.strides[m] = strides[d];
  }
  for (auto d = static_cast<std::size_t>(batch_dims + k); d < data.size(); ++d) plan.slice *= data[d];
  if (plan.tuples_per_batch == 0) plan.tuples_per_batch = 1;  // no tuples: nothing is indexed
  return plan;
}

Shape nd_output_shape(const NdPlan& plan, const Shape& data, const Shape& indices) {
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + plan.batch_dims + plan.tuple_size, data.end());
  return out;
}

Result<ScatterReduction> scatter_reduction(const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::string reduction, node.attr_string("reduction", "none"));
  if (reduction == "none") return ScatterReduction::kNone;
  if (reduction == "add") return ScatterReduction::kAdd;
  if (reduction == "mul") return ScatterReduction::kMul;
  if (reduction == "max") return ScatterReduction::kMax;
  if (reduction == "min") return ScatterReduction::kMin;
  return make_error(StatusCode::kInvalidArgument, "unknown reduction '", reduction, "'");
}

AxisLines axis_lines(const Shape& shape, int axis) {
  AxisLines lines;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    const std::int64_t size = shape[static_cast<std::size_t>(d)];
    if (d < axis) lines.outer *= size;
    if (d == axis) lines.n = size;
    if (d > axis) lines.inner *= size;
  }
  return lines;
}

Result<CumSumParams> cumsum_params(const InferContext& ctx, const Tensor& axis, int rank) {
  if (axis.numel() != 1) {
    return ctx.error(StatusCode::kInvalidArgument, "axis must be a scalar, got shape ",
                     shape_string(axis.shape()));
  }
  CumSumParams params;
  FOVEA_ASSIGN_OR_RETURN(params.axis, normalize_axis(ctx, integer_at(axis, 0), rank));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t exclusive, ctx.node().attr_int("exclusive", 0));
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t reverse, ctx.node().attr_int("reverse", 0));
  params.exclusive = exclusive != 0;
  params.reverse = reverse != 0;
  return params;
}

Result<AxisLines> hardmax_lines(const InferContext& ctx, const Shape& shape) {
  const int rank = static_cast<int>(shape.size());
  const bool single_axis = ctx.opset() >= 13;
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis", single_axis ? -1 : 1));
  FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, rank));
  if (single_axis) return axis_lines(shape, axis);
  AxisLines lines;
  lines.n = 1;
  for (int d = 0; d < rank; ++d) (d < axis ? lines.outer : lines.n) *= shape[static_cast<std::size_t>(d)];
  return lines;
}

Result<SpaceDepthPlan> space_depth_plan(const InferContext& ctx, const Dims& in) {
  if (in.size() != 4 || !all_known(in)) {
    return ctx.error(StatusCode::kInvalidArgument, "input must be [N, C, H, W] of known size, got ",
                     dims_string(in));
  }
  SpaceDepthPlan plan;
  FOVEA_ASSIGN_OR_RETURN(plan.block, ctx.node().attr_int("blocksize"));
  if (plan.block < 1) return ctx.error(StatusCode::kInvalidArgument, "blocksize must be positive");
  const Shape shape = shape_of(in);
  const std::int64_t b = plan.block;
  for (int d = 0; d < 4; ++d) plan.in_dims[d] = shape[static_cast<std::size_t>(d)];
  plan.out_dims[0] = shape[0];
  if (ctx.node().op_type == "SpaceToDepth") {
    plan.mode = SpaceDepthMode::kSpaceToDepth;
    if (shape[2] % b != 0 || shape[3] % b != 0) {
      return ctx.error(
          StatusCode::kInvalidArgument,
          fmt::format("H and W ({}, {}) must be multiples of blocksize {}", shape[2], shape[3], b));
    }
    plan.out_dims[1] = shape[1] * b * b;
    plan.out_dims[2] = shape[2] / b;
    plan.out_dims[3] = shape[3] / b;
    return plan;
  }
  FOVEA_ASSIGN_OR_RETURN(const std::string mode, ctx.node().attr_string("mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") {
    return ctx.error(StatusCode::kInvalidArgument, "mode must be DCR or CRD, got '", mode, "'");
  }
  plan.mode = mode == "DCR" ? SpaceDepthMode::kDepthToSpaceDcr : SpaceDepthMode::kDepthToSpaceCrd;
  if (shape[1] % (b * b) != 0) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("C ({}) must be a multiple of blocksize^2 ({})", shape[1], b * b));
  }
  plan.out_dims[1] = shape[1] / (b * b);
  plan.out_dims[2] = shape[2] * b;
  plan.out_dims[3] = shape[3] * b;
  return plan;
}

Result<TriluPlan> trilu_plan(const InferContext& ctx, const Shape& shape, const Tensor* k) {
  if (shape.size() < 2) return ctx.error(StatusCode::kInvalidArgument, "input must have rank >= 2");
  TriluPlan plan;
  plan.rows = shape[shape.size() - 2];
  plan.cols = shape.back();
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t upper, ctx.node().attr_int("upper", 1));
  plan.upper = upper != 0;
  if (k != nullptr && k->numel() > 0) {
    if (k->numel() != 1) {
      return ctx.error(StatusCode::kInvalidArgument, "k must be a scalar, got shape ",
                       shape_string(k->shape()));
    }
    plan.k = integer_at(*k, 0);
  }
  return plan;
}

OneHotPlan one_hot_plan(const InferContext& ctx, const Shape& out) {
  const std::int64_t axis_attr = ctx.node().attr_int("axis", -1).value();
  const auto rank = static_cast<std::int64_t>(out.size());
  const std::int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  OneHotPlan plan;
  plan.depth = out[static_cast<std::size_t>(axis)];
  for (auto d = static_cast<std::size_t>(axis + 1); d < out.size(); ++d) plan.inner *= out[d];
  return plan;
}

Result<EyeLikeParams> eye_like_params(const InferContext& ctx) {
  EyeLikeParams params;
  params.dtype = ctx.input_dtype(0);
  if (ctx.node().has_attribute("dtype")) {
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t code, ctx.node().attr_int("dtype"));
    auto dtype = data_type_from_onnx(code);
    if (!dtype.is_ok()) return ctx.error(StatusCode::kUnsupported, dtype.status().message());
    params.dtype = *dtype;
  }
  FOVEA_ASSIGN_OR_RETURN(params.k, ctx.node().attr_int("k", 0));
  return params;
}

}  // namespace fovea::runtime::ops
