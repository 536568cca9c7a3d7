#include <cmath>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

bool has_message(const Status& status, const std::string& part) {
  return status.message().find(part) != std::string::npos;
}

Tensor float_vector(std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return float_tensor({n}, std::move(values));
}

// The 4x4 input of the ONNX conformance tests (test_resize_*): 1..16.
Tensor ramp_4x4() {
  std::vector<float> values(16);
  for (int i = 0; i < 16; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
  return float_tensor({1, 1, 4, 4}, values);
}

// Resize-13 with scales (input 2), roi omitted.
std::vector<Tensor> resize_scales(NodeBuilder builder, const Tensor& x, std::vector<float> scales) {
  return run_node(builder.inputs(3).omit_input(1).build(), {x, Tensor(), float_vector(std::move(scales))});
}

// Resize-13 with sizes (input 3), roi and scales omitted.
std::vector<Tensor> resize_sizes(NodeBuilder builder, const Tensor& x, std::vector<std::int64_t> sizes) {
  const auto n = static_cast<std::int64_t>(sizes.size());
  return run_node(builder.inputs(4).omit_input(1).omit_input(2).build(),
                  {x, Tensor(), Tensor(), int64_tensor({n}, sizes)});
}

// Expected outputs below are those of the ONNX conformance data (onnx 1.12, test_resize_*), which
// the ONNX reference implementation produced.
TEST(OpResize, NearestModesMatchConformanceData) {
  const Tensor x = ramp_4x4();
  const Tensor x2x2 = float_tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor x2x4 = float_tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const auto upsample = resize_scales(NodeBuilder("Resize", 13).attr("mode", "nearest"), x2x2, {1, 1, 2, 3});
  EXPECT_TRUE(tensors_near(upsample[0], float_tensor({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                                    3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4})));
  const auto down = resize_sizes(NodeBuilder("Resize", 13).attr("mode", "nearest"), x2x4, {1, 1, 1, 3});
  EXPECT_TRUE(tensors_near(down[0], float_tensor({1, 1, 1, 3}, {1, 2, 4})));
  const auto ceil_half_pixel = resize_sizes(NodeBuilder("Resize", 13)
                                                .attr("mode", "nearest")
                                                .attr("coordinate_transformation_mode", "half_pixel")
                                                .attr("nearest_mode", "ceil"),
                                            x, {1, 1, 8, 8});
  const std::vector<float> ceil_row = {1, 2, 2, 3, 3, 4, 4, 4};
  const int ceil_rows[] = {0, 1, 1, 2, 2, 3, 3, 3};
  const auto floor_corners = resize_sizes(NodeBuilder("Resize", 13)
                                              .attr("mode", "nearest")
                                              .attr("coordinate_transformation_mode", "align_corners")
                                              .attr("nearest_mode", "floor"),
                                          x, {1, 1, 8, 8});
  const std::vector<float> floor_row = {1, 1, 1, 2, 2, 3, 3, 4};
  const int floor_rows[] = {0, 0, 0, 1, 1, 2, 2, 3};
  const auto ceil_asymmetric = resize_sizes(NodeBuilder("Resize", 13)
                                                .attr("mode", "nearest")
                                                .attr("coordinate_transformation_mode", "asymmetric")
                                                .attr("nearest_mode", "round_prefer_ceil"),
                                            x, {1, 1, 8, 8});
  for (int y = 0; y < 8; ++y) {
    for (int c = 0; c < 8; ++c) {
      const int i = y * 8 + c;
      EXPECT_EQ(ceil_half_pixel[0].data<float>()[i],
                ceil_row[static_cast<std::size_t>(c)] + 4.0f * static_cast<float>(ceil_rows[y]));
      EXPECT_EQ(ceil_asymmetric[0].data<float>()[i],
                ceil_row[static_cast<std::size_t>(c)] + 4.0f * static_cast<float>(ceil_rows[y]));
      EXPECT_EQ(floor_corners[0].data<float>()[i],
                floor_row[static_cast<std::size_t>(c)] + 4.0f * static_cast<float>(floor_rows[y]));
    }
  }
}

TEST(OpResize, NearestUpsampleByScales) {
  const auto out =
      resize_scales(NodeBuilder("Resize", 13).attr("mode", "nearest"), ramp_4x4(), {1, 1, 0.5f, 1.5f});
  // half_pixel, round_prefer_floor: rows (j+0.5)*2-0.5 -> 0.5, 2.5 -> 0, 2; columns (j+0.5)/1.5-0.5.
  EXPECT_TRUE(tensors_near(out[0], float_tensor({1, 1, 2, 6}, {1, 1, 2, 3, 3, 4, 9, 9, 10, 11, 11, 12})));
}

TEST(OpResize, TfHalfPixelForNnOpset11) {
  const Tensor x = ramp_4x4();
  // Opset 11: roi and scales are required inputs, written as empty tensors.
  const Tensor empty = Tensor::allocate(DataType::kFloat32, {0});
  const auto out = run_node(NodeBuilder("Resize", 11)
                                .inputs(4)
                                .attr("mode", "nearest")
                                .attr("coordinate_transformation_mode", "tf_half_pixel_for_nn")
                                .build(),
                            {x, empty, empty, int64_tensor({4}, {1, 1, 3, 2})});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({1, 1, 3, 2}, {6, 8, 10, 12, 14, 16})));
}

TEST(OpResize, LinearModesMatchConformanceData) {
  const Tensor x = ramp_4x4();
  const auto down = resize_scales(NodeBuilder("Resize", 13).attr("mode", "linear"),
                                  float_tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), {1, 1, 0.6f, 0.6f});
  EXPECT_TRUE(tensors_near(down[0], float_tensor({1, 1, 1, 2}, {2.6666667f, 4.3333333f})));
  const auto corners = resize_scales(NodeBuilder("Resize", 13)
                                         .attr("mode", "linear")
                                         .attr("coordinate_transformation_mode", "align_corners"),
                                     x, {1, 1, 0.5f, 0.5f});
  EXPECT_TRUE(tensors_near(corners[0], float_tensor({1, 1, 2, 2}, {1, 4, 13, 16})));
  // align_corners maps onto in * scale = 2.4 columns, not onto the floored 2.
  const auto corners_down =
      resize_scales(NodeBuilder("Resize", 13)
                        .attr("mode", "linear")
                        .attr("coordinate_transformation_mode", "align_corners"),
                    float_tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), {1, 1, 0.6f, 0.6f});
  EXPECT_TRUE(tensors_near(corners_down[0], float_tensor({1, 1, 1, 2}, {1, 3.1428571f})));
  const auto pytorch = resize_sizes(NodeBuilder("Resize", 13)
                                        .attr("mode", "linear")
                                        .attr("coordinate_transformation_mode", "pytorch_half_pixel"),
                                    x, {1, 1, 3, 1});
  EXPECT_TRUE(tensors_near(pytorch[0], float_tensor({1, 1, 3, 1}, {1.6666666f, 7.0f, 12.333333f})));
}

TEST(OpResize, LinearUpsampleOf2x2) {
  const Tensor x = float_tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto half_pixel = resize_scales(NodeBuilder("Resize", 13).attr("mode", "linear"), x, {1, 1, 2, 2});
  EXPECT_TRUE(tensors_near(
      half_pixel[0], float_tensor({1, 1, 4, 4}, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f,
                                                 3.25f, 3.5f, 3, 3.25f, 3.75f, 4})));
  const auto corners = resize_scales(NodeBuilder("Resize", 13)
                                         .attr("mode", "linear")
                                         .attr("coordinate_transformation_mode", "align_corners"),
                                     x, {1, 1, 2, 2});
  const float third = 1.0f / 3, two_thirds = 2.0f / 3;
  EXPECT_TRUE(tensors_near(
      corners[0], float_tensor({1, 1, 4, 4},
                               {1, 1 + third, 1 + two_thirds, 2, 1 + two_thirds, 2, 2 + third, 2 + two_thirds,
                                2 + third, 2 + two_thirds, 3, 3 + third, 3, 3 + third, 3 + two_thirds, 4})));
  // Opset 19 half_pixel_symmetric (values from the ONNX operator documentation's example).
  const auto symmetric = resize_scales(NodeBuilder("Resize", 19)
                                           .attr("mode", "linear")
                                           .attr("coordinate_transformation_mode", "half_pixel_symmetric"),
                                       x, {1, 1, 2.3f, 2.94f});
  EXPECT_TRUE(tensors_near(
      symmetric[0],
      float_tensor({1, 1, 4, 5},
                   {1.0f,        1.15986395f, 1.5f,        1.84013605f, 2.0f,        1.56521738f, 1.72508133f,
                    2.06521738f, 2.40535343f, 2.56521738f, 2.43478262f, 2.59464657f, 2.93478262f, 3.27491867f,
                    3.43478262f, 3.0f,        3.15986395f, 3.5f,        3.84013605f, 4.0f}),
      1e-5, 1e-5));
}

TEST(OpResize, CubicModesMatchConformanceData) {
  const Tensor x = ramp_4x4();
  const auto up = resize_scales(NodeBuilder("Resize", 13).attr("mode", "cubic"), x, {1, 1, 2, 2});
  const std::vector<float> first_row = {0.47265625f, 0.76953125f, 1.24609375f, 1.875f,
                                        2.28125f,    2.91015625f, 3.38671875f, 3.68359375f};
  const std::vector<float> first_column = {0.47265625f, 1.66015625f,  3.56640625f,  6.08203125f,
                                           7.70703125f, 10.22265625f, 12.12890625f, 13.31640625f};
  // The conformance output is separable: out[y][x] = row[x] + column[y] - row[0].
  for (int yy = 0; yy < 8; ++yy) {
    for (int xx = 0; xx < 8; ++xx) {
      EXPECT_NEAR(
          up[0].data<float>()[yy * 8 + xx],
          first_row[static_cast<std::size_t>(xx)] + first_column[static_cast<std::size_t>(yy)] - first_row[0],
          1e-4);
    }
  }
  const auto excluded = resize_scales(
      NodeBuilder("Resize", 13).attr("mode", "cubic").attr("cubic_coeff_a", -0.5f).attr("exclude_outside", 1),
      x, {1, 1, 0.8f, 0.8f});
  EXPECT_TRUE(
      tensors_near(excluded[0],
                   float_tensor({1, 1, 3, 3}, {1.36812675f, 2.6695014f, 4.0133367f, 6.57362535f, 7.875f,
                                               9.2188353f, 11.94896657f, 13.25034122f, 14.59417652f}),
                   1e-5, 1e-5));
  const auto asymmetric = resize_scales(
      NodeBuilder("Resize", 13).attr("mode", "cubic").attr("coordinate_transformation_mode", "asymmetric"), x,
      {1, 1, 2, 2});
  const std::vector<float> asymmetric_row = {1.0f, 1.40625f, 2.0f, 2.5f, 3.0f, 3.59375f, 4.0f, 4.09375f};
  for (int xx = 0; xx < 8; ++xx) {
    EXPECT_NEAR(asymmetric[0].data<float>()[xx], asymmetric_row[static_cast<std::size_t>(xx)], 1e-5);
  }
  EXPECT_NEAR(asymmetric[0].data<float>()[63], 16.46875f, 1e-5);
}

TEST(OpResize, TfCropAndResizeExtrapolates) {
  const auto out = run_node(NodeBuilder("Resize", 13)
                                .inputs(4)
                                .omit_input(2)
                                .attr("mode", "linear")
                                .attr("coordinate_transformation_mode", "tf_crop_and_resize")
                                .attr("extrapolation_value", 10.0f)
                                .build(),
                            {ramp_4x4(), float_vector({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}), Tensor(),
                             int64_tensor({4}, {1, 1, 3, 3})});
  EXPECT_TRUE(tensors_near(out[0], float_tensor({1, 1, 3, 3}, {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10}),
                           1e-5, 1e-5));
}

// Independent 2-D bilinear interpolation with half_pixel coordinates, the usual NCHW case.
Tensor naive_bilinear(const Tensor& x, std::int64_t out_h, std::int64_t out_w) {
  const std::int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor out = Tensor::allocate(DataType::kFloat32, {x.dim(0), x.dim(1), out_h, out_w});
  auto source = [](std::int64_t i, std::int64_t n_in, std::int64_t n_out) {
    const double s =
        (static_cast<double>(i) + 0.5) * static_cast<double>(n_in) / static_cast<double>(n_out) - 0.5;
    return std::clamp(s, 0.0, static_cast<double>(n_in - 1));
  };
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x.data<float>() + p * h * w;
    for (std::int64_t yy = 0; yy < out_h; ++yy) {
      const double sy = source(yy, h, out_h);
      const auto y0 = static_cast<std::int64_t>(sy);
      const std::int64_t y1 = std::min(y0 + 1, h - 1);
      const double fy = sy - static_cast<double>(y0);
      for (std::int64_t xx = 0; xx < out_w; ++xx) {
        const double sx = source(xx, w, out_w);
        const auto x0 = static_cast<std::int64_t>(sx);
        const std::int64_t x1 = std::min(x0 + 1, w - 1);
        const double fx = sx - static_cast<double>(x0);
        const double v = (1 - fy) * ((1 - fx) * in[y0 * w + x0] + fx * in[y0 * w + x1]) +
                         fy * ((1 - fx) * in[y1 * w + x0] + fx * in[y1 * w + x1]);
        out.data<float>()[(p * out_h + yy) * out_w + xx] = static_cast<float>(v);
      }
    }
  }
  return out;
}

TEST(OpResize, BilinearMatchesNaiveOnOddSizesAndBatch) {
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 13, 17}, 1);
  const auto out = resize_sizes(NodeBuilder("Resize", 13).attr("mode", "linear"), x, {2, 3, 29, 9});
  EXPECT_TRUE(tensors_near(out[0], naive_bilinear(x, 29, 9)));
}

TEST(OpResize, SegmentationUpsampleNearestMatchesNaive) {
  const Tensor x = random_tensor(DataType::kFloat32, {1, 21, 65, 65}, 2);
  const auto out = resize_sizes(NodeBuilder("Resize", 13).attr("mode", "nearest"), x, {1, 21, 520, 520});
  ASSERT_EQ(out[0].shape(), (Shape{1, 21, 520, 520}));
  // Scale 8, half_pixel, round_prefer_floor: (j + 0.5) / 8 - 0.5 never ends in .5, so it rounds.
  auto source = [](std::int64_t j) {
    return std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::lround((static_cast<double>(j) + 0.5) / 8 - 0.5)), 0, 64);
  };
  std::int64_t mismatches = 0;
  for (std::int64_t c = 0; c < 21; ++c) {
    for (std::int64_t yy = 0; yy < 520; ++yy) {
      for (std::int64_t xx = 0; xx < 520; ++xx) {
        mismatches += out[0].data<float>()[(c * 520 + yy) * 520 + xx] !=
                      x.data<float>()[(c * 65 + source(yy)) * 65 + source(xx)];
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(OpResize, NearestMovesIntegersAndOneDimension) {
  const Tensor x = Tensor::from_vector<std::uint8_t>(DataType::kUInt8, {5}, {10, 20, 30, 40, 50});
  const auto out = resize_sizes(NodeBuilder("Resize", 13)
                                    .attr("mode", "nearest")
                                    .attr("nearest_mode", "floor")
                                    .attr("coordinate_transformation_mode", "asymmetric"),
                                x, {3});
  ASSERT_EQ(out[0].dtype(), DataType::kUInt8);
  // asymmetric: j * 5 / 3 -> 0, 1.67, 3.33 -> floor 0, 1, 3.
  EXPECT_EQ(out[0].data<std::uint8_t>()[0], 10);
  EXPECT_EQ(out[0].data<std::uint8_t>()[1], 20);
  EXPECT_EQ(out[0].data<std::uint8_t>()[2], 40);
}

TEST(OpResize, AxesAndKeepAspectRatioPolicyOpset18) {
  const Tensor x = random_tensor(DataType::kFloat32, {3, 5}, 3);
  const auto not_smaller =
      resize_sizes(NodeBuilder("Resize", 18).attr("keep_aspect_ratio_policy", "not_smaller"), x, {6, 6});
  EXPECT_EQ(not_smaller[0].shape(), (Shape{6, 10}));
  const auto not_larger =
      resize_sizes(NodeBuilder("Resize", 18).attr("keep_aspect_ratio_policy", "not_larger"), x, {6, 6});
  EXPECT_EQ(not_larger[0].shape(), (Shape{4, 6}));  // scale 1.2: 3.6 rounds half up to 4
  const Tensor image = random_tensor(DataType::kFloat32, {1, 3, 13, 17}, 4);
  const auto axes = resize_sizes(
      NodeBuilder("Resize", 18).attr("mode", "linear").attr("axes", std::vector<std::int64_t>{-1, 2}), image,
      {9, 29});
  EXPECT_TRUE(tensors_near(axes[0], naive_bilinear(image, 29, 9)));
}

TEST(OpResize, AntialiasWidensLinearKernelWhenDownsampling) {
  const Tensor x = float_tensor({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  const auto out =
      resize_scales(NodeBuilder("Resize", 18).attr("mode", "linear").attr("antialias", 1), x, {0.5f});
  // Kernel 1 - |u| / 2 over four taps (0.125, 0.375, 0.375, 0.125), edges clamped.
  EXPECT_TRUE(tensors_near(out[0], float_tensor({4}, {1.625f, 3.5f, 5.5f, 7.375f})));
}

TEST(OpResize, InfersShapeFromKnownScalesOnly) {
  const Tensor scales = float_vector({1, 1, 2, 0.5f});
  const Node node = NodeBuilder("Resize", 13).inputs(3).omit_input(1).build();
  const auto types = infer_node(nullptr, node,
                                {ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3),
                                                                    Dim::known_size(7), Dim::known_size(9)}},
                                 ValueType{}, ValueType{DataType::kFloat32, dims_of({4})}},
                                {nullptr, nullptr, &scales});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ(types.value()[0].dims,
            std::optional(Dims{Dim::unknown(), Dim::known_size(3), Dim::known_size(14), Dim::known_size(4)}));
}

TEST(OpResize, RejectsBadModeBothScalesAndSizesAndCubicOnIntegers) {
  const Tensor x = ramp_4x4();
  const Status mode =
      run_node_status(NodeBuilder("Resize", 13).inputs(3).omit_input(1).attr("mode", "area").build(),
                      {x, Tensor(), float_vector({1, 1, 2, 2})});
  EXPECT_EQ(mode.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(mode, "unknown mode 'area'")) << mode.message();
  const Status both =
      run_node_status(NodeBuilder("Resize", 13).inputs(4).omit_input(1).build(),
                      {x, Tensor(), float_vector({1, 1, 2, 2}), int64_tensor({4}, {1, 1, 8, 8})});
  EXPECT_TRUE(has_message(both, "exactly one of scales and sizes")) << both.message();
  const Status integers = run_node_status(
      NodeBuilder("Resize", 13).inputs(3).omit_input(1).attr("mode", "cubic").build(),
      {random_tensor(DataType::kInt32, {1, 1, 4, 4}, 5, 0, 9), Tensor(), float_vector({1, 1, 2, 2})});
  EXPECT_TRUE(has_message(integers, "type mismatch")) << integers.message();
}

TEST(OpUpsample, NearestFromInputAndAttributeScales) {
  const Tensor x = float_tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor expected =
      float_tensor({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  const auto opset9 = run_node(NodeBuilder("Upsample", 9).inputs(2).attr("mode", "nearest").build(),
                               {x, float_vector({1, 1, 2, 3})});
  EXPECT_TRUE(tensors_near(opset9[0], expected));
  const auto opset7 = run_node(NodeBuilder("Upsample", 7)
                                   .attr("mode", "nearest")
                                   .attr("scales", std::vector<float>{1, 1, 2, 3})
                                   .build(),
                               {x});
  EXPECT_TRUE(tensors_near(opset7[0], expected));
}

TEST(OpUpsample, LinearUsesAsymmetricCoordinates) {
  const auto out = run_node(NodeBuilder("Upsample", 9).inputs(2).attr("mode", "linear").build(),
                            {float_tensor({1, 1, 1, 2}, {1, 3}), float_vector({1, 1, 1, 4})});
  // x / 4 -> 0, 0.25, 0.5, 0.75, 1 (clamped), ...
  EXPECT_TRUE(tensors_near(out[0], float_tensor({1, 1, 1, 8}, {1, 1.5f, 2, 2.5f, 3, 3, 3, 3})));
}

TEST(OpUpsample, RejectsCubic) {
  const Status status = run_node_status(NodeBuilder("Upsample", 9).inputs(2).attr("mode", "cubic").build(),
                                        {ramp_4x4(), float_vector({1, 1, 2, 2})});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has_message(status, "cubic")) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
