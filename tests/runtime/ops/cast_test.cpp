#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

// ONNX TensorProto data type codes, as Cast's `to` holds them.
constexpr std::int64_t kOnnxFloat = 1;
constexpr std::int64_t kOnnxUInt8 = 2;
constexpr std::int64_t kOnnxInt8 = 3;
constexpr std::int64_t kOnnxInt32 = 6;
constexpr std::int64_t kOnnxInt64 = 7;
constexpr std::int64_t kOnnxString = 8;
constexpr std::int64_t kOnnxBool = 9;
constexpr std::int64_t kOnnxFloat16 = 10;
constexpr std::int64_t kOnnxDouble = 11;
constexpr std::int64_t kOnnxBFloat16 = 16;

struct Target {
  std::int64_t onnx;
  DataType dtype;
};
constexpr Target kTargets[] = {{kOnnxFloat, DataType::kFloat32},   {kOnnxDouble, DataType::kFloat64},
                               {kOnnxFloat16, DataType::kFloat16}, {kOnnxInt64, DataType::kInt64},
                               {kOnnxInt32, DataType::kInt32},     {kOnnxInt8, DataType::kInt8},
                               {kOnnxUInt8, DataType::kUInt8},     {kOnnxBool, DataType::kBool}};

Tensor cast(const Tensor& in, std::int64_t to) {
  return run_node(NodeBuilder("Cast").attr("to", to).build(), {in})[0];
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(OpCast, EveryPairOfDtypesOnValuesAllCanHold) {
  const std::vector<double> values = {0, 1, 2, 7, 42, 100, 127, 3, 0, 5, 64};
  for (const Target& from : kTargets) {
    const Tensor in = tensor_of(from.dtype, {11}, values);
    for (const Target& to : kTargets) {
      const Tensor out = cast(in, to.onnx);
      const Tensor expected = reference_map(to.dtype, {11}, {in}, [](const auto& v) { return v[0]; });
      EXPECT_TRUE(tensors_near(out, expected))
          << data_type_name(from.dtype) << " -> " << data_type_name(to.dtype);
    }
  }
}

TEST(OpCast, FloatToIntTruncatesTowardZeroAndSaturates) {
  const Tensor in = float_tensor({8}, {-2.7f, 2.7f, -0.5f, 1e10f, -1e10f, kNan, kInf, -kInf});
  constexpr double kMax = std::numeric_limits<std::int32_t>::max();
  constexpr double kMin = std::numeric_limits<std::int32_t>::min();
  // NaN -> 0 is fovea's choice where ONNX leaves it to the implementation.
  EXPECT_TRUE(tensors_near(cast(in, kOnnxInt32),
                           tensor_of(DataType::kInt32, {8}, {-2, 2, 0, kMax, kMin, 0, kMax, kMin})));
  EXPECT_TRUE(tensors_near(cast(float_tensor({4}, {-5, 300, 12.9f, 255.5f}), kOnnxUInt8),
                           tensor_of(DataType::kUInt8, {4}, {0, 255, 12, 255})));
  const Tensor huge = cast(float_tensor({3}, {1e19f, -9.3e18f, 123456789.0f}), kOnnxInt64);
  EXPECT_EQ(huge.data<std::int64_t>()[0], std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(huge.data<std::int64_t>()[1], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(huge.data<std::int64_t>()[2], 123456792);  // the float nearest 123456789
  EXPECT_TRUE(tensors_near(cast(tensor_of(DataType::kFloat64, {3}, {-128.9, 127.9, 1e300}), kOnnxInt8),
                           tensor_of(DataType::kInt8, {3}, {-128, 127, 127})));
}

TEST(OpCast, ToBoolIsNonzero) {
  EXPECT_TRUE(tensors_near(cast(float_tensor({5}, {0, -0.0f, 0.5f, kNan, -3}), kOnnxBool),
                           tensor_of(DataType::kBool, {5}, {0, 0, 1, 1, 1})));
  EXPECT_TRUE(tensors_near(cast(int64_tensor({3}, {0, 256, -1}), kOnnxBool),
                           tensor_of(DataType::kBool, {3}, {0, 1, 1})));
}

TEST(OpCast, BetweenIntegersWraps) {
  EXPECT_TRUE(tensors_near(cast(int64_tensor({3}, {300, -129, 5}), kOnnxInt8),
                           tensor_of(DataType::kInt8, {3}, {44, 127, 5})));
  EXPECT_TRUE(tensors_near(cast(tensor_of(DataType::kInt8, {2}, {-1, -128}), kOnnxUInt8),
                           tensor_of(DataType::kUInt8, {2}, {255, 128})));
}

TEST(OpCast, Float16RoundsAndSaturatesToInfinity) {
  const Tensor half = cast(float_tensor({4}, {1.5f, 65504, 1e6f, 0.1f}), kOnnxFloat16);
  ASSERT_EQ(half.dtype(), DataType::kFloat16);
  const Tensor back = cast(half, kOnnxFloat);
  EXPECT_EQ(back.data<float>()[0], 1.5f);
  EXPECT_EQ(back.data<float>()[1], 65504.0f);
  EXPECT_TRUE(std::isinf(back.data<float>()[2]));
  EXPECT_NEAR(back.data<float>()[3], 0.1f, 1e-4);  // float16's spacing near 0.1 is 6e-5
  EXPECT_TRUE(
      tensors_near(cast(half, kOnnxInt32), tensor_of(DataType::kInt32, {4}, {1, 65504, 2147483647, 0})));
}

TEST(OpCast, RandomFloatsToDoubleAndBack) {
  const Tensor in = random_tensor(DataType::kFloat32, {3, 13, 17}, 4, -1e6, 1e6);
  EXPECT_TRUE(tensors_near(cast(cast(in, kOnnxDouble), kOnnxFloat), in, 0, 0));
}

TEST(OpCast, KeepsPartlyUnknownDims) {
  const Dims dims = {Dim::unknown("N"), Dim::known_size(3)};
  const auto types =
      infer_types(NodeBuilder("Cast").attr("to", kOnnxInt64).build(), {ValueType{DataType::kFloat32, dims}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ((*types)[0].dtype, DataType::kInt64);
  EXPECT_EQ(dims_string(*(*types)[0].dims), dims_string(dims));
}

TEST(OpCast, RejectsUnsupportedAndMissingTargets) {
  const Tensor in = float_tensor({1}, {1});
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Cast").attr("to", kOnnxString).build(), {in}),
                         StatusCode::kUnsupported, "unsupported element type STRING"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Cast").attr("to", kOnnxBFloat16).build(), {in}),
                         StatusCode::kUnsupported, "unsupported element type BFLOAT16"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Cast").attr("to", std::int64_t{999}).build(), {in}),
                         StatusCode::kUnsupported, "code 999"));
  EXPECT_TRUE(fails_with(run_node_status(NodeBuilder("Cast").build(), {in}), StatusCode::kInvalidArgument,
                         "missing required attribute 'to'"));
}

}  // namespace
}  // namespace fovea::runtime::testing
