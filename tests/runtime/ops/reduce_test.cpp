#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

// Sums of a few hundred float32 values: 1e-5 relative is within float rounding for the reference in double.
constexpr double kTolerance = 1e-5;

struct Reducer {
  double init;
  std::function<double(double, double)> step;
  std::function<double(double, std::int64_t)> finish;
};

// Reduces a rank-3 float tensor over the axes flagged in `reduced`, in plain loops.
Tensor reference_reduce(const Tensor& x, std::array<bool, 3> reduced, bool keepdims, const Reducer& f) {
  Shape kept = x.shape();
  Shape out_shape;
  for (std::size_t d = 0; d < 3; ++d) {
    if (reduced[d]) kept[d] = 1;
    if (!reduced[d] || keepdims) out_shape.push_back(kept[d]);
  }
  Tensor y = Tensor::allocate(DataType::kFloat32, out_shape);
  const std::int64_t count = x.numel() / element_count(kept);
  for (std::int64_t i = 0; i < kept[0]; ++i) {
    for (std::int64_t j = 0; j < kept[1]; ++j) {
      for (std::int64_t k = 0; k < kept[2]; ++k) {
        double acc = f.init;
        for (std::int64_t a = 0; a < (reduced[0] ? x.dim(0) : 1); ++a) {
          for (std::int64_t b = 0; b < (reduced[1] ? x.dim(1) : 1); ++b) {
            for (std::int64_t c = 0; c < (reduced[2] ? x.dim(2) : 1); ++c) {
              const std::int64_t at = ((i + a) * x.dim(1) + (j + b)) * x.dim(2) + (k + c);
              acc = f.step(acc, x.data<float>()[at]);
            }
          }
        }
        y.data<float>()[(i * kept[1] + j) * kept[2] + k] = static_cast<float>(f.finish(acc, count));
      }
    }
  }
  return y;
}

const auto kSame = [](double a, std::int64_t) { return a; };
const auto kAdd = [](double a, double v) { return a + v; };

// Checks the op on 3x13x17 random input for several axis sets, with axes as attribute (opset 11) and
// as input (opset 18).
void check_reduction(const char* op, const Reducer& f, double low = -1.0, double high = 1.0) {
  const Tensor x = random_tensor(DataType::kFloat32, {3, 13, 17}, 7, low, high);
  const std::vector<std::pair<std::vector<std::int64_t>, std::array<bool, 3>>> cases{
      {{1}, {false, true, false}},
      {{0, -1}, {true, false, true}},
      {{}, {true, true, true}},
      {{-2, 2}, {false, true, true}}};
  for (const auto& [axes, reduced] : cases) {
    for (int keepdims = 0; keepdims < 2; ++keepdims) {
      const Tensor expected = reference_reduce(x, reduced, keepdims != 0, f);
      NodeBuilder with_attribute(op, 11);
      with_attribute.attr("keepdims", keepdims);
      if (!axes.empty()) with_attribute.attr("axes", axes);
      EXPECT_TRUE(tensors_near(run_node(with_attribute.build(), {x})[0], expected, kTolerance, kTolerance))
          << op << " axes " << axes.size() << " keepdims " << keepdims;
      const Node with_input = NodeBuilder(op, 18).inputs(2).attr("keepdims", keepdims).build();
      EXPECT_TRUE(tensors_near(
          run_node(with_input, {x, int64_tensor({static_cast<std::int64_t>(axes.size())}, axes)})[0],
          expected, kTolerance, kTolerance))
          << op << " (axes input) axes " << axes.size() << " keepdims " << keepdims;
    }
  }
}

TEST(OpReduceSum, MatchesLoopsAndTakesAxesAsInputFromOpset13) {
  check_reduction("ReduceSum", {0, kAdd, kSame});
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3}, 1);
  const Tensor axes = int64_tensor({1}, {0});
  const auto out = run_node(NodeBuilder("ReduceSum", 13).inputs(2).build(), {x, axes});
  ASSERT_EQ(out[0].shape(), (Shape{1, 3}));
}

TEST(OpReduceSum, NoopWithEmptyAxesAndIntegers) {
  const Tensor x = int64_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto noop = run_node(NodeBuilder("ReduceSum", 13).inputs(2).attr("noop_with_empty_axes", 1).build(),
                             {x, int64_tensor({0}, {})});
  EXPECT_TRUE(tensors_near(noop[0], x));
  const auto all = run_node(NodeBuilder("ReduceSum", 13).attr("keepdims", 0).build(), {x});
  EXPECT_TRUE(tensors_near(all[0], int64_tensor({}, {21})));
}

TEST(OpReduceSum, RejectsBadAxes) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3}, 1);
  Status status =
      run_node_status(NodeBuilder("ReduceSum", 11).attr("axes", std::vector<std::int64_t>{2}).build(), {x});
  EXPECT_NE(status.message().find("out of range"), std::string::npos) << status.message();
  status = run_node_status(NodeBuilder("ReduceSum", 13).inputs(2).build(), {x, int64_tensor({2}, {1, -1})});
  EXPECT_NE(status.message().find("repeated"), std::string::npos) << status.message();
}

TEST(OpReduceSum, InfersWithUnknownAxes) {
  const Node node = NodeBuilder("ReduceSum", 13).inputs(2).build();
  const auto types = infer_types(
      node, {ValueType{DataType::kFloat32, dims_of({2, 3})}, ValueType{DataType::kInt64, dims_of({1})}});
  ASSERT_TRUE(types.is_ok());
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[?, ?]");
}

TEST(OpReduceMean, MatchesLoops) {
  check_reduction("ReduceMean",
                  {0, kAdd, [](double a, std::int64_t n) { return a / static_cast<double>(n); }});
  // Integer mean divides as integers.
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("ReduceMean", 11).build(), {int64_tensor({3}, {1, 2, 4})})[0],
                           int64_tensor({1}, {2})));
}

TEST(OpReduceMax, MatchesLoops) {
  check_reduction("ReduceMax", {-std::numeric_limits<double>::infinity(),
                                [](double a, double v) { return std::max(a, v); }, kSame});
}

TEST(OpReduceMin, MatchesLoops) {
  check_reduction("ReduceMin", {std::numeric_limits<double>::infinity(),
                                [](double a, double v) { return std::min(a, v); }, kSame});
}

TEST(OpReduceProd, MatchesLoops) {
  // Values near 1 keep products of up to 663 factors finite.
  check_reduction("ReduceProd", {1, [](double a, double v) { return a * v; }, kSame}, 0.99, 1.01);
}

TEST(OpReduceL1, MatchesLoops) {
  check_reduction("ReduceL1", {0, [](double a, double v) { return a + std::abs(v); }, kSame});
}

TEST(OpReduceL2, MatchesLoopsAndRejectsIntegers) {
  check_reduction("ReduceL2", {0, [](double a, double v) { return a + v * v; },
                               [](double a, std::int64_t) { return std::sqrt(a); }});
  const Status status = run_node_status(NodeBuilder("ReduceL2", 11).build(), {int64_tensor({2}, {3, 4})});
  EXPECT_NE(status.message().find("type mismatch"), std::string::npos) << status.message();
}

TEST(OpReduceLogSum, MatchesLoops) {
  check_reduction("ReduceLogSum", {0, kAdd, [](double a, std::int64_t) { return std::log(a); }}, 0.1, 1.0);
}

TEST(OpReduceLogSumExp, MatchesLoops) {
  check_reduction("ReduceLogSumExp", {0, [](double a, double v) { return a + std::exp(v); },
                                      [](double a, std::int64_t) { return std::log(a); }});
}

TEST(OpReduceSumSquare, MatchesLoops) {
  check_reduction("ReduceSumSquare", {0, [](double a, double v) { return a + v * v; }, kSame});
}

TEST(OpArgMax, AxisKeepdimsAndLastIndex) {
  const Tensor x = float_tensor({2, 3}, {1, 5, 5, 7, 2, 7});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("ArgMax").attr("axis", 1).build(), {x})[0],
                           int64_tensor({2, 1}, {1, 0})));
  EXPECT_TRUE(tensors_near(
      run_node(
          NodeBuilder("ArgMax").attr("axis", -1).attr("keepdims", 0).attr("select_last_index", 1).build(),
          {x})[0],
      int64_tensor({2}, {2, 2})));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("ArgMax").build(), {x})[0], int64_tensor({1, 3}, {1, 0, 1})));
  const Status status = run_node_status(NodeBuilder("ArgMax").attr("axis", 2).build(), {x});
  EXPECT_NE(status.message().find("out of range"), std::string::npos) << status.message();
}

TEST(OpArgMin, AxisKeepdimsAndLastIndex) {
  const Tensor x = int64_tensor({2, 3}, {4, 1, 1, 0, 9, 0});
  EXPECT_TRUE(
      tensors_near(run_node(NodeBuilder("ArgMin").attr("axis", 1).attr("keepdims", 0).build(), {x})[0],
                   int64_tensor({2}, {1, 0})));
  EXPECT_TRUE(tensors_near(
      run_node(NodeBuilder("ArgMin").attr("axis", 1).attr("select_last_index", 1).build(), {x})[0],
      int64_tensor({2, 1}, {2, 2})));
}

}  // namespace
}  // namespace fovea::runtime::testing
