// RoiAlign, GridSample, LRN and MaxUnpool on CUDA (cuda/ops/spatial.cu) against the CPU reference:
// random data of odd sizes in float32 and float16 plans, every mode and padding, boxes and grid
// points reaching outside the image.
#include <random>

#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

// ---- RoiAlign ----

// `count` boxes (x1, y1, x2, y2) in image coordinates of an image `width` x `height` pixels at
// spatial scale `scale`, some reaching past its edges.
Tensor random_rois(int count, float width, float height, float scale, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> x(-0.2f * width / scale, 1.1f * width / scale);
  std::uniform_real_distribution<float> y(-0.2f * height / scale, 1.1f * height / scale);
  std::uniform_real_distribution<float> extent(0.0f, 0.6f / scale);
  std::vector<float> values;
  for (int i = 0; i < count; ++i) {
    const float x1 = x(rng);
    const float y1 = y(rng);
    values.insert(values.end(), {x1, y1, x1 + extent(rng) * width, y1 + extent(rng) * height});
  }
  return float_tensor({count, 4}, std::move(values));
}

TEST(CudaRoiAlign, MatchesCpuInEveryModeAndTransform) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 5, 13, 17}, 1);
  const Tensor rois = random_rois(7, 17, 13, 0.5f, 2);
  const Tensor batch = random_tensor(DataType::kInt64, {7}, 3, 0, 2);
  for (const char* mode : {"avg", "max"}) {
    for (const char* transform : {"half_pixel", "output_half_pixel"}) {
      for (int sampling_ratio : {0, 2}) {
        const Node node = NodeBuilder("RoiAlign", 16)
                              .inputs(3)
                              .attr("mode", mode)
                              .attr("coordinate_transformation_mode", transform)
                              .attr("sampling_ratio", sampling_ratio)
                              .attr("spatial_scale", 0.5f)
                              .attr("output_height", 3)
                              .attr("output_width", 5)
                              .build();
        for (Precision p : kPrecisions) {
          EXPECT_TRUE(cuda_matches_cpu(node, {x, rois, batch}, accumulating(p)))
              << mode << ", " << transform << ", sampling_ratio " << sampling_ratio << ", "
              << precision_name(p);
        }
      }
    }
  }
}

// ---- GridSample ----

TEST(CudaGridSample, MatchesCpuInEveryModeAndPadding) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 11, 13}, 4);
  const Tensor grid = random_tensor(DataType::kFloat32, {2, 7, 9, 2}, 5, -1.3, 1.3);  // some points outside
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int align_corners : {0, 1}) {
        const Node node = NodeBuilder("GridSample", 16)
                              .inputs(2)
                              .attr("mode", mode)
                              .attr("padding_mode", padding)
                              .attr("align_corners", align_corners)
                              .build();
        for (Precision p : kPrecisions) {
          EXPECT_TRUE(cuda_matches_cpu(node, {x, grid}, accumulating(p)))
              << mode << ", " << padding << ", align_corners " << align_corners << ", " << precision_name(p);
        }
      }
    }
  }
}

// ---- LRN ----

TEST(CudaLRN, MatchesCpuForOddAndEvenWindows) {
  FOVEA_REQUIRE_GPU();
  for (const Shape& shape : {Shape{3, 7, 13, 17}, Shape{1, 5, 9}}) {
    for (std::int64_t size : {1, 2, 5}) {
      const Node node = NodeBuilder("LRN").attr("size", size).attr("alpha", 0.01f).attr("bias", 2.0f).build();
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(
            cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, shape, 6, -3, 3)}, accumulating(p)))
            << shape_string(shape) << ", size " << size << ", " << precision_name(p);
      }
    }
  }
}

// ---- MaxUnpool ----

// MaxPool-style indices for X of `shape` pooled 2x2 with stride 2: one random position of each
// window, flat over the whole unpooled tensor [N, C, 2H, 2W].
Tensor pool_indices(const Shape& shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int64_t> values;
  const std::int64_t h = shape[2];
  const std::int64_t w = shape[3];
  for (std::int64_t plane = 0; plane < shape[0] * shape[1]; ++plane) {
    for (std::int64_t r = 0; r < h; ++r) {
      for (std::int64_t c = 0; c < w; ++c) {
        const auto pick = static_cast<std::int64_t>(rng() % 4);
        values.push_back((plane * 2 * h + 2 * r + pick / 2) * 2 * w + 2 * c + pick % 2);
      }
    }
  }
  return int64_tensor(shape, std::move(values));
}

TEST(CudaMaxUnpool, MatchesCpuWithAndWithoutOutputShape) {
  FOVEA_REQUIRE_GPU();
  const Shape shape{3, 5, 7, 9};
  const Tensor x = random_tensor(DataType::kFloat32, shape, 7);
  const Tensor indices = pool_indices(shape, 8);
  NodeBuilder builder("MaxUnpool");
  builder.attr("kernel_shape", std::vector<std::int64_t>{2, 2})
      .attr("strides", std::vector<std::int64_t>{2, 2});
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(builder.inputs(2).build(), {x, indices}, {.precision = p}));
    // One row and one column more than the unpooled 14 x 18, as MaxPool floored them away.
    EXPECT_TRUE(cuda_matches_cpu(builder.inputs(3).build(), {x, indices, int64_tensor({4}, {3, 5, 15, 19})},
                                 {.precision = p, .constant_inputs = {2}}));
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
