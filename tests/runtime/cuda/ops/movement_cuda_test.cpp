// The data movement ops on CUDA (Concat, Split, Slice, Gather, Transpose, Tile, Pad, Expand) against
// the CPU reference: odd sizes, batch 1 and N, negative axes, every mode, float32 and float16, and
// the integer and bool dtypes (which the kernels move by element size).
#include <limits>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kOtherTypes[] = {DataType::kInt64, DataType::kInt32, DataType::kInt8,
                                    DataType::kUInt8, DataType::kBool,  DataType::kFloat64};

Tensor data(DataType dtype, Shape shape, std::uint32_t seed) {
  return dtype == DataType::kUInt8 ? random_tensor(dtype, std::move(shape), seed, 0, 250)
                                   : random_tensor(dtype, std::move(shape), seed, -100, 100);
}

Tensor int64s(std::vector<std::int64_t> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return int64_tensor({n}, std::move(values));
}

// Where the inputs after the data live: plan-time constants (shape parameters) or device data.
enum class Rest { kConstant, kDevice };

// The node on float32 data in both precisions, then on every other dtype.
void expect_all_dtypes(const Node& node, const Shape& shape, std::vector<Tensor> rest,
                       Rest where = Rest::kConstant) {
  std::vector<int> constants;
  for (std::size_t i = 1; where == Rest::kConstant && i <= rest.size(); ++i) {
    constants.push_back(static_cast<int>(i));
  }
  std::vector<Tensor> inputs = {data(DataType::kFloat32, shape, 1)};
  inputs.insert(inputs.end(), rest.begin(), rest.end());
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.precision = p, .constant_inputs = constants}));
  }
  for (DataType dtype : kOtherTypes) {
    inputs[0] = data(dtype, shape, 2);
    EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.constant_inputs = constants})) << data_type_name(dtype);
  }
}

// ---- Concat ----

TEST(CudaConcat, MatchesCpuOnEveryAxisAndDtype) {
  FOVEA_REQUIRE_GPU();
  struct Case {
    std::vector<Shape> shapes;
    int axis;
  };
  const Case cases[] = {
      {{{1, 3, 13, 17}, {1, 5, 13, 17}}, 1},            // channels, batch 1
      {{{4, 3, 7, 5}, {4, 2, 7, 5}, {4, 1, 7, 5}}, 1},  // channels, batch N
      {{{2, 3, 13}, {2, 3, 4}}, -1},                    // innermost, odd rows
      {{{3, 8}, {5, 8}}, 0},                            // outermost: whole blocks
      {{{2, 0, 5}, {2, 3, 5}}, 1},                      // an empty part
  };
  for (const Case& c : cases) {
    const Node node =
        NodeBuilder("Concat").inputs(static_cast<int>(c.shapes.size())).attr("axis", c.axis).build();
    for (Precision p : kPrecisions) {
      std::vector<Tensor> inputs;
      for (std::size_t i = 0; i < c.shapes.size(); ++i) {
        inputs.push_back(data(DataType::kFloat32, c.shapes[i], static_cast<std::uint32_t>(i)));
      }
      EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.precision = p}));
    }
    for (DataType dtype : kOtherTypes) {
      std::vector<Tensor> inputs;
      for (std::size_t i = 0; i < c.shapes.size(); ++i) {
        inputs.push_back(data(dtype, c.shapes[i], static_cast<std::uint32_t>(i)));
      }
      EXPECT_TRUE(cuda_matches_cpu(node, inputs)) << data_type_name(dtype);
    }
  }
}

// More parts than one launch takes (64), of different sizes.
TEST(CudaConcat, ManyInputs) {
  FOVEA_REQUIRE_GPU();
  constexpr int kInputs = 70;
  std::vector<Tensor> inputs;
  for (int i = 0; i < kInputs; ++i) {
    inputs.push_back(data(DataType::kFloat32, {2, 1 + i % 3, 5}, static_cast<std::uint32_t>(i)));
  }
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Concat").inputs(kInputs).attr("axis", 1).build(), inputs,
                                 {.precision = p}));
  }
}

// ---- Split ----

TEST(CudaSplit, EqualSizesAndNegativeAxis) {
  FOVEA_REQUIRE_GPU();
  expect_all_dtypes(NodeBuilder("Split", 13).outputs(3).attr("axis", 1).build(), {2, 9, 7, 5}, {});
  expect_all_dtypes(NodeBuilder("Split", 13).outputs(2).attr("axis", -1).build(), {3, 5, 14}, {});
}

TEST(CudaSplit, SizesInputAndNumOutputs) {
  FOVEA_REQUIRE_GPU();
  expect_all_dtypes(NodeBuilder("Split", 13).inputs(2).outputs(3).attr("axis", 2).build(), {2, 3, 13, 5},
                    {int64s({4, 0, 9})});
  expect_all_dtypes(NodeBuilder("Split", 18).outputs(3).attr("axis", 0).attr("num_outputs", 3).build(),
                    {7, 3, 5}, {});
  expect_all_dtypes(
      NodeBuilder("Split", 11).outputs(2).attr("split", std::vector<std::int64_t>{1, 12}).build(), {13, 3},
      {});
}

// ---- Slice ----

TEST(CudaSlice, StartsEndsAxesSteps) {
  FOVEA_REQUIRE_GPU();
  constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();
  const Node node = NodeBuilder("Slice", 13).inputs(5).build();
  struct Case {
    Shape shape;
    std::vector<std::int64_t> starts, ends, axes, steps;
  };
  const Case cases[] = {
      {{1, 8, 13, 17}, {1, 2}, {7, 11}, {1, 2}, {1, 1}},               // channel and row window
      {{4, 8, 13, 17}, {0}, {4}, {1}, {1}},                            // channel block: whole rows
      {{3, 13, 17}, {-1, 12}, {-14, kEnd}, {-1, 1}, {-2, 1}},          // reversed with a step
      {{2, 6, 7, 9}, {1, 0, 3}, {kEnd, 7, -1}, {1, 2, 3}, {2, 3, 2}},  // steps on several axes
      {{5, 6}, {10}, {12}, {0}, {1}},                                  // empty
  };
  for (const Case& c : cases) {
    expect_all_dtypes(node, c.shape, {int64s(c.starts), int64s(c.ends), int64s(c.axes), int64s(c.steps)});
  }
  expect_all_dtypes(NodeBuilder("Slice", 1)
                        .attr("starts", std::vector<std::int64_t>{1, 0})
                        .attr("ends", std::vector<std::int64_t>{3, 5})
                        .build(),
                    {4, 7}, {});
}

// ---- Gather ----

TEST(CudaGather, AxesAndIndexDtypes) {
  FOVEA_REQUIRE_GPU();
  const Tensor i64 = int64_tensor({2, 3}, {0, -1, 2, 4, -5, 1});
  const Tensor i32 = Tensor::from_vector(DataType::kInt32, {4}, std::vector<std::int32_t>{3, 0, -2, 1});
  const Tensor scalar = int64_tensor({}, {-2});
  // Indices are device data here, as in a plan where they come from another node.
  expect_all_dtypes(NodeBuilder("Gather").inputs(2).attr("axis", 1).build(), {3, 5, 7}, {i64}, Rest::kDevice);
  expect_all_dtypes(NodeBuilder("Gather").inputs(2).attr("axis", 0).build(), {5, 13}, {i32}, Rest::kDevice);
  expect_all_dtypes(NodeBuilder("Gather").inputs(2).attr("axis", -1).build(), {2, 3, 5}, {scalar},
                    Rest::kDevice);
  expect_all_dtypes(NodeBuilder("Gather").inputs(2).attr("axis", -1).build(), {4, 9, 6}, {i32},
                    Rest::kDevice);
}

// The CPU rejects an out-of-range index; the kernel cannot (indices stay on the device) and writes
// zeros for its row instead of reading out of bounds.
TEST(CudaGather, OutOfRangeIndexGivesZeros) {
  FOVEA_REQUIRE_GPU();
  const Tensor table = float_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  const auto out =
      run_cuda_node(NodeBuilder("Gather").inputs(2).build(), {table, int64_tensor({3}, {2, 3, -4})});
  ASSERT_EQ(out.size(), 1u);
  const std::vector<float> expected = {5, 6, 0, 0, 0, 0};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(out[0].data<float>()[i], expected[i]) << i;
}

// ---- Transpose ----

TEST(CudaTranspose, LayoutChangesUseTheTiledPath) {
  FOVEA_REQUIRE_GPU();
  const std::vector<std::int64_t> to_nhwc = {0, 2, 3, 1};
  const std::vector<std::int64_t> to_nchw = {0, 3, 1, 2};
  for (const Shape& shape : {Shape{1, 3, 13, 17}, Shape{4, 64, 7, 9}, Shape{2, 33, 31, 65}}) {
    expect_all_dtypes(NodeBuilder("Transpose").attr("perm", to_nhwc).build(), shape, {});
    expect_all_dtypes(NodeBuilder("Transpose").attr("perm", to_nchw).build(), shape, {});
  }
  expect_all_dtypes(NodeBuilder("Transpose").build(), {127, 13}, {});  // 2-D, reversed by default
}

// NCHW -> NHWC of 2- to 4-channel images (a network's RGB input) interleaves whole vectors of each
// plane where the pixels per image fill vectors of every dtype's width (16 bytes); the others (221
// pixels, or 24 of one byte) take the gather.
TEST(CudaTranspose, FewChannelImagesInterleaveWholeVectors) {
  FOVEA_REQUIRE_GPU();
  const std::vector<std::int64_t> to_nhwc = {0, 2, 3, 1};
  for (const Shape& shape : {Shape{2, 3, 16, 24}, Shape{3, 4, 8, 9}, Shape{2, 2, 5, 16}, Shape{1, 3, 4, 6},
                             Shape{3, 3, 13, 17}, Shape{5, 3, 32, 32}}) {
    expect_all_dtypes(NodeBuilder("Transpose").attr("perm", to_nhwc).build(), shape, {});
  }
}

TEST(CudaTranspose, GeneralPermutations) {
  FOVEA_REQUIRE_GPU();
  expect_all_dtypes(NodeBuilder("Transpose").attr("perm", std::vector<std::int64_t>{0, 2, 1, 3}).build(),
                    {2, 5, 7, 8}, {});
  expect_all_dtypes(NodeBuilder("Transpose").attr("perm", std::vector<std::int64_t>{2, 0, 3, 1}).build(),
                    {3, 5, 7, 2}, {});
  expect_all_dtypes(NodeBuilder("Transpose").build(), {2, 3, 4, 5, 3}, {});
  expect_all_dtypes(NodeBuilder("Transpose").attr("perm", std::vector<std::int64_t>{0, 1, 2}).build(),
                    {3, 1, 5}, {});
}

// Nine dims that no merge can reduce: above the kernel's eight.
TEST(CudaTranspose, RejectsRankAboveEight) {
  FOVEA_REQUIRE_GPU();
  const Status status = run_cuda_node_status(NodeBuilder("Transpose").build(),
                                             {random_tensor(DataType::kFloat32, Shape(9, 2), 1)});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported) << status.to_string();
  EXPECT_NE(status.message().find("at most 8"), std::string::npos) << status.to_string();
}

// ---- Tile ----

TEST(CudaTile, Repeats) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("Tile").inputs(2).build();
  expect_all_dtypes(node, {1, 3, 5, 7}, {int64s({4, 1, 2, 3})});
  expect_all_dtypes(node, {2, 13}, {int64s({3, 1})});
  expect_all_dtypes(node, {2, 8}, {int64s({1, 4})});  // whole rows repeated: vector path
  expect_all_dtypes(node, {3, 4}, {int64s({0, 2})});
}

// ---- Pad ----

TEST(CudaPad, EveryMode) {
  FOVEA_REQUIRE_GPU();
  const Tensor pads = int64s({0, 1, 2, 3, 0, 2, 1, 4});  // [2, 5, 7, 9] -> [2, 8, 10, 16]
  for (const char* mode : {"constant", "reflect", "edge"}) {
    expect_all_dtypes(NodeBuilder("Pad", 13).inputs(2).attr("mode", mode).build(), {2, 5, 7, 9}, {pads});
  }
  expect_all_dtypes(NodeBuilder("Pad", 19).inputs(2).attr("mode", "wrap").build(), {2, 5, 7, 9}, {pads});
  // Pads wider than the input: reflection and wrapping go around more than once.
  expect_all_dtypes(NodeBuilder("Pad", 19).inputs(2).attr("mode", "wrap").build(), {3, 2},
                    {int64s({0, 5, 0, 4})});
  expect_all_dtypes(NodeBuilder("Pad", 13).inputs(2).attr("mode", "reflect").build(), {3, 3},
                    {int64s({4, 5, 0, 7})});
}

TEST(CudaPad, CropsAxesAndValues) {
  FOVEA_REQUIRE_GPU();
  // Negative pads crop; padding by multiples of 8 takes the vector path.
  expect_all_dtypes(NodeBuilder("Pad", 13).inputs(2).build(), {3, 13, 17}, {int64s({-1, 2, -3, 0, 8, 5})});
  expect_all_dtypes(NodeBuilder("Pad", 13).inputs(2).build(), {2, 16}, {int64s({0, 8, 1, 16})});
  // Axes (opset 18), negative.
  expect_all_dtypes(NodeBuilder("Pad", 18).inputs(4).omit_input(2).attr("mode", "edge").build(), {2, 5, 7},
                    {int64s({1, 2, 3, 4}), Tensor(), int64s({-1, 0})});
  // The attribute value of opset 2.
  expect_all_dtypes(
      NodeBuilder("Pad", 2).attr("pads", std::vector<std::int64_t>{1, 0, 0, 2}).attr("value", 7.0f).build(),
      {5, 3}, {});
  // A constant value as a plan-time constant and as device data (read by the kernel).
  const Node with_value = NodeBuilder("Pad", 13).inputs(3).build();
  for (Precision p : kPrecisions) {
    const std::vector<Tensor> inputs = {data(DataType::kFloat32, {3, 5, 8}, 3), int64s({0, 1, 0, 1, 2, 8}),
                                        float_tensor({}, {2.5f})};
    EXPECT_TRUE(cuda_matches_cpu(with_value, inputs, {.precision = p, .constant_inputs = {1, 2}}));
    EXPECT_TRUE(cuda_matches_cpu(with_value, inputs, {.precision = p, .constant_inputs = {1}}));
  }
}

// ---- Expand ----

TEST(CudaExpand, Broadcasts) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("Expand").inputs(2).build();
  expect_all_dtypes(node, {3, 1, 5}, {int64s({2, 3, 4, 5})});
  expect_all_dtypes(node, {1, 7, 1, 1}, {int64s({4, 7, 13, 9})});  // per-channel values to NCHW
  expect_all_dtypes(node, {}, {int64s({3, 5})});
  expect_all_dtypes(node, {2, 6}, {int64s({2, 1})});  // the shape broadcasts to the input's
}

}  // namespace
}  // namespace fovea::runtime::testing
