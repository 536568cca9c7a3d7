#include "runtime/tensor.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace fovea::runtime {

std::int64_t element_count(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    count *= d;
  }
  return count;
}

std::string shape_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i > 1; --i) {
    strides[i - 2] = strides[i - 1] * shape[i - 1];
  }
  return strides;
}

Tensor Tensor::allocate(DataType dtype, Shape shape) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  // At least one byte so that empty tensors still have a distinct, non-null address.
  const std::size_t bytes = std::max<std::size_t>(tensor.bytes(), 1);
  tensor.owner_ = std::shared_ptr<std::byte[]>(new std::byte[bytes]());
  tensor.data_ = tensor.owner_.get();
  return tensor;
}

Tensor Tensor::borrow(DataType dtype, Shape shape, void* data) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.data_ = data;
  return tensor;
}

Tensor Tensor::reshaped(Shape shape) const {
  FOVEA_CHECK(element_count(shape) == numel());
  Tensor tensor = *this;
  tensor.shape_ = std::move(shape);
  return tensor;
}

Tensor Tensor::clone() const {
  Tensor copy = allocate(dtype_, shape_);
  if (bytes() > 0) {
    std::memcpy(copy.data_, data_, bytes());
  }
  return copy;
}

std::int64_t integer_at(const Tensor& tensor, std::int64_t i) {
  switch (tensor.dtype()) {
    case DataType::kInt64: return tensor.data<std::int64_t>()[i];
    case DataType::kInt32: return tensor.data<std::int32_t>()[i];
    case DataType::kUInt8: return tensor.data<std::uint8_t>()[i];
    case DataType::kInt8: return tensor.data<std::int8_t>()[i];
    case DataType::kBool: return tensor.data<std::uint8_t>()[i] != 0;
    default: break;
  }
  FOVEA_CHECK_MSG(false, "integer_at on a floating-point tensor");
  return 0;
}

double number_at(const Tensor& tensor, std::int64_t i) {
  switch (tensor.dtype()) {
    case DataType::kFloat32: return tensor.data<float>()[i];
    case DataType::kFloat64: return tensor.data<double>()[i];
    case DataType::kFloat16: return half_to_float(tensor.data<Half>()[i]);
    default: return static_cast<double>(integer_at(tensor, i));
  }
}

std::vector<std::int64_t> integers_of(const Tensor& tensor) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(tensor.numel()));
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    values[static_cast<std::size_t>(i)] = integer_at(tensor, i);
  }
  return values;
}

}  // namespace fovea::runtime
