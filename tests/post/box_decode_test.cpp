// Box decoders: hand-computed SSD (center and corner priors, image scaling) and YOLO (objectness,
// sigmoid, a transposed YOLOv8-style view, float16) cases, and bad shapes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "image/tolerances.h"
#include "post/box_decode.h"
#include "runtime/tensor.h"

namespace fovea::post {
namespace {

using image::testing::kBoxTolerance;

TensorView host_tensor(std::vector<float>& v, std::initializer_list<std::int64_t> shape) {
  return contiguous_tensor(v.data(), DataType::kFloat32, MemoryKind::kHost, shape);
}

void expect_box(const float* b, float x1, float y1, float x2, float y2) {
  EXPECT_NEAR(b[0], x1, kBoxTolerance);
  EXPECT_NEAR(b[1], y1, kBoxTolerance);
  EXPECT_NEAR(b[2], x2, kBoxTolerance);
  EXPECT_NEAR(b[3], y2, kBoxTolerance);
}

TEST(SsdDecode, CenterAndCornerPriorsWithVariances) {
  // Prior at (0.5, 0.5) size 0.2 x 0.4; dx = 1 moves by 0.1 * 0.2; dw = ln(2) / 0.2 doubles the width.
  std::vector<float> loc = {1.0f, -1.0f, std::log(2.0f) / 0.2f, 0.0f};
  std::vector<float> center_priors = {0.5f, 0.5f, 0.2f, 0.4f};
  std::vector<float> corner_priors = {0.4f, 0.3f, 0.6f, 0.7f};
  std::vector<float> out(4);
  SsdDecodeParams params;
  params.image_width = 100.0f;
  params.image_height = 200.0f;
  // cx = 0.52, cy = 0.46, w = 0.4, h = 0.4
  ASSERT_TRUE(run_ssd_decode_cpu(host_tensor(loc, {1, 1, 4}), host_tensor(center_priors, {1, 4}), params,
                                 host_tensor(out, {1, 1, 4}))
                  .is_ok());
  expect_box(out.data(), 32.0f, 52.0f, 72.0f, 132.0f);
  params.prior_form = PriorForm::kCorner;
  ASSERT_TRUE(run_ssd_decode_cpu(host_tensor(loc, {1, 1, 4}), host_tensor(corner_priors, {1, 4}), params,
                                 host_tensor(out, {1, 1, 4}))
                  .is_ok());
  expect_box(out.data(), 32.0f, 52.0f, 72.0f, 132.0f);
}

TEST(SsdDecode, Float16Loc) {
  std::vector<runtime::Half> loc = {runtime::float_to_half(0.5f), runtime::float_to_half(0.0f),
                                    runtime::float_to_half(0.0f), runtime::float_to_half(0.0f)};
  std::vector<float> priors = {10.0f, 10.0f, 4.0f, 2.0f};
  std::vector<float> out(4);
  const TensorView loc_view = contiguous_tensor(loc.data(), DataType::kFloat16, MemoryKind::kHost, {1, 1, 4});
  ASSERT_TRUE(
      run_ssd_decode_cpu(loc_view, host_tensor(priors, {1, 4}), {}, host_tensor(out, {1, 1, 4})).is_ok());
  expect_box(out.data(), 8.2f, 9.0f, 12.2f, 11.0f);
}

TEST(SsdDecode, ShapeMismatchIsRejected) {
  std::vector<float> loc(8), priors(12), out(8);
  EXPECT_EQ(run_ssd_decode_cpu(host_tensor(loc, {1, 2, 4}), host_tensor(priors, {3, 4}), {},
                               host_tensor(out, {1, 2, 4}))
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(YoloDecode, ObjectnessTimesClassAndSigmoid) {
  std::vector<float> pred = {50, 40, 20, 10, 0.5f, 0.8f, 0.2f};
  std::vector<float> boxes(4), scores(2);
  YoloDecodeParams params;
  params.scale_x = 2.0f;
  ASSERT_TRUE(run_yolo_decode_cpu(host_tensor(pred, {1, 1, 7}), params, host_tensor(boxes, {1, 1, 4}),
                                  host_tensor(scores, {1, 1, 2}))
                  .is_ok());
  expect_box(boxes.data(), 80.0f, 35.0f, 120.0f, 45.0f);
  EXPECT_FLOAT_EQ(scores[0], 0.4f);
  EXPECT_FLOAT_EQ(scores[1], 0.1f);
  params.apply_sigmoid = true;
  ASSERT_TRUE(run_yolo_decode_cpu(host_tensor(pred, {1, 1, 7}), params, host_tensor(boxes, {1, 1, 4}),
                                  host_tensor(scores, {1, 1, 2}))
                  .is_ok());
  const auto sig = [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
  EXPECT_NEAR(scores[0], sig(0.5f) * sig(0.8f), 1e-6);
}

TEST(YoloDecode, TransposedViewWithoutObjectness) {
  // YOLOv8 layout [N, 4 + C, B] with B = 2, C = 1, read as [N, B, 4 + C] through strides.
  std::vector<float> raw = {10, 30, 10, 30, 4, 6, 2, 2, 0.7f, 0.3f};  // rows cx, cy, w, h, class0
  TensorView pred = contiguous_tensor(raw.data(), DataType::kFloat32, MemoryKind::kHost, {1, 2, 5});
  pred.strides = {10, 1, 2};
  std::vector<float> boxes(8), scores(2);
  YoloDecodeParams params;
  params.has_objectness = false;
  ASSERT_TRUE(run_yolo_decode_cpu(pred, params, host_tensor(boxes, {1, 2, 4}), host_tensor(scores, {1, 2, 1}))
                  .is_ok());
  expect_box(boxes.data(), 8.0f, 9.0f, 12.0f, 11.0f);
  expect_box(boxes.data() + 4, 27.0f, 29.0f, 33.0f, 31.0f);
  EXPECT_FLOAT_EQ(scores[0], 0.7f);
  EXPECT_FLOAT_EQ(scores[1], 0.3f);
}

// exp_rn against exp in double over the whole float range: within 2 ulp of the correctly rounded
// result where that is a normal float, exact at the edges (inf, 0, NaN).
TEST(ExpRn, WithinTwoUlpOverTheFloatRange) {
  int worst = 0;
  for (float x = -87.0f; x < 88.7f; x += 0.0137f) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    const float got = exp_rn(x);
    std::int32_t a, b;
    std::memcpy(&a, &want, 4);
    std::memcpy(&b, &got, 4);
    worst = std::max(worst, std::abs(a - b));
  }
  EXPECT_LE(worst, 2);
  EXPECT_EQ(exp_rn(0.0f), 1.0f);
  EXPECT_EQ(exp_rn(100.0f), INFINITY);
  EXPECT_EQ(exp_rn(-INFINITY), 0.0f);
  EXPECT_EQ(exp_rn(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_rn(NAN)));
  EXPECT_GT(exp_rn(-100.0f), 0.0f);  // subnormal
  EXPECT_NEAR(exp_rn(-100.0f) / 3.720075976020836e-44f, 1.0f, 0.01f);
}

// torchvision's BoxCoder(weights=(10, 10, 5, 5)).decode_single on a pixel corner anchor, with dw
// beyond bbox_xform_clip = log(1000 / 16).
TEST(SsdDecode, TorchvisionBoxCoder) {
  std::vector<float> loc = {1.0f, -2.0f, 5.0f * std::log(2.0f), 1000.0f};
  std::vector<float> anchors = {10.0f, 20.0f, 50.0f, 60.0f};  // w = h = 40, center (30, 40)
  std::vector<float> out(4);
  ASSERT_TRUE(run_ssd_decode_cpu(host_tensor(loc, {1, 1, 4}), host_tensor(anchors, {1, 4}),
                                 torchvision_ssd_decode_params(), host_tensor(out, {1, 1, 4}))
                  .is_ok());
  // cx = 0.1 * 40 + 30 = 34, w = 2 * 40 = 80; cy = -0.2 * 40 + 40 = 32, h = 62.5 * 40 = 2500.
  expect_box(out.data(), -6.0f, 32.0f - 1250.0f, 74.0f, 32.0f + 1250.0f);
}

TEST(YoloDecode, TooFewColumnsIsRejected) {
  std::vector<float> pred(5), boxes(4), scores(1);
  EXPECT_EQ(run_yolo_decode_cpu(host_tensor(pred, {1, 1, 5}), {}, host_tensor(boxes, {1, 1, 4}),
                                host_tensor(scores, {1, 1, 1}))
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea::post
