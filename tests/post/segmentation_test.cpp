// Segmentation: argmax (NCHW/NHWC, ties, NaN, float16) and class masks (nearest, bilinear with its
// 0.5 threshold, letterbox mapping, pixels outside the map), plus bad arguments.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "post/class_map.h"
#include "post/class_mask.h"
#include "runtime/tensor.h"

namespace fovea::post {
namespace {

using image::testing::HostImage;

std::vector<int> pixels(const ImageView& view) {
  std::vector<int> out;
  for (int y = 0; y < view.height; ++y) {
    for (int x = 0; x < view.width; ++x) out.push_back(view.row(0, y)[x]);
  }
  return out;
}

TEST(ClassMap, NchwTiesAndNan) {
  // 3 classes over 1 x 4 pixels: a clear winner, a tie (lower index wins), NaN losing, all NaN.
  const float nan = std::nanf("");
  std::vector<float> scores = {0.1f, 0.5f, nan,  nan,   // class 0
                               0.9f, 0.5f, 0.2f, nan,   // class 1
                               0.3f, 0.4f, 0.1f, nan};  // class 2
  HostImage map(PixelFormat::kGRAY8, 4, 1, 3, 5);
  ASSERT_TRUE(
      run_class_map_cpu(contiguous_tensor(scores.data(), DataType::kFloat32, MemoryKind::kHost, {1, 3, 1, 4}),
                        {}, image::ImageBatch{{map.view()}, {}})
          .is_ok());
  EXPECT_EQ(pixels(map.view()), (std::vector<int>{1, 0, 1, 0}));
}

TEST(ClassMap, NhwcFloat16Batch) {
  // 2 images of 2 x 1 pixels, 2 classes, channels last.
  std::vector<runtime::Half> scores;
  for (float v : {1.0f, 2.0f, 3.0f, 0.0f, -1.0f, -2.0f, 0.0f, 0.5f})
    scores.push_back(runtime::float_to_half(v));
  HostImage a(PixelFormat::kGRAY8, 2, 1), b(PixelFormat::kGRAY8, 2, 1);
  ASSERT_TRUE(
      run_class_map_cpu(contiguous_tensor(scores.data(), DataType::kFloat16, MemoryKind::kHost, {2, 1, 2, 2}),
                        ClassMapParams{ChannelLayout::kNHWC}, image::ImageBatch{{a.view(), b.view()}, {}})
          .is_ok());
  EXPECT_EQ(pixels(a.view()), (std::vector<int>{1, 0}));
  EXPECT_EQ(pixels(b.view()), (std::vector<int>{0, 1}));
}

TEST(ClassMap, BadArgumentsAreRejected) {
  std::vector<float> scores(300 * 4);
  HostImage map(PixelFormat::kGRAY8, 2, 2), wrong(PixelFormat::kGRAY8, 3, 2);
  EXPECT_EQ(run_class_map_cpu(
                contiguous_tensor(scores.data(), DataType::kFloat32, MemoryKind::kHost, {1, 300, 2, 2}), {},
                image::ImageBatch{{map.view()}, {}})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      run_class_map_cpu(contiguous_tensor(scores.data(), DataType::kFloat32, MemoryKind::kHost, {1, 3, 2, 2}),
                        {}, image::ImageBatch{{wrong.view()}, {}})
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(
      run_class_map_cpu(contiguous_tensor(scores.data(), DataType::kFloat32, MemoryKind::kHost, {2, 3, 2, 2}),
                        {}, image::ImageBatch{{map.view()}, {}})
          .code(),
      StatusCode::kInvalidArgument);
}

// A 2 x 1 class map: class 3 on the left, class 7 on the right.
HostImage two_class_map() {
  HostImage map(PixelFormat::kGRAY8, 2, 1, 3, 3);
  map.view().row(0, 0)[0] = 3;
  map.view().row(0, 0)[1] = 7;
  return map;
}

TEST(ClassMask, NearestStretch) {
  HostImage map = two_class_map();
  HostImage mask(PixelFormat::kGRAY8, 5, 2, 3, 1);
  ClassMaskParams params;
  params.classes = {7};
  ASSERT_TRUE(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask.view()}, {}})
          .is_ok());
  // u = (x + 0.5) * 0.4: 0.2 0.6 1.0 1.4 1.8 → map pixels 0 0 1 1 1.
  EXPECT_EQ(pixels(mask.view()), (std::vector<int>{0, 0, 255, 255, 255, 0, 0, 255, 255, 255}));
}

TEST(ClassMask, BilinearThresholdsAtHalf) {
  HostImage map = two_class_map();
  HostImage mask(PixelFormat::kGRAY8, 8, 1);
  ClassMaskParams params;
  params.classes = {7};
  params.interpolation = MaskInterpolation::kBilinear;
  ASSERT_TRUE(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask.view()}, {}})
          .is_ok());
  // u - 0.5 = (x + 0.5) / 4 - 0.5: -0.375 -0.125 0.125 0.375 0.625 0.875 1.125 1.375; the indicator
  // interpolates to 0 0 0.125 0.375 0.625 0.875 1 1.
  EXPECT_EQ(pixels(mask.view()), (std::vector<int>{0, 0, 0, 0, 255, 255, 255, 255}));
  // An interpolated value of exactly 0.5 is foreground.
  HostImage mask3(PixelFormat::kGRAY8, 3, 1);
  params.mappings = {MaskMapping{0.5f, 1.0f, 0.25f, 0.0f}};  // x = 1: u = 1.0, weight 0.5
  ASSERT_TRUE(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask3.view()}, {}})
          .is_ok());
  EXPECT_EQ(pixels(mask3.view()), (std::vector<int>{0, 255, 255}));
}

TEST(ClassMask, LetterboxMappingAndOutsidePixels) {
  // A 4 x 2 frame letterboxed into a 4 x 4 input (scale 1, pad_y 1); the class map is the input at
  // half resolution (2 x 2) with class 1 only in its bottom-right pixel.
  HostImage map(PixelFormat::kGRAY8, 2, 2);
  map.view().row(0, 0)[0] = 0;
  map.view().row(0, 0)[1] = 0;
  map.view().row(0, 1)[0] = 0;
  map.view().row(0, 1)[1] = 1;
  HostImage mask(PixelFormat::kGRAY8, 4, 2);
  ClassMaskParams params;
  params.classes = {1};
  params.mappings = {preprocess_mask_mapping(image::Roi{0, 0, 4, 2}, 1.0f, 1.0f, 0.0f, 1.0f, 4, 4, 2, 2)};
  ASSERT_TRUE(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask.view()}, {}})
          .is_ok());
  // Frame row 0 → input row 1.5 → map row 0.75 (top); frame row 1 → map row 1.25 (bottom).
  EXPECT_EQ(pixels(mask.view()), (std::vector<int>{0, 0, 0, 0, 0, 0, 255, 255}));
  // A crop ROI starting at x = 2: frame columns 0 and 1 fall left of the map and are 0.
  params.mappings = {preprocess_mask_mapping(image::Roi{2, 0, 2, 2}, 2.0f, 2.0f, 0.0f, 0.0f, 4, 4, 2, 2)};
  ASSERT_TRUE(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask.view()}, {}})
          .is_ok());
  EXPECT_EQ(pixels(mask.view()), (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 255}));
}

TEST(ClassMask, BadArgumentsAreRejected) {
  HostImage map = two_class_map();
  HostImage mask(PixelFormat::kGRAY8, 4, 4);
  ClassMaskParams params;
  params.classes = {256};
  EXPECT_EQ(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask.view()}, {}})
          .code(),
      StatusCode::kInvalidArgument);
  params.classes = {1};
  EXPECT_EQ(run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params,
                               image::ImageBatch{{mask.view(), mask.view()}, {}})
                .code(),
            StatusCode::kInvalidArgument);
  params.mappings = {MaskMapping{}, MaskMapping{}};
  EXPECT_EQ(
      run_class_mask_cpu(image::ImageBatch{{map.view()}, {}}, params, image::ImageBatch{{mask.view()}, {}})
          .code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea::post
