#include "runtime/ops/op_util.h"

#include <algorithm>

#include <fmt/format.h>

namespace fovea::runtime::ops {

Result<int> normalize_axis(const InferContext& ctx, std::int64_t axis, int rank) {
  const std::int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= std::max(rank, 1)) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return static_cast<int>(normalized);
}

Result<std::vector<int>> normalize_axes(const InferContext& ctx, const std::vector<std::int64_t>& axes,
                                        int rank) {
  std::vector<int> normalized;
  for (std::int64_t axis : axes) {
    FOVEA_ASSIGN_OR_RETURN(int a, normalize_axis(ctx, axis, rank));
    if (std::find(normalized.begin(), normalized.end(), a) != normalized.end()) {
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("axis {} is repeated", axis));
    }
    normalized.push_back(a);
  }
  return normalized;
}

Result<std::optional<Dims>> broadcast_dims(const InferContext& ctx, const std::vector<const Dims*>& inputs) {
  std::size_t rank = 0;
  for (const Dims* dims : inputs) {
    if (dims == nullptr) return std::optional<Dims>();
    rank = std::max(rank, dims->size());
  }
  Dims out(rank, Dim::known_size(1));
  for (const Dims* dims : inputs) {
    const std::size_t offset = rank - dims->size();
    for (std::size_t d = 0; d < dims->size(); ++d) {
      const Dim& in = (*dims)[d];
      Dim& o = out[offset + d];
      if (in.known() && in.value == 1) continue;
      if (o.known() && o.value == 1) {
        o = in;
      } else if (in.known() && o.known() && in.value != o.value) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("shapes do not broadcast: dim {} is {} in one input and {} in another",
                                     offset + d, o.value, in.value));
      } else if (in.known()) {
        o = in;  // a known size fixes an unknown one
      }
    }
  }
  return std::optional<Dims>(std::move(out));
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const std::int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    out[d] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Shape& shape, const Shape& out_shape) {
  const Shape strides = contiguous_strides(shape);
  Shape out(out_shape.size(), 0);
  const std::size_t offset = out_shape.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    out[offset + d] = shape[d] == 1 ? 0 : strides[d];
  }
  return out;
}

Status infer_same_as_input(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_type(0).dims);
  return Status::ok();
}

std::optional<Shape> known_shape(const InferContext& ctx, int i) {
  const Dims* dims = ctx.input_dims(i);
  if (dims == nullptr || !all_known(*dims)) return std::nullopt;
  return shape_of(*dims);
}

}  // namespace fovea::runtime::ops
