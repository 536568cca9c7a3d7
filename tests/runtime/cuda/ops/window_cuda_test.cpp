// HannWindow, HammingWindow and BlackmanWindow (cuda/ops/window.cu) and MeanVarianceNormalization
// (cuda/ops/mvn.cu) against the CPU reference: odd window sizes, both periodic modes, each
// output_datatype; MVN over default, trailing, leading and non-contiguous axes, groups short (a
// warp each) and long (a block each), float32 and float16 plans.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

void expect_window_matches(const char* op_type) {
  for (std::int64_t size : {1, 2, 13, 127, 1001}) {
    for (std::int64_t periodic : {0, 1}) {
      // float32, float16, float64 outputs.
      for (std::int64_t dtype : {1, 10, 11}) {
        const Node node =
            NodeBuilder(op_type, 17).attr("periodic", periodic).attr("output_datatype", dtype).build();
        for (Precision p : kPrecisions) {
          EXPECT_TRUE(
              cuda_matches_cpu(node, {int64_tensor({}, {size})}, {.precision = p, .constant_inputs = {0}}))
              << op_type << " size " << size << " periodic " << periodic << " dtype " << dtype;
        }
      }
    }
  }
}

TEST(CudaHannWindow, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_window_matches("HannWindow");
}

TEST(CudaHannWindow, RefusesASizeKnownOnlyAtRunTime) {
  FOVEA_REQUIRE_GPU();
  // Without the size the output's shape is unknown at plan time: refused, naming the node and op
  // (prepare() refuses it too, should a plan ever get that far).
  EXPECT_TRUE(fails_with(run_cuda_node_status(NodeBuilder("HannWindow", 17).build(), {int64_tensor({}, {5})}),
                         StatusCode::kUnsupported, "(HannWindow)"));
}

TEST(CudaHammingWindow, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_window_matches("HammingWindow");
}

TEST(CudaBlackmanWindow, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_window_matches("BlackmanWindow");
}

TEST(CudaMeanVarianceNormalization, MatchesCpuOverAnyAxes) {
  FOVEA_REQUIRE_GPU();
  struct Case {
    Shape shape;
    std::vector<std::int64_t> axes;  // empty: the default [0, 2, 3]
  };
  const Case cases[] = {
      {{5, 3, 13, 17}, {}}, {{1, 3, 13, 17}, {}}, {{1, 3, 40, 40}, {2, 3}},  {{13, 127}, {1}},
      {{13, 127}, {0}},     {{7, 9, 11}, {0, 2}}, {{2, 3, 5, 7, 3}, {1, 3}},
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    NodeBuilder builder("MeanVarianceNormalization", 13);
    if (!c.axes.empty()) builder.attr("axes", c.axes);
    // An offset mean: the variance must not cancel.
    const Tensor x = random_tensor(kF32, c.shape, seed++, 5, 7);
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(builder.build(), {x}, accumulating(p))) << shape_string(c.shape);
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
