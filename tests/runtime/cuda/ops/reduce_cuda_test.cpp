// The Reduce family and ArgMax / ArgMin on CUDA against the CPU reference: every kernel layout
// (rows by warp and by block, columns, several reduced runs), keepdims, negative axes, axes as an
// attribute and as an input, float32/16 and the other dtypes each op accepts; plus the host-side
// geometry the kernels are chosen by.
#include <string>

#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/ops/reduce_util.h"

namespace fovea::runtime::testing {
namespace {

struct AxesCase {
  Shape shape;
  std::vector<std::int64_t> axes;
};

// One case per kernel layout, odd sizes, batch 1 and N.
const AxesCase kAxesCases[] = {
    {{5, 3, 13, 17}, {-1}},     // rows, a warp per row
    {{2, 3, 1100}, {2}},        // rows, a block per row
    {{1, 21, 9, 7}, {1}},       // columns, batch 1
    {{4, 21, 9, 7}, {-3}},      // columns, batch N
    {{6, 300, 3}, {1}},         // columns: narrow inner, long runs
    {{3, 5, 7, 2}, {0, 2}},     // two reduced runs: strided
    {{3, 5, 7}, {}},            // everything
    {{2, 1, 7, 1, 5}, {1, 3}},  // only size-1 dims: a copy through the finish step
    {{13, 127}, {0, 1}},        // everything, by axes
};

// Axes are an input from opset 13 (ReduceSum) or 18 (the others), an attribute before.
::testing::AssertionResult reduce_matches(const std::string& op, int opset, const AxesCase& c, int keepdims,
                                          const Tensor& x, Precision precision) {
  const bool axes_input = opset >= (op == "ReduceSum" ? 13 : 18);
  NodeBuilder builder(op, opset);
  builder.attr("keepdims", keepdims);
  std::vector<Tensor> inputs{x};
  if (axes_input) {
    builder.inputs(2);
    inputs.push_back(int64_tensor({static_cast<std::int64_t>(c.axes.size())}, c.axes));
  } else if (!c.axes.empty()) {
    builder.attr("axes", c.axes);
  }
  return cuda_matches_cpu(builder.build(), inputs,
                          {.precision = precision,
                           .constant_inputs = axes_input ? std::vector<int>{1} : std::vector<int>{},
                           .accuracy = Accuracy::kAccumulating});
}

// Every layout, keepdims 0 and 1, float32 and float16, at opset 17 and 18.
void expect_float_reductions(const std::string& op, double low, double high) {
  std::uint32_t seed = 1;
  for (const AxesCase& c : kAxesCases) {
    const Tensor x = random_tensor(DataType::kFloat32, c.shape, seed++, low, high);
    for (Precision p : kPrecisions) {
      for (int keepdims : {0, 1}) {
        EXPECT_TRUE(reduce_matches(op, 17, c, keepdims, x, p)) << shape_string(c.shape);
      }
      EXPECT_TRUE(reduce_matches(op, 18, c, 1, x, p)) << shape_string(c.shape);
    }
  }
}

// float64 and the integer dtypes on a rows, a columns and a strided case (integers exactly), with
// values in [-bound, bound) ([0, bound) for uint8).
void expect_other_dtypes(const std::string& op, bool integers, double bound = 20) {
  std::vector<DataType> dtypes{DataType::kFloat64};
  if (integers)
    dtypes.insert(dtypes.end(), {DataType::kInt64, DataType::kInt32, DataType::kInt8, DataType::kUInt8});
  std::uint32_t seed = 100;
  for (DataType dtype : dtypes) {
    const bool is_unsigned = dtype == DataType::kUInt8;
    for (const AxesCase& c : {kAxesCases[0], kAxesCases[3], kAxesCases[5]}) {
      const Tensor x = random_tensor(dtype, c.shape, seed++, is_unsigned ? 0.0 : -bound, bound);
      EXPECT_TRUE(reduce_matches(op, 17, c, 1, x, Precision::kFloat32))
          << data_type_name(dtype) << " " << shape_string(c.shape);
    }
  }
}

TEST(CudaReduceSum, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceSum", -1, 1);
  expect_other_dtypes("ReduceSum", true);
}

TEST(CudaReduceSum, NoopWithEmptyAxesCopies) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("ReduceSum").inputs(2).attr("noop_with_empty_axes", 1).build();
  EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, {3, 5}, 7), int64_tensor({0}, {})},
                               {.constant_inputs = {1}}));
}

TEST(CudaReduceMean, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceMean", -1, 1);
  expect_other_dtypes("ReduceMean", true);
}

TEST(CudaReduceMax, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceMax", -1, 1);
  expect_other_dtypes("ReduceMax", true);
}

TEST(CudaReduceMin, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceMin", -1, 1);
  expect_other_dtypes("ReduceMin", true);
}

TEST(CudaReduceProd, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  // Near 1, so that products over a thousand terms neither vanish nor overflow.
  expect_float_reductions("ReduceProd", 0.99, 1.01);
  // Integer products of at most 21 factors of |x| <= 3 stay within int64 (the CPU's accumulator),
  // then narrow to int8 and uint8 the same way on both.
  expect_other_dtypes("ReduceProd", true, 3);
}

TEST(CudaReduceL1, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceL1", -1, 1);
  expect_other_dtypes("ReduceL1", true);
}

TEST(CudaReduceL2, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceL2", -1, 1);
  expect_other_dtypes("ReduceL2", false);
}

TEST(CudaReduceLogSum, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceLogSum", 0.1, 1);
  expect_other_dtypes("ReduceLogSum", false);
}

TEST(CudaReduceLogSumExp, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceLogSumExp", -1, 1);
  expect_other_dtypes("ReduceLogSumExp", false);
}

TEST(CudaReduceLogSumExp, LargeInputsDoNotOverflowFloat) {
  FOVEA_REQUIRE_GPU();
  // exp(200) overflows float; the CPU sums in double, CUDA subtracts the running maximum.
  EXPECT_TRUE(cuda_matches_cpu(
      NodeBuilder("ReduceLogSumExp").attr("axes", std::vector<std::int64_t>{1}).build(),
      {random_tensor(DataType::kFloat32, {3, 50}, 9, 150, 200)}, {.accuracy = Accuracy::kAccumulating}));
}

TEST(CudaReduceSumSquare, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_float_reductions("ReduceSumSquare", -1, 1);
  expect_other_dtypes("ReduceSumSquare", true);
}

TEST(CudaReduceSum, RejectsMoreRunsThanItWalks) {
  FOVEA_REQUIRE_GPU();
  // Alternating axes of a rank-10 input leave 10 runs of reduced and kept dims.
  const Shape shape{2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  const Status status = run_cuda_node_status(
      NodeBuilder("ReduceSum").inputs(2).build(),
      {random_tensor(DataType::kFloat32, shape, 3), int64_tensor({5}, {0, 2, 4, 6, 8})}, {1});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported) << status.to_string();
  EXPECT_NE(status.to_string().find("10 runs"), std::string::npos) << status.to_string();
}

struct ArgCase {
  Shape shape;
  int axis;
};

// Rows by warp and by block, columns, batch 1, and an axis of size 1.
const ArgCase kArgCases[] = {
    {{5, 3, 13, 17}, -1}, {{2, 1500}, 1}, {{1, 21, 9, 7}, 1},
    {{4, 21, 9, 7}, 1},   {{3, 1, 7}, 1}, {{7, 5, 3}, 0},
};

void expect_arg(const std::string& op) {
  std::uint32_t seed = 200;
  for (const ArgCase& c : kArgCases) {
    for (int last : {0, 1}) {
      for (int keepdims : {0, 1}) {
        const Node node = NodeBuilder(op)
                              .attr("axis", c.axis)
                              .attr("keepdims", keepdims)
                              .attr("select_last_index", last)
                              .build();
        for (Precision p : kPrecisions) {
          EXPECT_TRUE(
              cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, c.shape, seed++)}, {.precision = p}))
              << shape_string(c.shape) << " last " << last;
        }
        // Few distinct values: ties everywhere, broken by first or last index.
        for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8, DataType::kUInt8}) {
          EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(dtype, c.shape, seed++, 0, 4)}))
              << data_type_name(dtype) << " " << shape_string(c.shape) << " last " << last;
        }
        EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat64, c.shape, seed++)}));
      }
    }
  }
}

TEST(CudaArgMax, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_arg("ArgMax");
}

TEST(CudaArgMin, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_arg("ArgMin");
}

// Host-side: the geometry that picks the kernel (no GPU needed).
TEST(CudaReduceGeometry, MergesRunsAndDropsUnitDims) {
  const ops::ReduceGeometry columns = ops::reduce_geometry({4, 21, 7, 9}, {false, true, false, false});
  EXPECT_EQ(columns.dims, (std::vector<std::int64_t>{4, 21, 63}));
  EXPECT_TRUE(columns.single_run());
  EXPECT_EQ(columns.outer, 4);
  EXPECT_EQ(columns.length, 21);
  EXPECT_EQ(columns.inner, 63);

  const ops::ReduceGeometry rows = ops::reduce_geometry({4, 1, 7, 9}, {false, true, true, true});
  EXPECT_EQ(rows.dims, (std::vector<std::int64_t>{4, 63}));
  EXPECT_EQ(rows.outer, 4);
  EXPECT_EQ(rows.length, 63);
  EXPECT_EQ(rows.inner, 1);

  const ops::ReduceGeometry strided = ops::reduce_geometry({3, 5, 1, 7, 2}, {true, false, true, true, false});
  EXPECT_EQ(strided.dims, (std::vector<std::int64_t>{3, 5, 7, 2}));
  EXPECT_EQ(strided.reduced, (std::vector<bool>{true, false, true, false}));
  EXPECT_FALSE(strided.single_run());
  EXPECT_EQ(strided.length, 21);

  const ops::ReduceGeometry nothing = ops::reduce_geometry({2, 1, 5}, {false, true, false});
  EXPECT_TRUE(nothing.single_run());
  EXPECT_EQ(nothing.outer, 10);
  EXPECT_EQ(nothing.length, 1);
  EXPECT_EQ(nothing.inner, 1);

  const ops::ReduceGeometry empty_run = ops::reduce_geometry({3, 0, 4}, {false, true, false});
  EXPECT_EQ(empty_run.outer, 3);
  EXPECT_EQ(empty_run.length, 0);
  EXPECT_EQ(empty_run.inner, 4);
}

}  // namespace
}  // namespace fovea::runtime::testing
