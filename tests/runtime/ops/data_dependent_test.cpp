// NonZero, Compress and Unique (ops/data_dependent.cpp): outputs whose size the data decides,
// against results computed by hand (the ONNX documentation's examples among them).
#include <cmath>
#include <cstdint>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor bool_tensor(Shape shape, const std::vector<double>& values) {
  return tensor_of(DataType::kBool, std::move(shape), values);
}

// ---- NonZero ----

TEST(OpNonZero, ListsCoordinatesInRowMajorOrder) {
  const Node node = NodeBuilder("NonZero").build();
  EXPECT_TRUE(tensors_near(run_node(node, {bool_tensor({2, 2}, {1, 0, 1, 1})})[0],
                           int64_tensor({2, 3}, {0, 1, 1, 0, 0, 1})));
  EXPECT_TRUE(
      tensors_near(run_node(node, {float_tensor({5}, {0, 3, 0, -1, 0})})[0], int64_tensor({1, 2}, {1, 3})));
  EXPECT_TRUE(tensors_near(run_node(node, {float_tensor({2, 1}, {0, 0})})[0], int64_tensor({2, 0}, {})));
}

// ---- Compress ----

TEST(OpCompress, KeepsTheSlicesTheConditionSelects) {
  const Tensor x = float_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  auto compress = [&](std::optional<int> axis, const Tensor& condition) {
    NodeBuilder builder("Compress");
    builder.inputs(2);
    if (axis) builder.attr("axis", *axis);
    return run_node(builder.build(), {x, condition})[0];
  };
  EXPECT_TRUE(tensors_near(compress(0, bool_tensor({3}, {0, 1, 1})), float_tensor({2, 2}, {3, 4, 5, 6})));
  EXPECT_TRUE(tensors_near(compress(1, bool_tensor({2}, {0, 1})), float_tensor({3, 1}, {2, 4, 6})));
  EXPECT_TRUE(tensors_near(compress(-1, bool_tensor({2}, {0, 1})), float_tensor({3, 1}, {2, 4, 6})));
  // Without an axis the input is flattened; a short condition leaves the rest out.
  EXPECT_TRUE(
      tensors_near(compress(std::nullopt, bool_tensor({5}, {0, 1, 0, 0, 1})), float_tensor({2}, {2, 5})));
  EXPECT_TRUE(tensors_near(compress(0, bool_tensor({1}, {1})), float_tensor({1, 2}, {1, 2})));
  EXPECT_TRUE(tensors_near(compress(0, bool_tensor({3}, {0, 0, 0})), float_tensor({0, 2}, {})));
}

// ---- Unique ----

std::vector<Tensor> unique(const Tensor& x, std::optional<int> axis, int sorted) {
  NodeBuilder builder("Unique", 11);
  builder.outputs(4).attr("sorted", sorted);
  if (axis) builder.attr("axis", *axis);
  return run_node(builder.build(), {x});
}

TEST(OpUnique, FindsDistinctValuesSortedOrInFirstOrder) {
  const Tensor x = float_tensor({6}, {2, 1, 1, 3, 4, 3});
  const std::vector<Tensor> sorted = unique(x, std::nullopt, 1);
  EXPECT_TRUE(tensors_near(sorted[0], float_tensor({4}, {1, 2, 3, 4})));
  EXPECT_TRUE(tensors_near(sorted[1], int64_tensor({4}, {1, 0, 3, 4})));
  EXPECT_TRUE(tensors_near(sorted[2], int64_tensor({6}, {1, 0, 0, 2, 3, 2})));
  EXPECT_TRUE(tensors_near(sorted[3], int64_tensor({4}, {2, 1, 2, 1})));
  const std::vector<Tensor> unsorted = unique(x, std::nullopt, 0);
  EXPECT_TRUE(tensors_near(unsorted[0], float_tensor({4}, {2, 1, 3, 4})));
  EXPECT_TRUE(tensors_near(unsorted[1], int64_tensor({4}, {0, 1, 3, 4})));
  EXPECT_TRUE(tensors_near(unsorted[2], int64_tensor({6}, {0, 1, 1, 2, 3, 2})));
  EXPECT_TRUE(tensors_near(unsorted[3], int64_tensor({4}, {1, 2, 2, 1})));
}

TEST(OpUnique, ComparesWholeSlicesAlongTheAxis) {
  const Tensor x = float_tensor({3, 3}, {2, 3, 4, 1, 0, 0, 2, 3, 4});
  const std::vector<Tensor> rows = unique(x, 0, 1);
  EXPECT_TRUE(tensors_near(rows[0], float_tensor({2, 3}, {1, 0, 0, 2, 3, 4})));
  EXPECT_TRUE(tensors_near(rows[1], int64_tensor({2}, {1, 0})));
  EXPECT_TRUE(tensors_near(rows[2], int64_tensor({3}, {1, 0, 1})));
  EXPECT_TRUE(tensors_near(rows[3], int64_tensor({2}, {1, 2})));
  // Columns compare row by row: (0, 5) before (1, 2), which occurs twice.
  const std::vector<Tensor> columns = unique(float_tensor({2, 3}, {1, 0, 1, 2, 5, 2}), -1, 1);
  EXPECT_TRUE(tensors_near(columns[0], float_tensor({2, 2}, {0, 1, 5, 2})));
  EXPECT_TRUE(tensors_near(columns[1], int64_tensor({2}, {1, 0})));
  EXPECT_TRUE(tensors_near(columns[2], int64_tensor({3}, {1, 0, 1})));
  EXPECT_TRUE(tensors_near(columns[3], int64_tensor({2}, {1, 2})));
}

TEST(OpUnique, RanksNanAboveNumbersAndAsOneValue) {
  const std::vector<Tensor> out = unique(float_tensor({4}, {NAN, 1, NAN, -1}), std::nullopt, 1);
  ASSERT_EQ(out[0].numel(), 3);
  EXPECT_EQ(out[0].data<float>()[0], -1);
  EXPECT_EQ(out[0].data<float>()[1], 1);
  EXPECT_TRUE(std::isnan(out[0].data<float>()[2]));
  EXPECT_TRUE(tensors_near(out[3], int64_tensor({3}, {1, 1, 2})));
}

// Found by the loader's fuzzer: an axis on a scalar input, which has none.
TEST(OpUnique, AnAxisOnAScalarIsRefused) {
  for (const char* op : {"Unique", "Compress"}) {
    SCOPED_TRACE(op);
    NodeBuilder builder(op, 11);
    builder.attr("axis", 0);
    std::vector<Tensor> inputs = {float_tensor({}, {1})};
    if (std::string(op) == "Compress") {
      builder.inputs(2);
      inputs.push_back(bool_tensor({1}, {1}));
    } else {
      builder.outputs(4);
    }
    const Status status = run_node_status(builder.build(), inputs);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("scalar, which has no axis"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
