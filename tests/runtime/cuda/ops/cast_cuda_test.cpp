// Cast on CUDA against the CPU reference for every pair of dtypes: saturation of floating to
// integer, NaN and infinities, integer wrapping, float16 rounding (double rounds through float),
// bool as "nonzero".
#include <cmath>
#include <limits>

#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kAllTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                  DataType::kInt64,   DataType::kInt32,   DataType::kInt8,
                                  DataType::kUInt8,   DataType::kBool};

// ONNX TensorProto data type codes.
std::int64_t onnx_code(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return 1;
    case DataType::kUInt8: return 2;
    case DataType::kInt8: return 3;
    case DataType::kInt32: return 6;
    case DataType::kInt64: return 7;
    case DataType::kBool: return 9;
    case DataType::kFloat16: return 10;
    case DataType::kFloat64: return 11;
  }
  return 0;
}

bool is_floating(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || dtype == DataType::kFloat16;
}

// Values that reach every rule: out of every integer range, fractions of both signs, zeros.
Tensor edge_values(DataType dtype) {
  std::vector<double> values = {0,   1,    -1,  2.5, -2.5, 0.75, -0.75, 127,
                                128, -129, 255, 256, 1e5,  -1e5, 3e9,   -3e9};
  if (!is_floating(dtype)) {
    // Integers: keep the ones the dtype holds (the rest are wrapped by the generator otherwise).
    std::vector<double> kept;
    for (double v : values) {
      const double t = std::trunc(v);
      const bool fits = dtype == DataType::kBool    ? (t == 0 || t == 1)
                        : dtype == DataType::kUInt8 ? (t >= 0 && t <= 255)
                        : dtype == DataType::kInt8  ? (t >= -128 && t <= 127)
                        : dtype == DataType::kInt32 ? std::abs(t) < 2e9
                                                    : true;
      if (fits && t == v) kept.push_back(v);
    }
    return tensor_of(dtype, {static_cast<std::int64_t>(kept.size())}, kept);
  }
  if (dtype != DataType::kFloat16) {
    values.insert(values.end(), {1e10, -1e10, 1e20, -1e20, 70000, -70000, 65519, 65520, 1.0 + 1.0 / 4096,
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(), std::nan("")});
  }
  return tensor_of(dtype, {static_cast<std::int64_t>(values.size())}, values);
}

struct Range {
  double low;
  double high;
};

// Random values across the range of `dtype` (beyond every integer range for the floating ones).
Range random_range(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return {-128, 128};
    case DataType::kUInt8: return {0, 256};
    case DataType::kBool: return {0, 1};
    default: return {-300, 300};
  }
}

TEST(CudaCast, EveryPairMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (DataType from : kAllTypes) {
    for (DataType to : kAllTypes) {
      const Node node = NodeBuilder("Cast").attr("to", onnx_code(to)).build();
      EXPECT_TRUE(cuda_matches_cpu(node, {edge_values(from)}))
          << data_type_name(from) << " -> " << data_type_name(to) << ", edge values";
      const Range range = random_range(from);
      for (const Shape& shape : {Shape{5, 3, 13, 17}, Shape{1, 3, 13, 16}, Shape{}}) {
        EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(from, shape, seed++, range.low, range.high)}))
            << data_type_name(from) << " -> " << data_type_name(to) << ", " << shape_string(shape);
      }
    }
  }
}

// In a float16 plan, float32 inputs arrive as float16.
TEST(CudaCast, Float16PlansMatchCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType to : kAllTypes) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Cast").attr("to", onnx_code(to)).build(),
                                 {random_tensor(DataType::kFloat32, {5, 3, 13, 17}, 1, -300, 300)},
                                 {.precision = Precision::kFloat16}))
        << data_type_name(to);
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
