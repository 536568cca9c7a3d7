// Inputs shared by the CUDA tests of the pointwise ops: shape pairs that take each path of the
// elementwise kernel (runtime/cuda/elementwise.cuh), and random tensors of any dtype.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {

struct ShapePair {
  Shape a;
  Shape b;
};

inline std::string shapes_string(const ShapePair& shapes) {
  return shape_string(shapes.a) + " with " + shape_string(shapes.b);
}

// Batch N and 1, odd sizes, and every kernel path.
inline const std::vector<ShapePair>& broadcast_shapes() {
  static const std::vector<ShapePair> shapes = {
      {{5, 3, 13, 17}, {5, 3, 13, 17}},  // flat, with a vector tail (3315 elements)
      {{1, 3, 13, 17}, {1, 3, 13, 17}},  // batch 1
      {{2, 3, 8, 8}, {2, 3, 8, 8}},      // flat, no tail
      {{5, 3, 13, 17}, {}},              // a scalar: flat
      {{1}, {3, 13, 17}},                // a one-element tensor first
      {{4, 3, 16, 24}, {3, 1, 1}},       // per-channel bias, innermost a vector multiple: chunked
      {{5, 3, 13, 17}, {3, 1, 1}},       // per-channel bias, odd innermost: scalar path
      {{5, 3, 13, 16}, {16}},            // a row broadcast over the outer dims: chunked
      {{2, 1, 7, 1}, {1, 3, 1, 9}},      // both sides broadcast
      {{3, 1, 32}, {1, 5, 32}},          // both sides broadcast, vector innermost
      {{7, 1}, {1, 16}},                 // an outer product
  };
  return shapes;
}

// Small integers (so comparisons see equal elements) as `dtype`.
inline Tensor small_integers(DataType dtype, const Shape& shape, std::uint32_t seed) {
  const Tensor ints = random_tensor(DataType::kInt64, shape, seed, -3.0, 3.0);
  std::vector<double> values;
  for (std::int64_t i = 0; i < ints.numel(); ++i) values.push_back(number_at(ints, i));
  return tensor_of(dtype, shape, values);
}

// The precisions a test of `dtype` runs in: float32 inputs also run as float16 plans.
inline std::vector<Precision> precisions_for(DataType dtype) {
  if (dtype == DataType::kFloat32) return {Precision::kFloat32, Precision::kFloat16};
  return {Precision::kFloat32};
}

inline std::string case_name(DataType dtype, Precision precision) {
  return fmt::format("{} as {}", data_type_name(dtype), precision_name(precision));
}

}  // namespace fovea::runtime::testing
