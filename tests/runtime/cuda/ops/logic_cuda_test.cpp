// Comparisons, boolean logic and Where on CUDA against the CPU reference, broadcasting, on
// float32 and float16 plans, float64 and the integer dtypes.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kComparedTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kInt64,
                                       DataType::kInt32,   DataType::kInt8,    DataType::kUInt8};

// Small integers in every dtype, so that equal elements occur.
void expect_comparison(const std::string& op, DataType dtype) {
  std::uint32_t seed = 1;
  for (Precision p : precisions_for(dtype)) {
    for (const ShapePair& shapes : broadcast_shapes()) {
      EXPECT_TRUE(
          cuda_matches_cpu(NodeBuilder(op).inputs(2).build(),
                           {small_integers(dtype, shapes.a, seed), small_integers(dtype, shapes.b, seed + 1)},
                           {.precision = p}))
          << op << ", " << case_name(dtype, p) << ", " << shapes_string(shapes);
      seed += 2;
    }
  }
}

void expect_comparison_all_types(const std::string& op) {
  for (DataType dtype : kComparedTypes) expect_comparison(op, dtype);
}

TEST(CudaEqual, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_comparison_all_types("Equal");
  expect_comparison("Equal", DataType::kBool);
}

TEST(CudaGreater, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_comparison_all_types("Greater");
}

TEST(CudaLess, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_comparison_all_types("Less");
}

TEST(CudaGreaterOrEqual, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_comparison_all_types("GreaterOrEqual");
}

TEST(CudaLessOrEqual, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_comparison_all_types("LessOrEqual");
}

void expect_logic(const std::string& op) {
  std::uint32_t seed = 1;
  for (const ShapePair& shapes : broadcast_shapes()) {
    EXPECT_TRUE(cuda_matches_cpu(
        NodeBuilder(op).inputs(2).build(),
        {random_tensor(DataType::kBool, shapes.a, seed), random_tensor(DataType::kBool, shapes.b, seed + 1)}))
        << op << ", " << shapes_string(shapes);
    seed += 2;
  }
}

TEST(CudaAnd, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_logic("And");
}

TEST(CudaOr, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_logic("Or");
}

TEST(CudaXor, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_logic("Xor");
}

TEST(CudaNot, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (const Shape& shape :
       {Shape{5, 3, 13, 17}, Shape{1, 3, 13, 17}, Shape{2, 3, 8, 8}, Shape{7}, Shape{}}) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Not").build(), {random_tensor(DataType::kBool, shape, 1)}))
        << shape_string(shape);
  }
}

// The condition, X and Y broadcast three ways; every element size (float16 and bool included).
TEST(CudaWhere, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  const std::vector<std::vector<Shape>> shapes = {
      {{5, 3, 13, 17}, {5, 3, 13, 17}, {5, 3, 13, 17}},
      {{1, 3, 13, 17}, {1, 3, 13, 17}, {}},
      {{3, 1, 1}, {4, 3, 16, 24}, {1, 1, 16, 24}},
      {{13, 1}, {5, 1, 13, 17}, {3, 1, 17}},
      {{2, 3, 8, 8}, {8}, {2, 3, 8, 8}},
  };
  std::uint32_t seed = 1;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kInt64, DataType::kInt32,
                         DataType::kInt8, DataType::kUInt8, DataType::kBool}) {
    for (Precision p : precisions_for(dtype)) {
      for (const auto& s : shapes) {
        EXPECT_TRUE(cuda_matches_cpu(
            NodeBuilder("Where").inputs(3).build(),
            {random_tensor(DataType::kBool, s[0], seed), random_tensor(dtype, s[1], seed + 1, 0, 100),
             random_tensor(dtype, s[2], seed + 2, 0, 100)},
            {.precision = p}))
            << case_name(dtype, p) << ", " << shape_string(s[1]);
        seed += 3;
      }
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
