// Helpers every op file shares: axis handling, broadcasting, dtype dispatch. One copy here, so no
// op grows its own variant.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "runtime/op.h"

namespace fovea::runtime::ops {

// ONNX axes may be negative (counted from the end); the result is in [0, rank) or an error.
Result<int> normalize_axis(const InferContext& ctx, std::int64_t axis, int rank);
// Same for a list of axes; also rejects duplicates.
Result<std::vector<int>> normalize_axes(const InferContext& ctx, const std::vector<std::int64_t>& axes,
                                        int rank);

// Numpy-style multidirectional broadcasting of several input shapes (unknown dims stay unknown
// unless another input fixes them); nullopt when an input's rank is unknown. An error names the
// mismatching dims.
Result<std::optional<Dims>> broadcast_dims(const InferContext& ctx, const std::vector<const Dims*>& inputs);
// The same on concrete shapes, for kernels.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Input i's shape when every dim of it is known; nullopt otherwise.
std::optional<Shape> known_shape(const InferContext& ctx, int i);
// Strides of `shape` as seen from an output of rank `out_rank` under broadcasting: 0 where the
// input is broadcast along a dim.
Shape broadcast_strides(const Shape& shape, const Shape& out_shape);

// Calls f(std::int64_t out_index, in offsets...) for every element of `out_shape` in row-major
// order; each input offset follows its broadcast strides. Used by elementwise kernels.
template <typename F>
void for_each_broadcast(const Shape& out_shape, const std::vector<Shape>& in_strides, F&& f) {
  const std::size_t rank = out_shape.size();
  const std::int64_t total = element_count(out_shape);
  std::vector<std::int64_t> index(rank, 0);
  std::vector<std::int64_t> offsets(in_strides.size(), 0);
  for (std::int64_t out = 0; out < total; ++out) {
    f(out, offsets);
    for (std::size_t d = rank; d-- > 0;) {
      ++index[d];
      for (std::size_t k = 0; k < in_strides.size(); ++k) offsets[k] += in_strides[k][d];
      if (index[d] < out_shape[d]) break;
      for (std::size_t k = 0; k < in_strides.size(); ++k) offsets[k] -= in_strides[k][d] * out_shape[d];
      index[d] = 0;
    }
  }
}

// The C++ type that stores a DataType's elements (bool is one byte, float16 is Half).
template <DataType D>
struct StorageOf;
template <>
struct StorageOf<DataType::kFloat32> {
  using type = float;
};
template <>
struct StorageOf<DataType::kFloat64> {
  using type = double;
};
template <>
struct StorageOf<DataType::kFloat16> {
  using type = Half;
};
template <>
struct StorageOf<DataType::kInt64> {
  using type = std::int64_t;
};
template <>
struct StorageOf<DataType::kInt32> {
  using type = std::int32_t;
};
template <>
struct StorageOf<DataType::kInt8> {
  using type = std::int8_t;
};
template <>
struct StorageOf<DataType::kUInt8> {
  using type = std::uint8_t;
};
template <>
struct StorageOf<DataType::kBool> {
  using type = bool;
};
static_assert(sizeof(bool) == 1, "ONNX bool tensors are one byte per element");

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with the storage type of `dtype` when dtype is one of `Ds`; returns false
// (and calls nothing) otherwise, so the caller reports the unsupported dtype.
template <DataType... Ds, typename F>
bool dispatch(DataType dtype, F&& f) {
  return ((dtype == Ds ? (f(TypeTag<typename StorageOf<Ds>::type>{}), true) : false) || ...);
}

// Calls f(TypeTag<U>{}) with the unsigned integer type of dtype's element size: ops that only
// move elements (Concat, Transpose, Where...) need no code per dtype, float16 and bool included.
template <typename F>
void dispatch_by_size(DataType dtype, F&& f) {
  switch (data_type_size(dtype)) {
    case 1: f(TypeTag<std::uint8_t>{}); break;
    case 2: f(TypeTag<std::uint16_t>{}); break;
    case 4: f(TypeTag<std::uint32_t>{}); break;
    default:
      FOVEA_CHECK(data_type_size(dtype) == 8);
      f(TypeTag<std::uint64_t>{});
      break;
  }
}

// The dtype groups ops usually accept (float16 only where an op is a pure data mover or Cast: the
// CPU reference computes in float32).
#define FOVEA_FLOAT_TYPES ::fovea::DataType::kFloat32, ::fovea::DataType::kFloat64
#define FOVEA_INT_TYPES \
  ::fovea::DataType::kInt64, ::fovea::DataType::kInt32, ::fovea::DataType::kInt8, ::fovea::DataType::kUInt8
#define FOVEA_NUMERIC_TYPES FOVEA_FLOAT_TYPES, FOVEA_INT_TYPES
#define FOVEA_ALL_TYPES FOVEA_NUMERIC_TYPES, ::fovea::DataType::kFloat16, ::fovea::DataType::kBool

// Shape inference for ops whose single output has input 0's type and shape.
Status infer_same_as_input(InferContext& ctx);

}  // namespace fovea::runtime::ops
