// Compress and Unique on CUDA (cuda/ops/data_dependent.cu), whose outputs are planned at a bound
// and trimmed to the rows the kernels write, against the CPU reference on random odd-sized inputs;
// NonZero and selections along another axis than the first are refused with the reason.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

// A random condition with about one value in two true.
Tensor random_condition(std::int64_t length, std::uint32_t seed) {
  const Tensor bits = random_tensor(DataType::kInt64, {length}, seed, 0, 2);
  std::vector<double> values;
  for (std::int64_t i = 0; i < length; ++i) values.push_back(static_cast<double>(integer_at(bits, i)));
  return tensor_of(DataType::kBool, {length}, values);
}

// Small integers of `dtype`, so that values repeat.
Tensor repeating_values(DataType dtype, const Shape& shape, std::uint32_t seed, double range) {
  const Tensor ints = random_tensor(DataType::kInt64, shape, seed, -range, range);
  std::vector<double> values;
  for (std::int64_t i = 0; i < ints.numel(); ++i) values.push_back(static_cast<double>(integer_at(ints, i)));
  return tensor_of(dtype, shape, values);
}

Node compress_node(std::optional<int> axis) {
  NodeBuilder builder("Compress");
  builder.inputs(2);
  if (axis) builder.attr("axis", *axis);
  return builder.build();
}

TEST(CudaCompress, MatchesCpuFlattenedAndAlongTheFirstAxis) {
  FOVEA_REQUIRE_GPU();
  const Shape shape{37, 5, 13};
  for (const DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kUInt8}) {
    const Tensor x = repeating_values(dtype, shape, 1, 100);
    for (std::int64_t length : {37, 20, 1}) {  // whole, short, one slice
      EXPECT_TRUE(cuda_matches_cpu(compress_node(0), {x, random_condition(length, 2)}))
          << data_type_name(dtype) << ", axis 0, condition of " << length;
    }
    EXPECT_TRUE(cuda_matches_cpu(compress_node(std::nullopt), {x, random_condition(2405, 3)}))
        << data_type_name(dtype) << ", flattened";
    EXPECT_TRUE(cuda_matches_cpu(compress_node(0), {x, tensor_of(DataType::kBool, {3}, {0, 0, 0})}))
        << data_type_name(dtype) << ", nothing kept";
  }
  // A condition longer than the scan's block of 1024.
  EXPECT_TRUE(cuda_matches_cpu(compress_node(std::nullopt),
                               {random_tensor(DataType::kFloat32, {3001}, 4), random_condition(3001, 5)},
                               {.precision = Precision::kFloat16}));
}

TEST(CudaCompress, RefusesAnotherAxisWithTheReason) {
  FOVEA_REQUIRE_GPU();
  EXPECT_TRUE(fails_with(run_cuda_node_status(compress_node(1), {random_tensor(DataType::kFloat32, {3, 5}, 1),
                                                                 random_condition(5, 2)}),
                         StatusCode::kUnsupported, "first dim"));
}

Node unique_node(std::optional<int> axis, int sorted) {
  NodeBuilder builder("Unique", 11);
  builder.outputs(4).attr("sorted", sorted);
  if (axis) builder.attr("axis", *axis);
  return builder.build();
}

TEST(CudaUnique, MatchesCpuSortedAndUnsorted) {
  FOVEA_REQUIRE_GPU();
  for (int sorted : {1, 0}) {
    for (const DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kInt32}) {
      EXPECT_TRUE(
          cuda_matches_cpu(unique_node(std::nullopt, sorted), {repeating_values(dtype, {7, 13}, 6, 20)}))
          << data_type_name(dtype) << ", sorted " << sorted;
    }
    // Rows of a [N, 3] tensor, as box or index tuples, with few enough values that rows repeat.
    EXPECT_TRUE(
        cuda_matches_cpu(unique_node(0, sorted), {repeating_values(DataType::kInt64, {301, 3}, 7, 2)}))
        << "rows, sorted " << sorted;
    EXPECT_TRUE(cuda_matches_cpu(unique_node(std::nullopt, sorted),
                                 {repeating_values(DataType::kFloat32, {1001}, 8, 50)},
                                 {.precision = Precision::kFloat16}))
        << "float16, sorted " << sorted;
  }
}

TEST(CudaUnique, RefusesAnotherAxisWithTheReason) {
  FOVEA_REQUIRE_GPU();
  EXPECT_TRUE(fails_with(
      run_cuda_node_status(unique_node(1, 1), {repeating_values(DataType::kFloat32, {3, 5}, 1, 2)}),
      StatusCode::kUnsupported, "first dim"));
}

TEST(CudaNonZero, IsRefusedWithTheReason) {
  FOVEA_REQUIRE_GPU();
  EXPECT_TRUE(fails_with(
      run_cuda_node_status(NodeBuilder("NonZero").build(), {random_tensor(DataType::kFloat32, {3, 5}, 1)}),
      StatusCode::kUnsupported, "second dim"));
}

}  // namespace
}  // namespace fovea::runtime::testing
