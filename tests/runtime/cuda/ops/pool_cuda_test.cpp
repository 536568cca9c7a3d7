// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on CUDA against the CPU reference: 2-D
// windows (the fast path) and 1-D / 3-D (the general one), strides, pads, dilations, ceil_mode,
// auto_pad, count_include_pad, MaxPool's Indices in both storage orders, batch 1 and N, float32/16,
// float64 and MaxPool's int8/uint8 (ties). fovea.MaxPool (NHWC) the same way, with channel counts
// that take the vector path and channel counts that do not.
#include <string>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
using Ints = std::vector<std::int64_t>;

// One window configuration; attributes left empty are not set.
struct WindowCase {
  Shape shape;
  Ints kernel;
  Ints strides;
  Ints pads;
  Ints dilations;
  std::string auto_pad;
  int ceil_mode = 0;
};

const WindowCase kWindowCases[] = {
    {{1, 3, 13, 17}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 0},  // ResNet's stem pool, batch 1
    {{4, 5, 13, 17}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 0},  // batch N
    {{2, 3, 13, 17}, {2, 3}, {2, 2}, {0, 1, 1, 0}, {}, "", 1},  // ceil_mode, uneven pads
    {{2, 3, 13, 17}, {3, 2}, {1, 2}, {}, {2, 2}, "", 0},        // dilations
    {{2, 3, 13, 17}, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER", 0},
    {{2, 3, 13, 17}, {4, 4}, {3, 3}, {}, {}, "SAME_LOWER", 0},
    {{2, 3, 13, 17}, {3, 3}, {2, 1}, {}, {}, "VALID", 0},
    {{3, 2, 19, 19}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, "", 0},               // SSD's pool5
    {{2, 3, 17}, {3}, {2}, {1, 1}, {}, "", 1},                               // 1-D
    {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 2, 1}, {1, 0, 1, 0, 1, 0}, {}, "", 0},  // 3-D
};

NodeBuilder window_node(const std::string& op, const WindowCase& c) {
  NodeBuilder b(op);
  b.attr("kernel_shape", c.kernel);
  if (!c.strides.empty()) b.attr("strides", c.strides);
  if (!c.pads.empty()) b.attr("pads", c.pads);
  if (!c.dilations.empty()) b.attr("dilations", c.dilations);
  if (!c.auto_pad.empty()) b.attr("auto_pad", c.auto_pad);
  if (c.ceil_mode != 0) b.attr("ceil_mode", c.ceil_mode);
  return b;
}

// A max pool in every dtype MaxPool takes: float32 and float16 plans, float64, int8 and uint8.
void expect_max_pool_matches_cpu(const Node& node, const Shape& shape, std::uint32_t& seed) {
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(kF32, shape, seed++)}, {.precision = p}))
        << shape_string(shape);
  }
  EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat64, shape, seed++)}));
  for (DataType dtype : {DataType::kInt8, DataType::kUInt8}) {
    EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(dtype, shape, seed++, 0, 100)}))
        << data_type_name(dtype) << " " << shape_string(shape);
  }
}

TEST(CudaMaxPool, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const WindowCase& c : kWindowCases)
    expect_max_pool_matches_cpu(window_node("MaxPool", c).build(), c.shape, seed);
}

TEST(CudaMaxPool, IndicesInBothStorageOrders) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 50;
  for (const WindowCase& c : kWindowCases) {
    if (c.dilations.size() > 0)
      continue;  // ONNX's Indices with dilations: as the CPU, but skipped for clarity
    for (int order : {0, 1}) {
      const Node node = window_node("MaxPool", c).outputs(2).attr("storage_order", order).build();
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(kF32, c.shape, seed++)}, {.precision = p}))
            << shape_string(c.shape) << " storage_order " << order;
      }
      // Few values: ties, which go to the first tap in row-major order.
      EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kUInt8, c.shape, seed++, 0, 3)}))
          << shape_string(c.shape) << " storage_order " << order;
    }
  }
}

// fovea.MaxPool's [N, H, W, C] inputs: C = 5 (one channel per thread), 8 (a 16-byte vector of
// float16, two of float32), 12 (vectors of float32 only), 16 and 64 (vectors of every dtype); ResNet's
// stem pool, VGG's 2x2 with ceil_mode on odd sizes, SSD's pool5, dilations with uneven pads,
// auto_pad; batch 1 and N.
const WindowCase kNhwcCases[] = {
    {{1, 13, 17, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 0},
    {{2, 13, 11, 16}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 0},
    {{2, 13, 11, 5}, {2, 2}, {2, 2}, {}, {}, "", 1},
    {{3, 13, 11, 8}, {2, 2}, {2, 2}, {}, {}, "", 1},
    {{3, 19, 19, 12}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, "", 0},
    {{2, 13, 11, 16}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {2, 2}, "", 0},
    {{2, 13, 11, 5}, {2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 1}, "", 1},
    {{1, 13, 17, 64}, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER", 0},
};

NodeBuilder nhwc_node(const WindowCase& c) {
  NodeBuilder b = window_node("MaxPool", c);
  b.domain("fovea").attr("channels_last", 1);
  return b;
}

TEST(Cudafovea_MaxPool, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 400;
  for (const WindowCase& c : kNhwcCases) expect_max_pool_matches_cpu(nhwc_node(c).build(), c.shape, seed);
}

// More channel groups than the grid has threads (132 * 32 blocks of 256), so every thread pools
// several output pixels: one channel per thread, and 16-byte vectors of float16.
TEST(Cudafovea_MaxPool, CoversOutputsLargerThanItsGrid) {
  FOVEA_REQUIRE_GPU();
  const WindowCase scalar{{2, 400, 401, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, "", 0};
  EXPECT_TRUE(cuda_matches_cpu(nhwc_node(scalar).build(), {random_tensor(kF32, scalar.shape, 500)}));
  const WindowCase vector{{1, 300, 301, 128}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, "", 0};
  EXPECT_TRUE(cuda_matches_cpu(nhwc_node(vector).build(), {random_tensor(kF32, vector.shape, 501)},
                               {.precision = Precision::kFloat16}));
}

TEST(CudaAveragePool, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 100;
  for (const WindowCase& c : kWindowCases) {
    for (int include_pad : {0, 1}) {
      const Node node = window_node("AveragePool", c).attr("count_include_pad", include_pad).build();
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(kF32, c.shape, seed++)},
                                     {.precision = p, .accuracy = Accuracy::kAccumulating}))
            << shape_string(c.shape) << " count_include_pad " << include_pad;
      }
      EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat64, c.shape, seed++)},
                                   {.accuracy = Accuracy::kAccumulating}));
    }
  }
}

// Planes of 221 (a warp each), 1600 (a block each), ResNet-50's 7x7, 1-D and 3-D.
const Shape kGlobalShapes[] = {{2, 3, 13, 17}, {1, 3, 40, 40}, {4, 64, 7, 7}, {3, 5, 11}, {1, 2, 3, 5, 7}};

TEST(CudaGlobalMaxPool, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 200;
  for (const Shape& shape : kGlobalShapes) {
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("GlobalMaxPool").build(), {random_tensor(kF32, shape, seed++)},
                                   {.precision = p}))
          << shape_string(shape);
    }
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("GlobalMaxPool").build(),
                                 {random_tensor(DataType::kFloat64, shape, seed++)}));
  }
}

TEST(CudaGlobalAveragePool, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 300;
  for (const Shape& shape : kGlobalShapes) {
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("GlobalAveragePool").build(),
                                   {random_tensor(kF32, shape, seed++)},
                                   {.precision = p, .accuracy = Accuracy::kAccumulating}))
          << shape_string(shape);
    }
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("GlobalAveragePool").build(),
                                 {random_tensor(DataType::kFloat64, shape, seed++)},
                                 {.accuracy = Accuracy::kAccumulating}));
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
