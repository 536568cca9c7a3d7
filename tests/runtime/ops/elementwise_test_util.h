// Naive references for the elementwise op tests: broadcasting by explicit index arithmetic and
// arithmetic in double, independent of the kernels' strided loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {

// The offset in an input of shape `in` that output element `out_index` (of shape `out`) reads.
inline std::int64_t broadcast_source(const Shape& in, const Shape& out, std::int64_t out_index) {
  std::int64_t offset = 0;
  std::int64_t stride = 1;
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = out.size(); d-- > 0;) {
    const std::int64_t i = out_index % out[d];
    out_index /= out[d];
    if (d < lead) continue;
    const std::int64_t in_dim = in[d - lead];
    if (in_dim != 1) offset += i * stride;
    stride *= in_dim;
  }
  return offset;
}

// Numpy's broadcast of two compatible shapes.
inline Shape broadcast_shape_of(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = std::max(da, db);
  }
  return out;
}

// Writes `value` (already in range) into element i of any-dtype tensor.
inline void set_number(Tensor& t, std::int64_t i, double value) {
  switch (t.dtype()) {
    case DataType::kFloat32: t.data<float>()[i] = static_cast<float>(value); break;
    case DataType::kFloat64: t.data<double>()[i] = value; break;
    case DataType::kFloat16: t.data<Half>()[i] = float_to_half(static_cast<float>(value)); break;
    case DataType::kInt64: t.data<std::int64_t>()[i] = static_cast<std::int64_t>(value); break;
    case DataType::kInt32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(value); break;
    case DataType::kInt8: t.data<std::int8_t>()[i] = static_cast<std::int8_t>(value); break;
    case DataType::kUInt8: t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(value); break;
    case DataType::kBool: t.data<std::uint8_t>()[i] = value != 0 ? 1 : 0; break;
  }
}

// A tensor of `dtype` from values given as doubles.
inline Tensor tensor_of(DataType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  EXPECT_EQ(static_cast<std::int64_t>(values.size()), t.numel());
  for (std::int64_t i = 0; i < t.numel() && i < static_cast<std::int64_t>(values.size()); ++i) {
    set_number(t, i, values[static_cast<std::size_t>(i)]);
  }
  return t;
}

// out[i] = f(inputs broadcast to out_shape, read as double), stored as `dtype`.
inline Tensor reference_map(DataType dtype, const Shape& out_shape, const std::vector<Tensor>& inputs,
                            const std::function<double(const std::vector<double>&)>& f) {
  Tensor out = Tensor::allocate(dtype, out_shape);
  std::vector<double> args(inputs.size());
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      args[k] = number_at(inputs[k], broadcast_source(inputs[k].shape(), out_shape, i));
    }
    set_number(out, i, f(args));
  }
  return out;
}

// The Status message contains `part` (and the status is an error).
inline ::testing::AssertionResult fails_with(const Status& status, StatusCode code, const std::string& part) {
  if (status.is_ok()) return ::testing::AssertionFailure() << "succeeded, expected an error about " << part;
  if (status.code() != code || status.message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << "got " << status.to_string() << ", expected one about " << part;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace fovea::runtime::testing
