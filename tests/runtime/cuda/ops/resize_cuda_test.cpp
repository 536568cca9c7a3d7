// Resize and Upsample on CUDA against the CPU reference: every interpolation mode, coordinate
// transformation, nearest rounding, cubic coefficient, exclude_outside, antialias, roi with
// extrapolation, sizes with an aspect policy, axes; float32 and float16 (nearest: every dtype).
#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor floats(std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return float_tensor({n}, std::move(values));
}

// Resize-`opset` with scales (input 2), roi given only for tf_crop_and_resize.
::testing::AssertionResult scales_match(NodeBuilder builder, const Tensor& x, std::vector<float> scales,
                                        Precision p, Tensor roi = Tensor()) {
  const bool has_roi = !roi.empty_storage();
  NodeBuilder node = builder.inputs(3);
  if (!has_roi) node.omit_input(1);
  // roi and scales are float32 whatever the data's type (ONNX types them apart).
  return cuda_matches_cpu(node.build(), {x, roi, floats(std::move(scales))},
                          {.precision = p, .constant_inputs = {1, 2}, .keep_float32_inputs = {1, 2}});
}

::testing::AssertionResult sizes_match(NodeBuilder builder, const Tensor& x, std::vector<std::int64_t> sizes,
                                       Precision p) {
  const auto n = static_cast<std::int64_t>(sizes.size());
  return cuda_matches_cpu(builder.inputs(4).omit_input(1).omit_input(2).build(),
                          {x, Tensor(), Tensor(), int64_tensor({n}, sizes)},
                          {.precision = p, .constant_inputs = {3}});
}

TEST(CudaResize, NearestRoundingsAndCoordinates) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 13, 17}, 1);
  for (const char* rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    for (const char* coordinates : {"half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn",
                                    "pytorch_half_pixel", "half_pixel_symmetric"}) {
      for (Precision p : kPrecisions) {
        const auto builder = NodeBuilder("Resize", 19)
                                 .attr("mode", "nearest")
                                 .attr("nearest_mode", rounding)
                                 .attr("coordinate_transformation_mode", coordinates);
        EXPECT_TRUE(scales_match(builder, x, {1, 1, 2.5f, 0.6f}, p)) << rounding << " " << coordinates;
        EXPECT_TRUE(sizes_match(builder, x, {2, 3, 7, 40}, p)) << rounding << " " << coordinates;
      }
    }
  }
}

// Nearest moves elements, so it serves every dtype.
TEST(CudaResize, NearestEveryDtype) {
  FOVEA_REQUIRE_GPU();
  for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kInt8, DataType::kUInt8,
                         DataType::kBool, DataType::kFloat64}) {
    const Tensor x = random_tensor(dtype, {1, 2, 7, 9}, 2, 0, 100);
    EXPECT_TRUE(
        scales_match(NodeBuilder("Resize", 13).attr("mode", "nearest"), x, {1, 1, 3, 2}, Precision::kFloat32))
        << data_type_name(dtype);
  }
}

TEST(CudaResize, LinearCoordinateModes) {
  FOVEA_REQUIRE_GPU();
  for (const Shape& shape : {Shape{1, 3, 13, 17}, Shape{4, 5, 9, 7}}) {
    const Tensor x = random_tensor(DataType::kFloat32, shape, 3);
    for (const char* coordinates :
         {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"}) {
      for (Precision p : kPrecisions) {
        const auto builder = NodeBuilder("Resize", 19)
                                 .attr("mode", "linear")
                                 .attr("coordinate_transformation_mode", coordinates);
        EXPECT_TRUE(scales_match(builder, x, {1, 1, 2, 2}, p)) << coordinates;
        EXPECT_TRUE(scales_match(builder, x, {1, 1, 0.5f, 1.75f}, p)) << coordinates;
        EXPECT_TRUE(sizes_match(builder, x, {shape[0], shape[1], 1, 31}, p)) << coordinates;
      }
    }
  }
  // float64 interpolates in double.
  EXPECT_TRUE(scales_match(NodeBuilder("Resize", 13).attr("mode", "linear"),
                           random_tensor(DataType::kFloat64, {2, 2, 5, 6}, 4), {1, 1, 3, 0.5f},
                           Precision::kFloat32));
}

// The planar kernel's thread owns a run of neighbouring columns (8 in float16, 4 in float32, 2 for
// cubic) and walks down rows: rows a multiple of the run (one vector store each) and not (a partial
// run at the row's end), and more rows than the grid has blocks in y (4096), so threads take
// several rows. The x8 upsample is FCN's logits resize.
TEST(CudaResize, PlanarRunsOfColumnsAndManyRows) {
  FOVEA_REQUIRE_GPU();
  const Tensor logits = random_tensor(DataType::kFloat32, {2, 3, 5, 12}, 14);
  const Tensor tall = random_tensor(DataType::kFloat32, {3, 7, 50, 5}, 15);  // 3 * 7 * 200 rows
  for (Precision p : kPrecisions) {
    for (const char* mode : {"linear", "cubic", "nearest"}) {
      const auto builder = NodeBuilder("Resize", 19).attr("mode", mode);
      EXPECT_TRUE(scales_match(builder, logits, {1, 1, 8, 8}, p)) << mode;  // 96 columns
      EXPECT_TRUE(sizes_match(builder, logits, {2, 3, 11, 93}, p)) << mode;
      EXPECT_TRUE(scales_match(builder, tall, {1, 1, 4, 3.2f}, p)) << mode;  // 16 columns
    }
  }
  const Tensor bytes = random_tensor(DataType::kUInt8, {2, 2, 5, 6}, 16, 0, 255);
  EXPECT_TRUE(scales_match(NodeBuilder("Resize", 13).attr("mode", "nearest"), bytes, {1, 1, 2, 4},
                           Precision::kFloat32));  // 24 columns, 8 per thread
}

// Channels last (what the channels-last pass makes of a decoder's upsampling): the two axes before
// the last resized, the last untouched. The interleaved kernel takes 16-byte vectors of channels
// (8 in float16, 4 in float32, 2 in float64, 16 bytes) where the channels fill whole vectors; 6
// channels do not, and fall back to the general kernel. Rank 3 and 5 (leading axes merged), more
// rows than the grid has blocks in y (4096), and tf_crop_and_resize's extrapolation.
TEST(CudaResize, InterleavedChannelsLast) {
  FOVEA_REQUIRE_GPU();
  for (const std::int64_t channels : {8, 24, 6}) {
    const Tensor x = random_tensor(DataType::kFloat32, {2, 5, 7, channels}, 17);
    for (Precision p : kPrecisions) {
      for (const char* mode : {"linear", "cubic", "nearest"}) {
        const auto builder = NodeBuilder("Resize", 19).attr("mode", mode);
        EXPECT_TRUE(scales_match(builder, x, {1, 2, 2, 1}, p)) << mode << " " << channels;
        EXPECT_TRUE(scales_match(builder, x, {1, 1.6f, 3, 1}, p)) << mode << " " << channels;
        EXPECT_TRUE(sizes_match(builder, x, {2, 13, 4, channels}, p)) << mode << " " << channels;
      }
    }
  }
  const auto linear = NodeBuilder("Resize", 19).attr("mode", "linear");
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(scales_match(linear, random_tensor(DataType::kFloat32, {5, 7, 16}, 18), {2, 3, 1}, p));
    EXPECT_TRUE(
        scales_match(linear, random_tensor(DataType::kFloat32, {2, 3, 5, 6, 8}, 19), {1, 1, 2, 2, 1}, p));
    EXPECT_TRUE(
        scales_match(linear, random_tensor(DataType::kFloat32, {2, 1100, 3, 8}, 20), {1, 2, 1.5f, 1}, p));
  }
  EXPECT_TRUE(scales_match(linear, random_tensor(DataType::kFloat64, {2, 4, 5, 6}, 21), {1, 2, 2, 1},
                           Precision::kFloat32));
  EXPECT_TRUE(scales_match(NodeBuilder("Resize", 13).attr("mode", "nearest"),
                           random_tensor(DataType::kUInt8, {2, 4, 5, 32}, 22, 0, 255), {1, 2, 3, 1},
                           Precision::kFloat32));
  const Tensor roi = floats({0, -0.2f, 0.3f, 0, 1, 0.8f, 1.4f, 1});
  for (const char* mode : {"nearest", "linear"}) {
    const auto builder = NodeBuilder("Resize", 13)
                             .attr("mode", mode)
                             .attr("coordinate_transformation_mode", "tf_crop_and_resize")
                             .attr("extrapolation_value", 3.5f);
    EXPECT_TRUE(scales_match(builder, random_tensor(DataType::kFloat32, {1, 9, 11, 16}, 23),
                             {1, 1.7f, 0.8f, 1}, Precision::kFloat16, roi))
        << mode;
  }
}

TEST(CudaResize, CubicCoefficientsAndExcludeOutside) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 11, 14}, 5);
  for (float a : {-0.75f, -0.5f}) {
    for (int exclude : {0, 1}) {
      for (Precision p : kPrecisions) {
        const auto builder = NodeBuilder("Resize", 13)
                                 .attr("mode", "cubic")
                                 .attr("cubic_coeff_a", a)
                                 .attr("exclude_outside", exclude);
        EXPECT_TRUE(scales_match(builder, x, {1, 1, 2, 1.5f}, p)) << a << " " << exclude;
        EXPECT_TRUE(scales_match(builder, x, {1, 1, 0.6f, 0.5f}, p)) << a << " " << exclude;
      }
    }
  }
}

TEST(CudaResize, Antialias) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 29, 37}, 6);
  for (const char* mode : {"linear", "cubic"}) {
    for (Precision p : kPrecisions) {
      const auto builder = NodeBuilder("Resize", 18).attr("mode", mode).attr("antialias", 1);
      EXPECT_TRUE(scales_match(builder, x, {1, 1, 0.3f, 0.5f}, p)) << mode;
      EXPECT_TRUE(scales_match(builder, x, {1, 1, 1.5f, 0.25f}, p)) << mode;
    }
  }
}

TEST(CudaResize, CropAndResizeExtrapolates) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 9, 11}, 7);
  const Tensor roi = floats({0, 0, -0.2f, 0.3f, 1, 1, 0.8f, 1.4f});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (Precision p : kPrecisions) {
      const auto builder = NodeBuilder("Resize", 13)
                               .attr("mode", mode)
                               .attr("coordinate_transformation_mode", "tf_crop_and_resize")
                               .attr("extrapolation_value", 3.5f);
      EXPECT_TRUE(scales_match(builder, x, {1, 1, 1.7f, 0.8f}, p, roi)) << mode;
    }
  }
}

TEST(CudaResize, SizesAspectPoliciesAndAxes) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 10, 15}, 8);
  for (Precision p : kPrecisions) {
    for (const char* policy : {"not_larger", "not_smaller"}) {
      const auto builder = NodeBuilder("Resize", 18)
                               .attr("mode", "linear")
                               .attr("keep_aspect_ratio_policy", policy)
                               .attr("axes", std::vector<std::int64_t>{2, 3});
      EXPECT_TRUE(sizes_match(builder, x, {21, 21}, p)) << policy;
    }
    const auto axes =
        NodeBuilder("Resize", 18).attr("mode", "cubic").attr("axes", std::vector<std::int64_t>{-1, 1});
    EXPECT_TRUE(scales_match(axes, x, {1.5f, 0.5f}, p));
    // A 3-D input resized on its last axis (a sequence, not an image).
    EXPECT_TRUE(scales_match(NodeBuilder("Resize", 13).attr("mode", "linear"),
                             random_tensor(DataType::kFloat32, {3, 4, 19}, 9), {1, 1, 2.5f}, p));
  }
}

// Resized axes other than the last two take the general kernel (any number of tapped axes).
TEST(CudaResize, OuterAndManyAxes) {
  FOVEA_REQUIRE_GPU();
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (Precision p : kPrecisions) {
      const auto builder = NodeBuilder("Resize", 13).attr("mode", mode);
      EXPECT_TRUE(
          scales_match(builder, random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 11), {1.5f, 2, 1, 1}, p))
          << mode;
      EXPECT_TRUE(scales_match(builder, random_tensor(DataType::kFloat32, {2, 3, 5, 6, 7}, 12),
                               {1, 1, 2, 1.5f, 0.5f}, p))
          << mode;
      EXPECT_TRUE(
          scales_match(builder, random_tensor(DataType::kFloat32, {3, 4, 5, 6}, 13), {1, 1.5f, 1, 2}, p))
          << mode;
    }
  }
}

// The output shape comes from the constant scales, but tf_crop_and_resize's roi is device data:
// the taps are computed on the host at plan time, so that is an error naming the input.
TEST(CudaResize, NeedsConstantRoi) {
  FOVEA_REQUIRE_GPU();
  const Status status = run_cuda_node_status(NodeBuilder("Resize", 13)
                                                 .inputs(3)
                                                 .attr("mode", "linear")
                                                 .attr("coordinate_transformation_mode", "tf_crop_and_resize")
                                                 .build(),
                                             {random_tensor(DataType::kFloat32, {1, 1, 4, 4}, 1),
                                              floats({0, 0, 0, 0, 1, 1, 1, 1}), floats({1, 1, 2, 2})},
                                             {2});
  EXPECT_EQ(status.code(), StatusCode::kUnsupported) << status.to_string();
  EXPECT_NE(status.message().find("constant 'roi'"), std::string::npos) << status.to_string();
}

TEST(CudaUpsample, ScalesFromInputAndAttribute) {
  FOVEA_REQUIRE_GPU();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 7, 9}, 10);
  for (const char* mode : {"nearest", "linear"}) {
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Upsample", 9).inputs(2).attr("mode", mode).build(),
                                   {x, floats({1, 1, 2, 3})},
                                   {.precision = p, .constant_inputs = {1}, .keep_float32_inputs = {1}}))
          << mode;
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Upsample", 7)
                                       .attr("mode", mode)
                                       .attr("scales", std::vector<float>{1, 1, 1.5f, 2})
                                       .build(),
                                   {x}, {.precision = p}))
          << mode;
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
