// torchvision's SSD default boxes: the anchor counts of SSD300 and SSDLite320 and hand-computed
// boxes (the first anchor of each, and SSD300's last, clamped by clip), and bad configs.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "image/tolerances.h"
#include "post/ssd_priors.h"

namespace fovea::post {
namespace {

using image::testing::kBoxTolerance;

void expect_box(const std::vector<float>& boxes, std::size_t anchor, float x1, float y1, float x2, float y2) {
  EXPECT_NEAR(boxes[anchor * 4 + 0], x1, kBoxTolerance) << anchor;
  EXPECT_NEAR(boxes[anchor * 4 + 1], y1, kBoxTolerance) << anchor;
  EXPECT_NEAR(boxes[anchor * 4 + 2], x2, kBoxTolerance) << anchor;
  EXPECT_NEAR(boxes[anchor * 4 + 3], y2, kBoxTolerance) << anchor;
}

TEST(SsdPriors, Ssd300Vgg16) {
  auto boxes = default_boxes(ssd300_vgg16_default_boxes(), 300, 300);
  ASSERT_TRUE(boxes.is_ok());
  ASSERT_EQ(boxes->size(), 8732u * 4);
  // Cell (0, 0) of the 38 x 38 map: center 0.5 / 37.5, scale 0.07: (0.01333 -+ 0.035) * 300.
  expect_box(*boxes, 0, -6.5f, -6.5f, 14.5f, 14.5f);
  // The 1 x 1 map's last pair: aspect 2 transposed, (0.87 / sqrt 2, 0.87 sqrt 2 = 1.23 -> 1).
  const float w = 0.87f / std::sqrt(2.0f);
  expect_box(*boxes, 8731, (0.5f - 0.5f * w) * 300, 0.0f, (0.5f + 0.5f * w) * 300, 300.0f);
}

TEST(SsdPriors, SsdLite320) {
  auto boxes = default_boxes(ssdlite320_default_boxes(), 320, 320);
  ASSERT_TRUE(boxes.is_ok());
  ASSERT_EQ(boxes->size(), 3234u * 4);
  // Cell (0, 0) of the 20 x 20 map: center 0.5 / 20 = 0.025, scale 0.2: (0.025 -+ 0.1) * 320.
  expect_box(*boxes, 0, -24.0f, -24.0f, 40.0f, 40.0f);
}

TEST(SsdPriors, InconsistentConfigIsRefused) {
  DefaultBoxConfig c = ssd300_vgg16_default_boxes();
  c.scales.pop_back();
  EXPECT_EQ(default_boxes(c, 300, 300).status().code(), StatusCode::kInvalidArgument);
  c = ssd300_vgg16_default_boxes();
  c.grid_widths[2] = 0;
  EXPECT_EQ(default_boxes(c, 300, 300).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(default_boxes(ssd300_vgg16_default_boxes(), 0, 300).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea::post
