#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

bool has_message(const Status& status, const std::string& part) {
  return status.message().find(part) != std::string::npos;
}

// A float32 tensor of `shape` whose element at each multi-index is f(index), built by a plain
// row-major walk: the naive reference for every test below.
Tensor tensor_from(const Shape& shape, const std::function<float(const std::vector<std::int64_t>&)>& f) {
  Tensor t = Tensor::allocate(DataType::kFloat32, shape);
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = f(index);
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return t;
}

float at(const Tensor& t, const std::vector<std::int64_t>& index) {
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < index.size(); ++d) offset = offset * t.shape()[d] + index[d];
  return t.data<float>()[offset];
}

TEST(OpConcat, JoinsOddSizesAlongNegativeAxis) {
  const Tensor a = random_tensor(DataType::kFloat32, {3, 2, 5}, 1);
  const Tensor b = random_tensor(DataType::kFloat32, {3, 7, 5}, 2);
  const Tensor c = random_tensor(DataType::kFloat32, {3, 1, 5}, 3);
  const auto out = run_node(NodeBuilder("Concat").inputs(3).attr("axis", -2).build(), {a, b, c});
  const Tensor expected = tensor_from({3, 10, 5}, [&](const std::vector<std::int64_t>& i) {
    if (i[1] < 2) return at(a, i);
    if (i[1] < 9) return at(b, {i[0], i[1] - 2, i[2]});
    return at(c, {i[0], i[1] - 9, i[2]});
  });
  EXPECT_TRUE(tensors_near(out[0], expected));
}

TEST(OpConcat, MovesFloat16AndEmptyInputs) {
  const Tensor a = random_tensor(DataType::kFloat16, {2, 3}, 4);
  const Tensor empty = Tensor::allocate(DataType::kFloat16, {0, 3});
  const auto out = run_node(NodeBuilder("Concat").inputs(3).attr("axis", 0).build(), {a, empty, a});
  ASSERT_EQ(out[0].shape(), (Shape{4, 3}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out[0].data<Half>()[i].bits, a.data<Half>()[i].bits);
    EXPECT_EQ(out[0].data<Half>()[i + 6].bits, a.data<Half>()[i].bits);
  }
}

TEST(OpConcat, RejectsMismatchedDims) {
  const Status status = run_node_status(
      NodeBuilder("Concat").inputs(2).attr("axis", 0).build(),
      {random_tensor(DataType::kFloat32, {2, 3}, 5), random_tensor(DataType::kFloat32, {2, 4}, 6)});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "dim 1")) << status.message();
}

TEST(OpSplit, SizesFromAttributeInputAndNumOutputs) {
  const Tensor in = random_tensor(DataType::kInt64, {3, 7, 2}, 7, -100, 100);
  auto check = [&](const std::vector<Tensor>& out, const std::vector<std::int64_t>& sizes) {
    ASSERT_EQ(out.size(), sizes.size());
    std::int64_t first = 0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      ASSERT_EQ(out[k].shape(), (Shape{3, sizes[k], 2}));
      for (std::int64_t i = 0; i < out[k].numel(); ++i) {
        const std::int64_t row = i / (sizes[k] * 2), col = (i / 2) % sizes[k], last = i % 2;
        EXPECT_EQ(out[k].data<std::int64_t>()[i],
                  in.data<std::int64_t>()[(row * 7 + first + col) * 2 + last]);
      }
      first += sizes[k];
    }
  };
  check(run_node(NodeBuilder("Split", 11)
                     .outputs(2)
                     .attr("axis", 1)
                     .attr("split", std::vector<std::int64_t>{3, 4})
                     .build(),
                 {in}),
        {3, 4});
  check(run_node(NodeBuilder("Split", 13).inputs(2).outputs(3).attr("axis", -2).build(),
                 {in, int64_tensor({3}, {1, 0, 6})}),
        {1, 0, 6});
  check(run_node(NodeBuilder("Split", 18).outputs(3).attr("axis", 1).attr("num_outputs", 3).build(), {in}),
        {3, 3, 1});
  check(run_node(NodeBuilder("Split", 13).outputs(1).attr("axis", 1).build(), {in}), {7});
}

TEST(OpSplit, RejectsSizesThatDoNotAddUp) {
  const Status status =
      run_node_status(NodeBuilder("Split", 13).inputs(2).outputs(2).build(),
                      {random_tensor(DataType::kFloat32, {5}, 8), int64_tensor({2}, {2, 2})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "do not add up")) << status.message();
  const Status uneven = run_node_status(NodeBuilder("Split", 13).outputs(2).build(),
                                        {random_tensor(DataType::kFloat32, {5}, 8)});
  EXPECT_TRUE(has_message(uneven, "equal parts")) << uneven.message();
}

// The spec's clamping, written independently: the input indices one axis of a slice reads.
std::vector<std::int64_t> slice_indices(std::int64_t start, std::int64_t end, std::int64_t step,
                                        std::int64_t dim) {
  std::vector<std::int64_t> indices;
  const std::int64_t s = start < 0 ? std::max<std::int64_t>(start + dim, 0) : std::min(start, dim);
  const std::int64_t e = end < 0 ? std::max<std::int64_t>(end + dim, -1) : std::min(end, dim);
  // A step that would carry the index past the int64 range ends the slice (no wrap-around).
  if (step > 0) {
    for (std::int64_t i = s; i < e;) {
      indices.push_back(i);
      if (__builtin_add_overflow(i, step, &i)) break;
    }
  } else {
    for (std::int64_t i = std::min(s, dim - 1); i > e;) {
      indices.push_back(i);
      if (__builtin_add_overflow(i, step, &i)) break;
    }
  }
  return indices;
}

TEST(OpSlice, MatchesNaiveWithNegativeStepsAndExtremeEnds) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const Tensor in = random_tensor(DataType::kFloat32, {3, 13, 17}, 9);
  struct Case {
    std::vector<std::int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {
      {{1, -20}, {kMax, 100}, {-1, 1}, {3, 2}},
      {{-1, 0}, {kMin, kMax}, {2, 0}, {-1, 1}},
      {{10, 2}, {-15, -1}, {1, 0}, {-4, -1}},
      {{0, 5}, {0, 5}, {0, 2}, {1, 1}},  // empty
      {{20}, {-30}, {2}, {-5}},
      // Steps near the int64 limits: one element each, where (span + step - 1) / step overflowed.
      {{0}, {kMax}, {1}, {kMax - 2}},
      {{0}, {kMax}, {2}, {kMax}},
      {{-1}, {kMin}, {1}, {kMin}},
      {{kMax}, {-kMax}, {2}, {-kMax}},
  };
  for (const Case& c : cases) {
    const auto out = run_node(NodeBuilder("Slice", 13).inputs(5).build(),
                              {in, int64_tensor({static_cast<std::int64_t>(c.starts.size())}, c.starts),
                               int64_tensor({static_cast<std::int64_t>(c.ends.size())}, c.ends),
                               int64_tensor({static_cast<std::int64_t>(c.axes.size())}, c.axes),
                               int64_tensor({static_cast<std::int64_t>(c.steps.size())}, c.steps)});
    std::vector<std::vector<std::int64_t>> picks;
    for (std::int64_t d = 0; d < 3; ++d)
      picks.push_back(slice_indices(0, kMax, 1, in.shape()[static_cast<std::size_t>(d)]));
    for (std::size_t k = 0; k < c.axes.size(); ++k) {
      const std::int64_t axis = c.axes[k] < 0 ? c.axes[k] + 3 : c.axes[k];
      picks[static_cast<std::size_t>(axis)] =
          slice_indices(c.starts[k], c.ends[k], c.steps[k], in.shape()[static_cast<std::size_t>(axis)]);
    }
    const Shape shape{static_cast<std::int64_t>(picks[0].size()), static_cast<std::int64_t>(picks[1].size()),
                      static_cast<std::int64_t>(picks[2].size())};
    const Tensor expected = tensor_from(shape, [&](const std::vector<std::int64_t>& i) {
      return at(in, {picks[0][static_cast<std::size_t>(i[0])], picks[1][static_cast<std::size_t>(i[1])],
                     picks[2][static_cast<std::size_t>(i[2])]});
    });
    EXPECT_TRUE(tensors_near(out[0], expected)) << "starts " << c.starts[0];
  }
}

TEST(OpSlice, DefaultAxesAndSteps) {
  const Tensor in = random_tensor(DataType::kFloat32, {4, 6}, 10);
  const auto out = run_node(NodeBuilder("Slice", 13).inputs(3).build(),
                            {in, int64_tensor({2}, {1, 2}), int64_tensor({2}, {3, -1})});
  const Tensor expected = tensor_from({2, 3}, [&](const std::vector<std::int64_t>& i) {
    return at(in, {i[0] + 1, i[1] + 2});
  });
  EXPECT_TRUE(tensors_near(out[0], expected));
}

TEST(OpSlice, RejectsZeroStep) {
  const Status status =
      run_node_status(NodeBuilder("Slice", 13).inputs(5).build(),
                      {random_tensor(DataType::kFloat32, {4}, 11), int64_tensor({1}, {0}),
                       int64_tensor({1}, {4}), int64_tensor({1}, {0}), int64_tensor({1}, {0})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "step is 0")) << status.message();
}

TEST(OpGather, NegativeIndicesAndMatrixIndicesOnAxis) {
  const Tensor data = random_tensor(DataType::kFloat32, {3, 5, 4}, 12);
  const Tensor indices = int64_tensor({2, 2}, {0, -1, 3, -5});
  const auto out = run_node(NodeBuilder("Gather").inputs(2).attr("axis", -2).build(), {data, indices});
  const std::int64_t picked[] = {0, 4, 3, 0};
  const Tensor expected = tensor_from({3, 2, 2, 4}, [&](const std::vector<std::int64_t>& i) {
    return at(data, {i[0], picked[i[1] * 2 + i[2]], i[3]});
  });
  EXPECT_TRUE(tensors_near(out[0], expected));
}

TEST(OpGather, ScalarIndexDropsAxis) {
  const Tensor data = random_tensor(DataType::kFloat32, {3, 5}, 13);
  const auto out =
      run_node(NodeBuilder("Gather").inputs(2).attr("axis", 0).build(), {data, int64_tensor({}, {2})});
  const Tensor expected = tensor_from({5}, [&](const std::vector<std::int64_t>& i) {
    return at(data, {2, i[0]});
  });
  EXPECT_TRUE(tensors_near(out[0], expected));
}

TEST(OpGather, RejectsIndexOutOfRange) {
  const Status status =
      run_node_status(NodeBuilder("Gather").inputs(2).build(),
                      {random_tensor(DataType::kFloat32, {3, 2}, 14), int64_tensor({1}, {3})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "out of range")) << status.message();
}

TEST(OpTranspose, DefaultReversesAndPermMatchesNaive) {
  const Tensor in = random_tensor(DataType::kFloat32, {3, 13, 17}, 15);
  const auto reversed = run_node(NodeBuilder("Transpose").build(), {in});
  EXPECT_TRUE(tensors_near(reversed[0], tensor_from({17, 13, 3}, [&](const std::vector<std::int64_t>& i) {
                             return at(in, {i[2], i[1], i[0]});
                           })));
  const auto permuted =
      run_node(NodeBuilder("Transpose").attr("perm", std::vector<std::int64_t>{1, 2, 0}).build(), {in});
  EXPECT_TRUE(tensors_near(permuted[0], tensor_from({13, 17, 3}, [&](const std::vector<std::int64_t>& i) {
                             return at(in, {i[2], i[0], i[1]});
                           })));
}

TEST(OpTranspose, LargeTensorRunsInParallelChunks) {
  const Tensor in = random_tensor(DataType::kFloat32, {2, 21, 65, 97}, 16);
  const auto out =
      run_node(NodeBuilder("Transpose").attr("perm", std::vector<std::int64_t>{0, 2, 3, 1}).build(), {in});
  EXPECT_TRUE(tensors_near(out[0], tensor_from({2, 65, 97, 21}, [&](const std::vector<std::int64_t>& i) {
                             return at(in, {i[0], i[3], i[1], i[2]});
                           })));
}

// Every permutation of a 4-D tensor with odd sizes past one 32 x 32 tile, in each element size
// (the tiled path takes the perms that move the innermost axis, the gather the others), compared
// byte for byte with a naive loop.
TEST(OpTranspose, EveryPermOfOddSizesMatchesNaive) {
  const Shape shape{3, 37, 5, 70};
  const Shape strides{37 * 5 * 70, 5 * 70, 70, 1};
  for (const DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kUInt8, DataType::kFloat16}) {
    const Tensor in = random_tensor(dtype, shape, 18);
    const std::size_t size = data_type_size(dtype);
    std::vector<std::int64_t> perm{0, 1, 2, 3};
    do {
      const Tensor out = run_node(NodeBuilder("Transpose").attr("perm", perm).build(), {in})[0];
      const auto* src = static_cast<const std::byte*>(in.raw());
      const auto* dst = static_cast<const std::byte*>(out.raw());
      std::int64_t mismatches = 0, position = 0;
      std::vector<std::int64_t> i(4, 0);
      for (i[0] = 0; i[0] < shape[static_cast<std::size_t>(perm[0])]; ++i[0]) {
        for (i[1] = 0; i[1] < shape[static_cast<std::size_t>(perm[1])]; ++i[1]) {
          for (i[2] = 0; i[2] < shape[static_cast<std::size_t>(perm[2])]; ++i[2]) {
            for (i[3] = 0; i[3] < shape[static_cast<std::size_t>(perm[3])]; ++i[3], ++position) {
              std::int64_t source = 0;
              for (std::size_t d = 0; d < 4; ++d) source += i[d] * strides[static_cast<std::size_t>(perm[d])];
              mismatches += std::memcmp(dst + static_cast<std::size_t>(position) * size,
                                        src + static_cast<std::size_t>(source) * size, size) != 0;
            }
          }
        }
      }
      EXPECT_EQ(mismatches, 0) << "perm " << perm[0] << perm[1] << perm[2] << perm[3] << ", "
                               << data_type_name(dtype);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(OpTranspose, RejectsBadPerm) {
  const Status status =
      run_node_status(NodeBuilder("Transpose").attr("perm", std::vector<std::int64_t>{0, 0}).build(),
                      {random_tensor(DataType::kFloat32, {2, 3}, 17)});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "not a permutation")) << status.message();
}

TEST(OpTile, RepeatsEveryAxis) {
  const Tensor in = random_tensor(DataType::kFloat32, {2, 3, 5}, 18);
  const auto out = run_node(NodeBuilder("Tile").inputs(2).build(), {in, int64_tensor({3}, {3, 1, 2})});
  EXPECT_TRUE(tensors_near(out[0], tensor_from({6, 3, 10}, [&](const std::vector<std::int64_t>& i) {
                             return at(in, {i[0] % 2, i[1], i[2] % 5});
                           })));
}

TEST(OpTile, RejectsWrongRepeatsLength) {
  const Status status =
      run_node_status(NodeBuilder("Tile").inputs(2).build(),
                      {random_tensor(DataType::kFloat32, {2, 3}, 19), int64_tensor({1}, {2})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "repeats has 1 entries")) << status.message();
}

// Found by the loader's fuzzer: repeats whose product with a dim overflows int64.
TEST(OpTile, RejectsRepeatsPastInt64) {
  const Status status = run_node_status(
      NodeBuilder("Tile").inputs(2).build(),
      {random_tensor(DataType::kFloat32, {2, 3}, 19), int64_tensor({2}, {std::int64_t{1} << 62, 1})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "larger than an int64 counts")) << status.message();
}

// The examples of the ONNX Pad spec.
const Tensor kPadData = float_tensor({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});

TEST(OpPad, SpecExamplesForEveryMode) {
  const Tensor pads = int64_tensor({4}, {0, 2, 0, 0});
  const auto constant = run_node(NodeBuilder("Pad", 13).inputs(3).attr("mode", "constant").build(),
                                 {kPadData, pads, float_tensor({}, {0.5f})});
  EXPECT_TRUE(tensors_near(constant[0], float_tensor({3, 4}, {0.5f, 0.5f, 1.0f, 1.2f, 0.5f, 0.5f, 2.3f, 3.4f,
                                                              0.5f, 0.5f, 4.5f, 5.7f})));
  const auto reflect =
      run_node(NodeBuilder("Pad", 13).inputs(2).attr("mode", "reflect").build(), {kPadData, pads});
  EXPECT_TRUE(tensors_near(reflect[0], float_tensor({3, 4}, {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f,
                                                             4.5f, 5.7f, 4.5f, 5.7f})));
  const auto edge = run_node(NodeBuilder("Pad", 13).inputs(2).attr("mode", "edge").build(), {kPadData, pads});
  EXPECT_TRUE(tensors_near(edge[0], float_tensor({3, 4}, {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f,
                                                          4.5f, 4.5f, 4.5f, 5.7f})));
  const auto wrap = run_node(NodeBuilder("Pad", 19).inputs(2).attr("mode", "wrap").build(),
                             {kPadData, int64_tensor({4}, {2, 1, 1, 1})});
  EXPECT_TRUE(tensors_near(wrap[0], float_tensor({6, 4}, {3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f,
                                                          1.2f, 1.0f, 1.2f, 1.0f, 3.4f, 2.3f, 3.4f, 2.3f,
                                                          5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f})));
}

TEST(OpPad, NegativePadsAxesInputAndLegacyAttributes) {
  const Tensor in = random_tensor(DataType::kFloat32, {3, 13, 17}, 20);
  // Opset 18: pads for axes (-1, 0) only; the end of the last axis is cropped by 2.
  const auto out = run_node(NodeBuilder("Pad", 18).inputs(4).omit_input(2).attr("mode", "reflect").build(),
                            {in, int64_tensor({4}, {3, 1, -2, 0}), Tensor(), int64_tensor({2}, {-1, 0})});
  auto reflect = [](std::int64_t c, std::int64_t n) { return c < 0 ? -c : (c >= n ? 2 * (n - 1) - c : c); };
  EXPECT_TRUE(tensors_near(out[0], tensor_from({4, 13, 18}, [&](const std::vector<std::int64_t>& i) {
                             return at(in, {reflect(i[0] - 1, 3), i[1], reflect(i[2] - 3, 17)});
                           })));
  const auto legacy = run_node(
      NodeBuilder("Pad", 2).attr("pads", std::vector<std::int64_t>{1, 0, 0, 1}).attr("value", 7.0f).build(),
      {kPadData});
  EXPECT_TRUE(
      tensors_near(legacy[0], float_tensor({4, 3}, {7, 7, 7, 1.0f, 1.2f, 7, 2.3f, 3.4f, 7, 4.5f, 5.7f, 7})));
}

TEST(OpPad, RejectsWrongPadsLengthAndUnknownMode) {
  const Status length =
      run_node_status(NodeBuilder("Pad", 13).inputs(2).build(), {kPadData, int64_tensor({2}, {1, 1})});
  EXPECT_EQ(length.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(length, "pads has 2 entries")) << length.message();
  const Status mode = run_node_status(NodeBuilder("Pad", 13).inputs(2).attr("mode", "wrap").build(),
                                      {kPadData, int64_tensor({4}, {1, 1, 1, 1})});
  EXPECT_TRUE(has_message(mode, "unknown pad mode 'wrap'")) << mode.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
