#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

bool has_message(const Status& status, const std::string& part) {
  return status.message().find(part) != std::string::npos;
}

Dims unknown_dims(std::size_t rank) {
  return Dims(rank, Dim::unknown());
}

TEST(OpReshape, CopiesDimForZeroAndInfersMinusOne) {
  const Tensor in = random_tensor(DataType::kInt32, {2, 3, 5, 7}, 1, -50, 50);
  const auto out = run_node(NodeBuilder("Reshape").inputs(2).build(), {in, int64_tensor({3}, {0, -1, 7})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 15, 7}));
  EXPECT_TRUE(tensors_near(out[0], in.reshaped({2, 15, 7})));
}

TEST(OpReshape, AllowZeroKeepsLiteralZero) {
  const Tensor in = Tensor::allocate(DataType::kFloat32, {0, 3});
  const auto out = run_node(NodeBuilder("Reshape", 14).inputs(2).attr("allowzero", 1).build(),
                            {in, int64_tensor({2}, {3, 0})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 0}));
}

TEST(OpReshape, MovesFloat16) {
  const Tensor in = random_tensor(DataType::kFloat16, {4, 6}, 2);
  const auto out = run_node(NodeBuilder("Reshape").inputs(2).build(), {in, int64_tensor({2}, {-1, 3})});
  EXPECT_TRUE(tensors_near(out[0], in.reshaped({8, 3})));
}

TEST(OpReshape, InfersRankFromShapeLengthWhenValueUnknown) {
  const auto types = infer_types(
      NodeBuilder("Reshape").inputs(2).build(),
      {ValueType{DataType::kFloat32, dims_of({2, 3})}, ValueType{DataType::kInt64, dims_of({4})}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ(types.value()[0].dims, std::optional(unknown_dims(4)));
}

TEST(OpReshape, RejectsAShapeLengthOverTheMaximumRank) {
  // Found by the fuzzer: a declared shape length of 2^30 sized a vector of that many dims.
  const auto types = infer_types(
      NodeBuilder("Reshape").inputs(2).build(),
      {ValueType{DataType::kFloat32, dims_of({2, 3})}, ValueType{DataType::kInt64, dims_of({1 << 30})}});
  EXPECT_TRUE(fails_with(types.status(), StatusCode::kUnsupported, "over the maximum"));
}

TEST(OpReshape, RejectsAnElementCountPastInt64) {
  // Found by the fuzzer: dims whose product overflows int64 (undefined behaviour before).
  const Dims in{Dim::known_size(std::int64_t{1} << 58), Dim::known_size(45)};
  const Tensor shape = int64_tensor({1}, {-1});
  const auto types = infer_node(
      nullptr, NodeBuilder("Reshape").inputs(2).build(),
      {ValueType{DataType::kFloat32, in}, ValueType{DataType::kInt64, dims_of({1})}}, {nullptr, &shape});
  EXPECT_TRUE(fails_with(types.status(), StatusCode::kInvalidArgument, "more elements than an int64"));
  const auto flattened =
      infer_types(NodeBuilder("Flatten").attr("axis", 0).build(), {ValueType{DataType::kFloat32, in}});
  EXPECT_TRUE(fails_with(flattened.status(), StatusCode::kInvalidArgument, "more elements than an int64"));
}

TEST(InferredShapes, AnOutputPastTheElementLimitIsRefusedNamingTheNode) {
  // Every op's inferred outputs are checked (evaluate.cpp): the fuzzer found products past int64.
  // Add broadcasts [2^30, 1] with [2^31] into [2^30, 2^31], 2^61 elements.
  const auto types = infer_types(NodeBuilder("Add").inputs(2).build(),
                                 {ValueType{DataType::kFloat32, dims_of({std::int64_t{1} << 30, 1})},
                                  ValueType{DataType::kFloat32, dims_of({std::int64_t{1} << 31})}});
  EXPECT_TRUE(fails_with(types.status(), StatusCode::kInvalidArgument, "more than 2^60 elements"));
  EXPECT_TRUE(fails_with(types.status(), StatusCode::kInvalidArgument, "(Add)"));
}

// A size the data drives (Expand to a run-time shape) past the host's memory is refused naming the
// node when it runs, instead of an allocation that ends the process.
TEST(OpExpand, AnOutputPastTheHostsMemoryIsRefusedNamingTheNode) {
  const Node node = NodeBuilder("Expand").inputs(2).build();
  const Tensor shape =
      int64_tensor({3}, {std::int64_t{1} << 20, std::int64_t{1} << 20, std::int64_t{1} << 12});
  const auto outputs = evaluate_node(nullptr, node, {float_tensor({1}, {1}), shape}, heap_allocator());
  ASSERT_FALSE(outputs.is_ok());
  EXPECT_TRUE(fails_with(outputs.status(), StatusCode::kResourceExhausted, "(Expand)"));
  EXPECT_TRUE(fails_with(outputs.status(), StatusCode::kResourceExhausted, "of memory"));
}

TEST(OpReshape, KeepsSymbolicDimCopiedByZero) {
  const Dims in{Dim::unknown("batch"), Dim::known_size(4), Dim::known_size(6)};
  const Tensor shape = int64_tensor({3}, {0, 24, 1});
  const Node node = NodeBuilder("Reshape").inputs(2).build();
  const auto types = infer_node(
      nullptr, node, {ValueType{DataType::kFloat32, in}, ValueType{DataType::kInt64, dims_of({3})}},
      {nullptr, &shape});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ(types.value()[0].dims,
            std::optional(Dims{Dim::unknown("batch"), Dim::known_size(24), Dim::known_size(1)}));
}

TEST(OpReshape, RejectsTwoInferredDimsAndCountMismatch) {
  const Tensor in = random_tensor(DataType::kFloat32, {2, 6}, 3);
  const Node node = NodeBuilder("Reshape").inputs(2).build();
  const Status two = run_node_status(node, {in, int64_tensor({2}, {-1, -1})});
  EXPECT_EQ(two.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(two, "more than one -1")) << two.message();
  const Status count = run_node_status(node, {in, int64_tensor({2}, {5, 2})});
  EXPECT_TRUE(has_message(count, "cannot reshape")) << count.message();
  const Status type = run_node_status(node, {in, Tensor::from_vector<float>(DataType::kFloat32, {1}, {12})});
  EXPECT_TRUE(has_message(type, "type mismatch")) << type.message();
}

TEST(OpFlatten, SplitsAtPositiveAndNegativeAxes) {
  const Tensor in = random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 4);
  const std::vector<std::pair<int, Shape>> cases = {{0, {1, 210}}, {1, {2, 105}}, {3, {30, 7}},
                                                    {4, {210, 1}}, {-1, {30, 7}}, {-4, {1, 210}}};
  for (const auto& [axis, shape] : cases) {
    const auto out = run_node(NodeBuilder("Flatten").attr("axis", axis).build(), {in});
    EXPECT_TRUE(tensors_near(out[0], in.reshaped(shape))) << "axis " << axis;
  }
}

TEST(OpFlatten, RejectsAxisOutOfRange) {
  const Status status = run_node_status(NodeBuilder("Flatten").attr("axis", 5).build(),
                                        {random_tensor(DataType::kFloat32, {2, 3}, 5)});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "out of range")) << status.message();
}

TEST(OpSqueeze, AxesAsAttributeBeforeOpset13AndInputAfter) {
  const Tensor in = random_tensor(DataType::kUInt8, {1, 3, 1, 5}, 6, 0, 200);
  const auto old =
      run_node(NodeBuilder("Squeeze", 11).attr("axes", std::vector<std::int64_t>{-2}).build(), {in});
  EXPECT_TRUE(tensors_near(old[0], in.reshaped({1, 3, 5})));
  const auto current =
      run_node(NodeBuilder("Squeeze", 13).inputs(2).build(), {in, int64_tensor({2}, {0, 2})});
  EXPECT_TRUE(tensors_near(current[0], in.reshaped({3, 5})));
  const auto all = run_node(NodeBuilder("Squeeze", 13).build(), {in});
  EXPECT_TRUE(tensors_near(all[0], in.reshaped({3, 5})));
}

TEST(OpSqueeze, RejectsAxisThatIsNotOne) {
  const Status status =
      run_node_status(NodeBuilder("Squeeze", 13).inputs(2).build(),
                      {random_tensor(DataType::kFloat32, {1, 3}, 7), int64_tensor({1}, {1})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "cannot squeeze axis 1")) << status.message();
}

TEST(OpUnsqueeze, InsertsUnsortedAndNegativeAxes) {
  const Tensor in = random_tensor(DataType::kBool, {3, 5}, 8);
  const auto out =
      run_node(NodeBuilder("Unsqueeze", 13).inputs(2).build(), {in, int64_tensor({3}, {4, 0, -3})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3, 1, 5, 1}));
  EXPECT_TRUE(tensors_near(out[0], in.reshaped({1, 3, 1, 5, 1})));
  const auto old =
      run_node(NodeBuilder("Unsqueeze", 11).attr("axes", std::vector<std::int64_t>{1}).build(), {in});
  EXPECT_EQ(old[0].shape(), (Shape{3, 1, 5}));
}

TEST(OpUnsqueeze, RejectsRepeatedAxes) {
  const Status status =
      run_node_status(NodeBuilder("Unsqueeze", 13).inputs(2).build(),
                      {random_tensor(DataType::kFloat32, {3}, 9), int64_tensor({2}, {0, -3})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "repeated")) << status.message();
}

TEST(OpExpand, BroadcastsBothWays) {
  const Tensor in = random_tensor(DataType::kFloat32, {3, 1, 5}, 10);
  const auto out = run_node(NodeBuilder("Expand").inputs(2).build(), {in, int64_tensor({4}, {2, 1, 4, 1})});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4, 5}));
  Tensor expected = Tensor::allocate(DataType::kFloat32, {2, 3, 4, 5});
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int h = 0; h < 4; ++h) {
        for (int w = 0; w < 5; ++w)
          expected.data<float>()[((n * 3 + c) * 4 + h) * 5 + w] = in.data<float>()[c * 5 + w];
      }
    }
  }
  EXPECT_TRUE(tensors_near(out[0], expected));
}

TEST(OpExpand, RejectsIncompatibleShape) {
  const Status status =
      run_node_status(NodeBuilder("Expand").inputs(2).build(),
                      {random_tensor(DataType::kFloat32, {3, 2}, 11), int64_tensor({2}, {3, 4})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "do not broadcast")) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
