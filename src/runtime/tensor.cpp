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

float half_to_float(Half h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) {  // infinity or NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

Half float_to_half(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity stays infinity, NaN stays a quiet NaN
    return {static_cast<std::uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u))};
  }
  if (magnitude >= 0x477ff000u) {  // rounds to above 65504: infinity
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  }
  if (magnitude < 0x38800000u) {  // below the smallest normal half: a subnormal, rounded to even
    const float value = std::bit_cast<float>(magnitude);
    const float scaled = value * 16777216.0f;  // 2^24: one unit of the subnormal mantissa
    const auto rounded = static_cast<std::uint16_t>(std::nearbyint(scaled));
    return {static_cast<std::uint16_t>(sign | rounded)};
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t rebased = magnitude - (112u << 23);
  const std::uint32_t round_bit = (rebased >> 13) & 1u;
  const std::uint32_t rounded = (rebased + 0xfffu + round_bit) >> 13;
  return {static_cast<std::uint16_t>(sign | rounded)};
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
