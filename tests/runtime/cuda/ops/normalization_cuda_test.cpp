// BatchNormalization (ONNX's and fovea's NHWC form), InstanceNormalization and LayerNormalization
// on CUDA against the CPU reference: 2-D and 4-D inputs, batch 1 and N, short rows (a warp each) and
// long ones (a block each), LayerNormalization's axes, broadcast Scale/B, optional B and the
// Mean/InvStdDev outputs, float32/16/64.
#include <string>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

// Casts a float32 test tensor to float64, for the float64 runs.
Tensor as_float64(const Tensor& t) {
  Tensor out = Tensor::allocate(DataType::kFloat64, t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) out.data<double>()[i] = t.data<float>()[i];
  return out;
}

std::vector<Tensor> as_float64(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) out.push_back(as_float64(t));
  return out;
}

TEST(CudaBatchNormalization, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const Shape& shape :
       std::vector<Shape>{{1, 3, 13, 17}, {4, 5, 7, 9}, {6, 7}, {2, 3, 600}, {2, 4, 3, 5, 2}}) {
    const std::int64_t c = shape[1];
    const std::vector<Tensor> inputs{random_tensor(kF32, shape, seed), random_tensor(kF32, {c}, seed + 1),
                                     random_tensor(kF32, {c}, seed + 2), random_tensor(kF32, {c}, seed + 3),
                                     random_tensor(kF32, {c}, seed + 4, 0.5, 2.0)};
    seed += 5;
    const Node node = NodeBuilder("BatchNormalization").inputs(5).attr("epsilon", 1e-3f).build();
    // a and b are rounded as the CPU rounds them: pointwise.
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.precision = p})) << shape_string(shape);
    }
    EXPECT_TRUE(cuda_matches_cpu(node, as_float64(inputs))) << shape_string(shape);
  }
}

// fovea.BatchNormalization (NHWC, the channels last): channel counts a multiple of 8 (float16's
// 16-byte path) and not, odd pixel counts, with and without the ReLU; the parameters are plan
// constants, as the channels_last pass leaves them.
TEST(Cudafovea_BatchNormalization, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 60;
  for (const Shape& shape : std::vector<Shape>{{3, 5, 7, 16}, {2, 3, 5, 12}, {1, 1, 1, 8}, {2, 9, 11, 264}}) {
    const std::int64_t c = shape[3];
    const std::vector<Tensor> inputs{random_tensor(kF32, shape, seed), random_tensor(kF32, {c}, seed + 1),
                                     random_tensor(kF32, {c}, seed + 2), random_tensor(kF32, {c}, seed + 3),
                                     random_tensor(kF32, {c}, seed + 4, 0.5, 2.0)};
    seed += 5;
    for (const char* activation : {"", "Relu"}) {
      const Node node = NodeBuilder("BatchNormalization")
                            .domain("fovea")
                            .inputs(5)
                            .attr("epsilon", 1e-3f)
                            .attr("channels_last", std::int64_t{1})
                            .attr("activation", activation)
                            .build();
      const CudaCheck check{.constant_inputs = {1, 2, 3, 4}};
      for (Precision p : kPrecisions) {
        CudaCheck at = check;
        at.precision = p;
        EXPECT_TRUE(cuda_matches_cpu(node, inputs, at)) << shape_string(shape) << " " << activation;
      }
      EXPECT_TRUE(cuda_matches_cpu(node, as_float64(inputs), check))
          << shape_string(shape) << " " << activation;
    }
  }
}

TEST(CudaInstanceNormalization, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 20;
  // Rows of 221 (a warp each), of 1600 (a block each), 1-D and 3-D spatial.
  for (const Shape& shape :
       std::vector<Shape>{{1, 3, 13, 17}, {4, 5, 13, 17}, {2, 3, 40, 40}, {3, 2, 11}, {1, 2, 3, 5, 7}}) {
    const std::int64_t c = shape[1];
    // An offset mean: the variance must not cancel.
    const std::vector<Tensor> inputs{random_tensor(kF32, shape, seed, 5, 7),
                                     random_tensor(kF32, {c}, seed + 1), random_tensor(kF32, {c}, seed + 2)};
    seed += 3;
    const Node node = NodeBuilder("InstanceNormalization").inputs(3).build();
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.precision = p, .accuracy = Accuracy::kAccumulating}))
          << shape_string(shape);
    }
    EXPECT_TRUE(cuda_matches_cpu(node, as_float64(inputs), {.accuracy = Accuracy::kAccumulating}));
  }
}

struct LayerNormCase {
  Shape shape;
  int axis;
  Shape scale;
  bool bias;
  int outputs;
};

const LayerNormCase kLayerNormCases[] = {
    {{3, 5, 64}, -1, {64}, true, 1},        // a warp per row
    {{1, 7, 768}, -1, {768}, true, 3},      // a block per row, with Mean and InvStdDev
    {{2, 3, 5, 7}, 1, {3, 5, 7}, true, 3},  // several normalized dims
    {{2, 3, 5, 7}, -2, {5, 1}, true, 1},    // Scale and B broadcast
    {{2, 3, 5, 7}, 2, {1}, false, 2},       // one Scale, no B
    {{4, 2000}, 0, {4, 2000}, false, 3},    // everything one row
    // float16 rows in registers, half a warp a row: one, five, six and eight 16-byte vectors a lane
    // (Swin's 96, 640, ViT's 768, 1,024 without B), a row of one vector, odd row counts (the last
    // half warp without a row), and rows that are not a multiple of 8 (the general kernel)
    {{4, 7, 96}, -1, {96}, true, 1},
    {{3, 13, 640}, -1, {640}, true, 1},
    {{1, 31, 8}, -1, {8}, true, 1},
    {{5, 197, 768}, -1, {768}, true, 1},
    {{2, 9, 1024}, -1, {1024}, false, 1},
    {{3, 11, 100}, -1, {100}, true, 1},
};

TEST(CudaLayerNormalization, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 40;
  for (const LayerNormCase& c : kLayerNormCases) {
    NodeBuilder builder("LayerNormalization");
    builder.inputs(c.bias ? 3 : 2).outputs(c.outputs).attr("axis", c.axis);
    const Node node = builder.build();
    std::vector<Tensor> inputs{random_tensor(kF32, c.shape, seed, -3, 5),
                               random_tensor(kF32, c.scale, seed + 1)};
    if (c.bias) inputs.push_back(random_tensor(kF32, c.scale, seed + 2));
    seed += 3;
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.precision = p, .accuracy = Accuracy::kAccumulating}))
          << shape_string(c.shape) << " axis " << c.axis;
    }
    EXPECT_TRUE(cuda_matches_cpu(node, as_float64(inputs), {.accuracy = Accuracy::kAccumulating}));
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
