// Tensors as the runtime sees them: a dtype, a dense row-major shape and host memory that is either
// owned (shared, so copies are cheap views of the same bytes) or borrowed from an arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "core/image.h"

namespace fovea::runtime {

using Shape = std::vector<std::int64_t>;

// Product of the dimensions; 1 for a scalar (rank 0).
// The most elements a tensor may have: its size in bytes (at most 8 per element) still fits int64.
// Shape inference refuses any output beyond it (evaluate.cpp).
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 60;
std::int64_t element_count(const Shape& shape);
// "[1, 3, 224, 224]"
std::string shape_string(const Shape& shape);
// Row-major strides in elements.
Shape contiguous_strides(const Shape& shape);

using ::fovea::float_to_half;
using ::fovea::Half;
using ::fovea::half_to_float;

class Tensor {
 public:
  Tensor() = default;

  // Owned, zero-filled storage.
  static Tensor allocate(DataType dtype, Shape shape);
  // A view of memory someone else owns (an arena slot); the caller keeps it alive.
  static Tensor borrow(DataType dtype, Shape shape, void* data);
  // A scalar or 1-D constant, mostly for tests and folding.
  template <typename T>
  static Tensor from_vector(DataType dtype, Shape shape, const std::vector<T>& values);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int axis) const { return shape_[static_cast<std::size_t>(axis)]; }
  std::int64_t numel() const { return element_count(shape_); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * data_type_size(dtype_); }
  bool empty_storage() const { return data_ == nullptr; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // Same bytes, another shape with the same element count (Reshape, Flatten, Squeeze...).
  Tensor reshaped(Shape shape) const;
  // An owned copy of the bytes.
  Tensor clone() const;

 private:
  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  std::shared_ptr<std::byte[]> owner_;
  void* data_ = nullptr;
};

template <typename T>
Tensor Tensor::from_vector(DataType dtype, Shape shape, const std::vector<T>& values) {
  Tensor tensor = allocate(dtype, std::move(shape));
  FOVEA_CHECK(static_cast<std::int64_t>(values.size()) == tensor.numel() &&
              sizeof(T) == data_type_size(dtype));
  std::copy(values.begin(), values.end(), tensor.data<T>());
  return tensor;
}

// Reads element i of an integer tensor (int32/int64/uint8/int8/bool) as int64; used for shape,
// axes and index inputs whose dtype the ONNX spec leaves open.
std::int64_t integer_at(const Tensor& tensor, std::int64_t i);
// Reads element i of any numeric tensor as double (scalars such as Clip's min, Pad's value).
double number_at(const Tensor& tensor, std::int64_t i);
// All elements of an integer tensor, as int64.
std::vector<std::int64_t> integers_of(const Tensor& tensor);

}  // namespace fovea::runtime
