// The elementwise arithmetic ops on CUDA against the CPU reference: every kernel path (flat,
// chunked, scalar broadcast), float32 and float16 plans, float64 and the integer dtypes each op
// takes (integers exactly: wrapping, Div by 0 and -1, negative Pow exponents).
#include <algorithm>

#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kIntegerTypes[] = {DataType::kInt64, DataType::kInt32, DataType::kInt8, DataType::kUInt8};

struct Range {
  double low = -1.0;
  double high = 1.0;
};

// A range for integer dtype `dtype`: uint8 shifted to start at 0, with the same width.
Range integer_range(DataType dtype, Range r) {
  if (dtype != DataType::kUInt8) return r;
  return {0.0, std::min(255.0, r.high - r.low)};
}

// Binary op on every broadcast shape pair, a in `a`, b in `b`.
void expect_binary(const std::string& op, DataType dtype, Range a, Range b) {
  std::uint32_t seed = 1;
  for (Precision p : precisions_for(dtype)) {
    for (const ShapePair& shapes : broadcast_shapes()) {
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder(op).inputs(2).build(),
                                   {random_tensor(dtype, shapes.a, seed, a.low, a.high),
                                    random_tensor(dtype, shapes.b, seed + 1, b.low, b.high)},
                                   {.precision = p}))
          << case_name(dtype, p) << ", " << shapes_string(shapes);
      seed += 2;
    }
  }
}

void expect_binary_all_types(const std::string& op, Range b = {}) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_binary(op, dtype, {}, b);
  // Integers over a range that overflows int8 and uint8 products and sums.
  for (DataType dtype : kIntegerTypes) {
    expect_binary(op, dtype, integer_range(dtype, {-120, 120}), integer_range(dtype, {-120, 120}));
  }
}

TEST(CudaAdd, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_binary_all_types("Add");
}

// More elements than one grid-stride pass covers, with a vector tail.
TEST(CudaAdd, LargerThanOneGridPass) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Add").inputs(2).build(),
                                 {random_tensor(DataType::kFloat32, {4, 3, 1023, 1025}, 1),
                                  random_tensor(DataType::kFloat32, {4, 3, 1023, 1025}, 2)},
                                 {.precision = p}));
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Add").inputs(2).build(),
                                 {random_tensor(DataType::kFloat32, {4, 3, 1024, 1024}, 3),
                                  random_tensor(DataType::kFloat32, {3, 1, 1}, 4)},
                                 {.precision = p}));
  }
}

// Beyond the 8 dims the broadcast indexer holds after merging: a clear error, not a wrong result.
TEST(CudaAdd, RejectsBroadcastsOfMoreThanEightDims) {
  FOVEA_REQUIRE_GPU();
  const Status status =
      run_cuda_node_status(NodeBuilder("Add").inputs(2).build(),
                           {random_tensor(DataType::kFloat32, {2, 1, 2, 1, 2, 1, 2, 1, 2}, 1),
                            random_tensor(DataType::kFloat32, {1, 2, 1, 2, 1, 2, 1, 2, 1}, 2)});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("at most 8"), std::string::npos) << status.to_string();
  // Nine dims that merge into fewer run.
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Add").inputs(2).build(),
                               {random_tensor(DataType::kFloat32, {2, 1, 2, 3, 2, 1, 2, 3, 5}, 3),
                                random_tensor(DataType::kFloat32, {2, 3, 5}, 4)}));
}

TEST(CudaSub, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_binary_all_types("Sub");
}

TEST(CudaMul, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_binary_all_types("Mul");
}

TEST(CudaDiv, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  // Divisors away from 0, so a float16 plan's quotients stay in range.
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_binary("Div", dtype, {}, {0.5, 2.0});
  // Integer divisors include 0 (gives 0) and -1 (lowest() / -1 wraps).
  for (DataType dtype : kIntegerTypes) {
    expect_binary("Div", dtype, integer_range(dtype, {-128, 128}), integer_range(dtype, {-3, 3}));
  }
}

TEST(CudaDiv, IntegerEdgeCasesMatchCpu) {
  FOVEA_REQUIRE_GPU();
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Div").inputs(2).build(),
                               {tensor_of(DataType::kInt8, {6}, {-128, -128, 7, -7, 5, 0}),
                                tensor_of(DataType::kInt8, {6}, {-1, 0, 2, 2, -1, 0})}));
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Div").inputs(2).build(),
                               {tensor_of(DataType::kInt32, {4}, {-2147483648.0, 9, -9, 1}),
                                tensor_of(DataType::kInt32, {4}, {-1, 0, 4, 1})}));
}

TEST(CudaPow, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (DataType base : {DataType::kFloat32, DataType::kFloat64}) {
    for (DataType exponent : {base, DataType::kInt64, DataType::kInt32, DataType::kUInt8}) {
      for (Precision p : precisions_for(base)) {
        for (const ShapePair& shapes : broadcast_shapes()) {
          EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Pow").inputs(2).build(),
                                       {random_tensor(base, shapes.a, seed, 0.5, 2.0),
                                        random_tensor(exponent, shapes.b, seed + 1, -2.0, 3.0)},
                                       {.precision = p}))
              << case_name(base, p) << " ^ " << data_type_name(exponent) << ", " << shapes_string(shapes);
          seed += 2;
        }
      }
    }
  }
}

// Integer bases: squaring with wrapping, negative exponents, and floating exponents through
// double, truncated and saturated.
TEST(CudaPow, IntegerBasesMatchCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType base : {DataType::kInt64, DataType::kInt32}) {
    for (DataType exponent : {base, DataType::kInt8, DataType::kFloat32, DataType::kFloat64}) {
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Pow").inputs(2).build(),
                                   {tensor_of(base, {8}, {2, -2, 3, 1, -1, -1, 0, 7}),
                                    tensor_of(exponent, {8}, {10, 3, 40, -5, -3, -4, 2, 0.5})}))
          << data_type_name(base) << " ^ " << data_type_name(exponent);
      EXPECT_TRUE(cuda_matches_cpu(
          NodeBuilder("Pow").inputs(2).build(),
          {random_tensor(base, {5, 3, 13, 17}, 1, -5, 5), random_tensor(exponent, {13, 1}, 2, -2, 6)}))
          << data_type_name(base) << " ^ " << data_type_name(exponent);
    }
  }
}

// Variadic ops on 1..9 inputs (several passes of the fold) of broadcasting shapes.
void expect_variadic(const std::string& op, DataType dtype) {
  const std::vector<Shape> shapes = {{5, 3, 13, 17}, {3, 1, 1}, {17}, {1, 3, 13, 1}, {},
                                     {5, 1, 1, 1},   {13, 17},  {1},  {3, 13, 17}};
  std::uint32_t seed = 1;
  for (Precision p : precisions_for(dtype)) {
    for (std::size_t count : {1, 2, 3, 4, 5, 9}) {
      // float16 rounds the output between passes (4 inputs each): keep those sums short.
      if (p == Precision::kFloat16 && count > 5) continue;
      std::vector<Tensor> inputs;
      for (std::size_t i = 0; i < count; ++i) {
        inputs.push_back(
            dtype == DataType::kFloat32 || dtype == DataType::kFloat64
                ? random_tensor(dtype, shapes[i], seed++)
                : random_tensor(dtype, shapes[i], seed++, dtype == DataType::kUInt8 ? 0 : -100, 100));
      }
      // The first input need not have the output's shape: rotate the big one through.
      std::rotate(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(count / 2), inputs.end());
      EXPECT_TRUE(
          cuda_matches_cpu(NodeBuilder(op).inputs(static_cast<int>(count)).build(), inputs, {.precision = p}))
          << case_name(dtype, p) << ", " << count << " inputs";
    }
  }
}

TEST(CudaMax, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_variadic("Max", dtype);
  for (DataType dtype : kIntegerTypes) expect_variadic("Max", dtype);
}

TEST(CudaMax, PropagatesNan) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Max").inputs(2).build(),
                                 {float_tensor({4}, {NAN, 1, NAN, -1}), float_tensor({4}, {2, NAN, NAN, -3})},
                                 {.precision = p}));
  }
}

TEST(CudaMin, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_variadic("Min", dtype);
  for (DataType dtype : kIntegerTypes) expect_variadic("Min", dtype);
  EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Min").inputs(2).build(),
                               {float_tensor({4}, {NAN, 1, NAN, -1}), float_tensor({4}, {2, NAN, NAN, -3})}));
}

TEST(CudaSum, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_variadic("Sum", dtype);
}

TEST(CudaMean, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) expect_variadic("Mean", dtype);
}

// Unary op on odd shapes (batch N and 1, tails only, a scalar), x in [low, high).
void expect_unary(const Node& node, DataType dtype, Range x) {
  const std::vector<Shape> shapes = {{5, 3, 13, 17}, {1, 3, 13, 17}, {2, 3, 8, 8}, {7}, {}};
  std::uint32_t seed = 1;
  for (Precision p : precisions_for(dtype)) {
    for (const Shape& shape : shapes) {
      EXPECT_TRUE(
          cuda_matches_cpu(node, {random_tensor(dtype, shape, seed++, x.low, x.high)}, {.precision = p}))
          << node.op_type << ", " << case_name(dtype, p) << ", " << shape_string(shape);
    }
  }
}

void expect_float_unary(const std::string& op, Range x) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64})
    expect_unary(NodeBuilder(op).build(), dtype, x);
}

TEST(CudaNeg, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Neg", {-3, 3});
  for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8}) {
    expect_unary(NodeBuilder("Neg").build(), dtype, {-128, 128});  // -(-128) wraps in int8
  }
}

TEST(CudaAbs, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Abs", {-3, 3});
  for (DataType dtype : kIntegerTypes) {
    expect_unary(NodeBuilder("Abs").build(), dtype, integer_range(dtype, {-128, 128}));
  }
}

TEST(CudaSqrt, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Sqrt", {0, 4});
}

TEST(CudaExp, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Exp", {-4, 4});
}

TEST(CudaLog, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Log", {0.05, 8});
}

TEST(CudaReciprocal, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Reciprocal", {0.25, 4});
}

TEST(CudaFloor, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Floor", {-5, 5});
}

TEST(CudaCeil, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Ceil", {-5, 5});
}

TEST(CudaErf, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_unary("Erf", {-3, 3});
}

}  // namespace
}  // namespace fovea::runtime::testing
