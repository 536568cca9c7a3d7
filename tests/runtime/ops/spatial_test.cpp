// RoiAlign, GridSample, LRN and MaxUnpool (ops/spatial.cpp) against results computed by hand from
// the ops' definitions (onnxruntime's, for RoiAlign's max mode), plus the inputs each must reject.
#include <cstdint>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor run_one(const Node& node, const std::vector<Tensor>& inputs) {
  return run_node(node, inputs)[0];
}

// [1, 1, size, size] holding row * size + col.
Tensor iota_image(std::int64_t images, std::int64_t size) {
  std::vector<float> values;
  for (std::int64_t i = 0; i < images * size * size; ++i) values.push_back(static_cast<float>(i));
  return float_tensor({images, 1, size, size}, values);
}

// ---- RoiAlign ----

NodeBuilder roi_align(const char* transform) {
  NodeBuilder builder("RoiAlign", 16);
  builder.inputs(3).attr("sampling_ratio", 1).attr("coordinate_transformation_mode", transform);
  return builder;
}

TEST(OpRoiAlign, AveragesBilinearSamplesInEachBin) {
  // One sample at the bin centre (1.5, 1.5) of a 3x3 box: between 5, 6, 9 and 10.
  const Tensor rois = float_tensor({1, 4}, {0, 0, 3, 3});
  EXPECT_TRUE(tensors_near(
      run_one(roi_align("output_half_pixel").build(), {iota_image(1, 4), rois, int64_tensor({1}, {0})}),
      float_tensor({1, 1, 1, 1}, {7.5f})));
  // half_pixel shifts the box by half a pixel: the same samples for a box half a pixel lower.
  EXPECT_TRUE(tensors_near(
      run_one(roi_align("half_pixel").build(),
              {iota_image(1, 4), float_tensor({1, 4}, {0.5f, 0.5f, 3.5f, 3.5f}), int64_tensor({1}, {0})}),
      float_tensor({1, 1, 1, 1}, {7.5f})));
  // Two bins per side with adaptive sampling (ceil(3 / 2) = 2 samples per bin side); the second
  // image through the batch index.
  const Tensor out = run_one(NodeBuilder("RoiAlign", 16)
                                 .inputs(3)
                                 .attr("output_height", 2)
                                 .attr("output_width", 2)
                                 .attr("coordinate_transformation_mode", "output_half_pixel")
                                 .build(),
                             {iota_image(2, 4), rois, int64_tensor({1}, {1})});
  // Bin (0, 0) samples rows and cols 0.375 and 1.125: their mean is 0.75, so 16 + 0.75 * 5.
  EXPECT_TRUE(tensors_near(out, float_tensor({1, 1, 2, 2}, {19.75f, 21.25f, 25.75f, 27.25f})));
}

TEST(OpRoiAlign, MaxModeTakesTheLargestWeightedCorner) {
  // onnxruntime's max: the largest of w * v over the four corners, 0.25 * 10 here.
  EXPECT_TRUE(
      tensors_near(run_one(roi_align("output_half_pixel").attr("mode", "max").build(),
                           {iota_image(1, 4), float_tensor({1, 4}, {0, 0, 3, 3}), int64_tensor({1}, {0})}),
                   float_tensor({1, 1, 1, 1}, {2.5f})));
}

TEST(OpRoiAlign, RejectsBadBatchIndexAndMode) {
  const Tensor rois = float_tensor({1, 4}, {0, 0, 3, 3});
  EXPECT_TRUE(fails_with(
      run_node_status(roi_align("half_pixel").build(), {iota_image(1, 4), rois, int64_tensor({1}, {1})}),
      StatusCode::kInvalidArgument, "batch index 1"));
  EXPECT_TRUE(fails_with(run_node_status(roi_align("half_pixel").attr("mode", "median").build(),
                                         {iota_image(1, 4), rois, int64_tensor({1}, {0})}),
                         StatusCode::kInvalidArgument, "median"));
}

// ---- GridSample ----

Tensor grid_sample(const std::string& mode, const std::string& padding, int align_corners, float x, float y) {
  const Node node = NodeBuilder("GridSample", 16)
                        .inputs(2)
                        .attr("mode", mode)
                        .attr("padding_mode", padding)
                        .attr("align_corners", align_corners)
                        .build();
  return run_one(node, {float_tensor({1, 1, 2, 2}, {1, 2, 3, 4}), float_tensor({1, 1, 1, 2}, {x, y})});
}

TEST(OpGridSample, SamplesWithEachModeAndPadding) {
  auto value = [](float v) { return float_tensor({1, 1, 1, 1}, {v}); };
  // The centre: pixel 0.5 without align_corners, halfway between all four pixels.
  EXPECT_TRUE(tensors_near(grid_sample("bilinear", "zeros", 0, 0, 0), value(2.5f)));
  // Nearest rounds 0.5 to even: pixel (0, 0).
  EXPECT_TRUE(tensors_near(grid_sample("nearest", "zeros", 0, 0, 0), value(1)));
  // The corner (-1, -1) is pixel -0.5 without align_corners: a quarter of pixel (0, 0) with zeros,
  // all of it with border (clamped) and reflection (-1 reflects to 0).
  EXPECT_TRUE(tensors_near(grid_sample("bilinear", "zeros", 0, -1, -1), value(0.25f)));
  EXPECT_TRUE(tensors_near(grid_sample("bilinear", "border", 0, -1, -1), value(1)));
  EXPECT_TRUE(tensors_near(grid_sample("bilinear", "reflection", 0, -1, -1), value(1)));
  // With align_corners it is pixel (0, 0) itself; bicubic's weights there are 0, 1, 0, 0.
  EXPECT_TRUE(tensors_near(grid_sample("bicubic", "zeros", 1, -1, -1), value(1)));
  // (1, -1): x = 1 on the right edge, y = 0: pixel (0, 1).
  EXPECT_TRUE(tensors_near(grid_sample("bilinear", "zeros", 1, 1, -1), value(2)));
  // Reflection folds x = 3 (grid 5 with align_corners) back into [0, 1], at 1.
  EXPECT_TRUE(tensors_near(grid_sample("nearest", "reflection", 1, 5, -1), value(2)));
}

TEST(OpGridSample, RejectsUnknownModesAndShapes) {
  EXPECT_TRUE(fails_with(
      run_node_status(NodeBuilder("GridSample", 16).inputs(2).attr("mode", "area").build(),
                      {float_tensor({1, 1, 2, 2}, {1, 2, 3, 4}), float_tensor({1, 1, 1, 2}, {0, 0})}),
      StatusCode::kInvalidArgument, "area"));
  EXPECT_TRUE(
      fails_with(run_node_status(NodeBuilder("GridSample", 16).inputs(2).build(),
                                 {float_tensor({1, 1, 2, 2}, {1, 2, 3, 4}), float_tensor({1, 1, 1, 1}, {0})}),
                 StatusCode::kUnsupported, "grid"));
}

// ---- LRN ----

TEST(OpLRN, NormalizesOverAChannelWindow) {
  const Tensor x = float_tensor({1, 3, 1, 1}, {1, 2, 3});
  // size 3: windows {0, 1}, {0, 1, 2}, {1, 2}; alpha / size = 1, beta = 1, bias = 1.
  const Node odd = NodeBuilder("LRN").attr("size", 3).attr("alpha", 3.0f).attr("beta", 1.0f).build();
  EXPECT_TRUE(tensors_near(run_one(odd, {x}), float_tensor({1, 3, 1, 1}, {1.0f / 6, 2.0f / 15, 3.0f / 14})));
  // size 2: the window is the channel and the next one.
  const Node even = NodeBuilder("LRN").attr("size", 2).attr("alpha", 2.0f).attr("beta", 1.0f).build();
  EXPECT_TRUE(tensors_near(run_one(even, {x}), float_tensor({1, 3, 1, 1}, {1.0f / 6, 2.0f / 14, 3.0f / 10})));
}

// ---- MaxUnpool ----

TEST(OpMaxUnpool, ScattersToTheIndicesOfTheUnpooledShape) {
  const Node node = NodeBuilder("MaxUnpool")
                        .inputs(2)
                        .attr("kernel_shape", std::vector<std::int64_t>{2, 2})
                        .attr("strides", std::vector<std::int64_t>{2, 2})
                        .build();
  const Tensor x = float_tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor indices = int64_tensor({1, 1, 2, 2}, {5, 7, 13, 15});
  EXPECT_TRUE(tensors_near(run_one(node, {x, indices}),
                           float_tensor({1, 1, 4, 4}, {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4})));
  // A larger output_shape keeps each index's coordinates: the extra row and column stay 0.
  const Node shaped = NodeBuilder("MaxUnpool")
                          .inputs(3)
                          .attr("kernel_shape", std::vector<std::int64_t>{2, 2})
                          .attr("strides", std::vector<std::int64_t>{2, 2})
                          .build();
  EXPECT_TRUE(tensors_near(run_one(shaped, {x, indices, int64_tensor({4}, {1, 1, 5, 5})}),
                           float_tensor({1, 1, 5, 5}, {0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0,
                                                       0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0})));
  EXPECT_TRUE(fails_with(run_node_status(node, {x, int64_tensor({1, 1, 2, 2}, {5, 7, 13, 16})}),
                         StatusCode::kInvalidArgument, "index 16"));
  EXPECT_TRUE(fails_with(run_node_status(shaped, {x, indices, int64_tensor({4}, {1, 1, 3, 5})}),
                         StatusCode::kInvalidArgument, "cannot hold"));
}

}  // namespace
}  // namespace fovea::runtime::testing
