// The indexing ops' arithmetic, shared by the CPU reference (indexing.cpp) and the CUDA kernels
// (cuda/ops/indexing.cu): host-side plans built once from the node and its concrete shapes, and
// per-element functions (FOVEA_HD) that map an output or update element to the data element it
// reads or writes. Each kernel is then a loop over elements: sequential on the CPU, a grid-stride
// loop on CUDA, computing the same offsets.
//
//   GatherElements ScatterElements   ElementsPlan      one index per element, along one axis
//   GatherND ScatterND               NdPlan            index tuples selecting slices
//   ScatterElements ScatterND        ScatterReduction  none, add, mul, max, min
//   CumSum Hardmax                   AxisLines         lines along one axis
//   DepthToSpace SpaceToDepth        SpaceDepthPlan    a fixed 6-D permutation
//   Trilu                            TriluPlan         the triangle of the last two dims
//   OneHot                           OneHotPlan        one value per (index, class)
//
// Indices are checked against their dims in infer() on the CPU (every value is known at run
// time); on CUDA an index out of range reads 0 (Gather*) or writes nothing (Scatter*), never
// outside the buffers.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/host_device.h"
#include "runtime/op.h"
#include "runtime/ops/integer_math.h"

namespace fovea::runtime::ops {

// An index in [-dim, dim) as one in [0, dim); -1 when it is outside.
FOVEA_HD std::int64_t normalized_index(std::int64_t index, std::int64_t dim) {
  if (index < 0) index += dim;
  return index >= 0 && index < dim ? index : -1;
}

// ---- GatherElements, ScatterElements ----

struct ElementsPlan {
  int rank = 0;
  int axis = 0;
  std::int64_t indices_dims[kMaxTensorRank] = {};  // the indices' shape (= updates' and Gather's output)
  std::int64_t data_strides[kMaxTensorRank] = {};
  std::int64_t axis_dim = 0;  // data's size along the axis
};
// The axis attribute against data's shape; indices must have data's rank.
Result<ElementsPlan> elements_plan(const InferContext& ctx, const Shape& data, const Shape& indices);

// The data offset that indices element i addresses, `index` being its value in [0, axis_dim).
FOVEA_HD std::int64_t elements_offset(const ElementsPlan& plan, std::int64_t i, std::int64_t index) {
  std::int64_t offset = 0;
  for (int d = plan.rank - 1; d >= 0; --d) {
    const std::int64_t coord = i % plan.indices_dims[d];
    i /= plan.indices_dims[d];
    offset += (d == plan.axis ? index : coord) * plan.data_strides[d];
  }
  return offset;
}

// ---- GatherND, ScatterND ----

struct NdPlan {
  int batch_dims = 0;
  int tuple_size = 0;       // indices' last dim: how many data dims (after the batch) a tuple picks
  std::int64_t tuples = 0;  // index tuples in all
  std::int64_t tuples_per_batch = 1;
  std::int64_t batch_stride = 0;              // data elements per batch (batch_dims leading dims)
  std::int64_t slice = 1;                     // data elements one tuple selects
  std::int64_t dims[kMaxTensorRank] = {};     // the data dims the tuple indexes
  std::int64_t strides[kMaxTensorRank] = {};  // and their strides
};
// GatherND's output shape (ScatterND's updates shape): indices.shape[:-1] + data.shape[b + k:].
Result<NdPlan> nd_plan(const InferContext& ctx, const Shape& data, const Shape& indices,
                       std::int64_t batch_dims);
Shape nd_output_shape(const NdPlan& plan, const Shape& data, const Shape& indices);

// The data offset of tuple t's slice, from its indices; -1 when an index is outside its dim.
template <typename I>
FOVEA_HD std::int64_t nd_slice_offset(const NdPlan& plan, const I* indices, std::int64_t t) {
  std::int64_t offset = (t / plan.tuples_per_batch) * plan.batch_stride;
  for (int m = 0; m < plan.tuple_size; ++m) {
    const std::int64_t index =
        normalized_index(static_cast<std::int64_t>(indices[t * plan.tuple_size + m]), plan.dims[m]);
    if (index < 0) return -1;
    offset += index * plan.strides[m];
  }
  return offset;
}

// ---- Scatter reductions ----

enum class ScatterReduction : std::uint8_t { kNone, kAdd, kMul, kMax, kMin };
Result<ScatterReduction> scatter_reduction(const Node& node);

// `current` combined with `update` (compute values: float for float16); integers wrap like Add
// and Mul.
template <typename T>
FOVEA_HD T reduce_scatter(ScatterReduction reduction, T current, T update) {
  constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;
  switch (reduction) {
    case ScatterReduction::kAdd:
      if constexpr (kWraps) return wrapping_add(current, update);
      return static_cast<T>(current + update);
    case ScatterReduction::kMul:
      if constexpr (kWraps) return wrapping_mul(current, update);
      return static_cast<T>(current * update);
    case ScatterReduction::kMax: return current < update ? update : current;
    case ScatterReduction::kMin: return update < current ? update : current;
    default: return update;
  }
}

// ---- CumSum, Hardmax ----

// A tensor as [outer, n, inner] around one axis: outer * inner lines of n elements, inner apart.
struct AxisLines {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
  FOVEA_HD std::int64_t lines() const { return outer * inner; }
};
AxisLines axis_lines(const Shape& shape, int axis);
FOVEA_HD std::int64_t line_start(const AxisLines& lines, std::int64_t line) {
  return (line / lines.inner) * lines.n * lines.inner + line % lines.inner;
}

struct CumSumParams {
  int axis = 0;
  bool exclusive = false;
  bool reverse = false;
};
// `axis` is CumSum's axis input (a scalar).
Result<CumSumParams> cumsum_params(const InferContext& ctx, const Tensor& axis, int rank);

// Hardmax's axis (opset 13: one axis, default -1; before: the flattened trailing dims from `axis`,
// default 1, which as lines means n = the product of those dims).
Result<AxisLines> hardmax_lines(const InferContext& ctx, const Shape& shape);

// ---- DepthToSpace, SpaceToDepth ----

enum class SpaceDepthMode : std::uint8_t { kDepthToSpaceDcr, kDepthToSpaceCrd, kSpaceToDepth };
struct SpaceDepthPlan {
  SpaceDepthMode mode = SpaceDepthMode::kDepthToSpaceDcr;
  std::int64_t block = 1;
  std::int64_t out_dims[4] = {};  // [N, C, H, W] of the output
  std::int64_t in_dims[4] = {};
};
// The output's [N, C, H, W] for `in` (also validates blocksize, mode and divisibility).
Result<SpaceDepthPlan> space_depth_plan(const InferContext& ctx, const Dims& in);

// The input offset output element o reads.
FOVEA_HD std::int64_t space_depth_source(const SpaceDepthPlan& plan, std::int64_t o) {
  const std::int64_t ow = o % plan.out_dims[3];
  o /= plan.out_dims[3];
  const std::int64_t oh = o % plan.out_dims[2];
  o /= plan.out_dims[2];
  const std::int64_t oc = o % plan.out_dims[1];
  const std::int64_t n = o / plan.out_dims[1];
  const std::int64_t b = plan.block;
  std::int64_t c = 0;
  std::int64_t h = 0;
  std::int64_t w = 0;
  if (plan.mode == SpaceDepthMode::kSpaceToDepth) {
    const std::int64_t in_c = plan.in_dims[1];
    const std::int64_t block = oc / in_c;  // (i * b + j): the position in the block
    c = oc % in_c;
    h = oh * b + block / b;
    w = ow * b + block % b;
  } else {
    const std::int64_t i = oh % b;
    const std::int64_t j = ow % b;
    c = plan.mode == SpaceDepthMode::kDepthToSpaceDcr ? (i * b + j) * plan.out_dims[1] + oc
                                                      : (oc * b + i) * b + j;
    h = oh / b;
    w = ow / b;
  }
  return ((n * plan.in_dims[1] + c) * plan.in_dims[2] + h) * plan.in_dims[3] + w;
}

// ---- Trilu ----

struct TriluPlan {
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  std::int64_t k = 0;
  bool upper = true;
};
// `k` is the optional diagonal input (nullptr: 0).
Result<TriluPlan> trilu_plan(const InferContext& ctx, const Shape& shape, const Tensor* k);

// Whether element o keeps its value (else it becomes 0).
FOVEA_HD bool trilu_keeps(const TriluPlan& plan, std::int64_t o) {
  const std::int64_t col = o % plan.cols;
  const std::int64_t row = (o / plan.cols) % plan.rows;
  return plan.upper ? col - row >= plan.k : col - row <= plan.k;
}

// ---- OneHot ----

struct OneHotPlan {
  std::int64_t depth = 0;
  std::int64_t inner = 1;  // index elements after the axis
};
// From the output's shape (the depth is its size along the axis).
OneHotPlan one_hot_plan(const InferContext& ctx, const Shape& out);

// For output element o: the index element it reads, and the class it stands for.
FOVEA_HD std::int64_t one_hot_index_element(const OneHotPlan& plan, std::int64_t o) {
  return (o / (plan.depth * plan.inner)) * plan.inner + o % plan.inner;
}
FOVEA_HD std::int64_t one_hot_class(const OneHotPlan& plan, std::int64_t o) {
  return (o / plan.inner) % plan.depth;
}

// ---- EyeLike ----

// The output dtype (the `dtype` attribute, else the input's) and the diagonal k.
struct EyeLikeParams {
  DataType dtype = DataType::kFloat32;
  std::int64_t k = 0;
};
Result<EyeLikeParams> eye_like_params(const InferContext& ctx);

}  // namespace fovea::runtime::ops
