#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "image/draw.h"
#include "image/image_test_util.h"
#include "image/osd_layout.h"

namespace fovea::image::testing {
namespace {

constexpr int kWidth = 200;
constexpr int kHeight = 100;

OsdObject object(Box box, int class_id, float score, std::string_view label, int track_id = -1) {
  OsdObject o;
  o.box = box;
  o.class_id = class_id;
  o.score = score;
  o.label = label;
  o.track_id = track_id;
  return o;
}

std::vector<DrawCommand> layout(std::initializer_list<OsdObject> objects, const OsdStyle& style = {},
                                int width = kWidth, int height = kHeight) {
  std::vector<DrawCommand> commands;
  const Status status = append_osd_commands(std::span<const OsdObject>(objects.begin(), objects.size()),
                                            style, width, height, commands);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return commands;
}

void expect_color(const std::uint8_t* got, const OsdColor& want) {
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[1]);
  EXPECT_EQ(got[2], want[2]);
}

TEST(OsdLayout, NoObjectsAppendNothing) {
  std::vector<DrawCommand> commands(2);
  ASSERT_TRUE(append_osd_commands({}, OsdStyle{}, kWidth, kHeight, commands).is_ok());
  EXPECT_EQ(commands.size(), 2u);
}

TEST(OsdLayout, BorderIsTheClampedRoundedBoxInTheClassColor) {
  OsdStyle style;
  style.thickness = 3;
  style.image = 2;
  style.show_labels = false;
  const auto commands = layout({object({10.4f, 20.5f, 50.49f, 60.6f}, 3, 0.5f, "car")}, style);
  ASSERT_EQ(commands.size(), 1u);
  const DrawCommand& c = commands[0];
  EXPECT_EQ(c.kind, DrawKind::kRectangle);
  EXPECT_EQ(c.image, 2);
  EXPECT_EQ(c.thickness, 3);
  EXPECT_EQ(c.alpha, 1.0f);
  // Edges round to the nearest pixel boundary, halves up: 10.4 -> 10, 20.5 -> 21, 50.49 -> 50.
  EXPECT_EQ(c.x0, 10);
  EXPECT_EQ(c.y0, 21);
  EXPECT_EQ(c.x1, 50);
  EXPECT_EQ(c.y1, 61);
  expect_color(c.color, kOsdPalette[3]);
}

TEST(OsdLayout, BoxesAreClampedToTheFrameAndCornersOrdered) {
  OsdStyle style;
  style.show_labels = false;
  const auto commands = layout({object({-30.0f, 90.0f, 1e9f, -5.0f}, 0, 0.9f, "")}, style);
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].x0, 0);
  EXPECT_EQ(commands[0].y0, 0);
  EXPECT_EQ(commands[0].x1, kWidth);
  EXPECT_EQ(commands[0].y1, 90);
}

TEST(OsdLayout, SkipsNonFiniteEmptyAndOutsideBoxes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const auto commands = layout(
      {object({nan, 1, 5, 5}, 0, 1, "a"), object({1, 1, inf, 5}, 0, 1, "b"),
       object({300, 10, 400, 20}, 0, 1, "outside"), object({10, -40, 20, -1}, 0, 1, "above"),
       object({10.6f, 10, 10.9f, 20}, 0, 1, "thinner than a pixel"), object({1, 2, 3, 4}, 5, 1, "kept")});
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0].x0, 1);
  expect_color(commands[0].color, kOsdPalette[5]);
}

TEST(OsdLayout, LabelTextWithTrackIdScoreAndClassNumber) {
  const OsdStyle style;
  EXPECT_EQ(osd_label_text(object({}, 0, 0.873f, "person"), style), "person 0.87");
  EXPECT_EQ(osd_label_text(object({}, 0, 0.876f, "person", 12), style), "#12 person 0.88");
  EXPECT_EQ(osd_label_text(object({}, 0, 0.5f, "person", 0), style), "#0 person 0.50");
  EXPECT_EQ(osd_label_text(object({}, 7, 1.0f, ""), style), "class 7 1.00");
  EXPECT_EQ(osd_label_text(object({}, 7, std::numeric_limits<float>::quiet_NaN(), "dog"), style), "dog");
  OsdStyle no_scores;
  no_scores.show_scores = false;
  EXPECT_EQ(osd_label_text(object({}, 1, 0.9f, "car", 3), no_scores), "#3 car");
}

TEST(OsdLayout, LongLabelsAreCutToTheDrawLimit) {
  const std::string name(100, 'x');
  const auto commands = layout({object({10, 50, 60, 90}, 0, 0.5f, name, 4)});
  ASSERT_EQ(commands.size(), 2u);
  const DrawCommand& text = commands[1];
  EXPECT_EQ(text.kind, DrawKind::kText);
  const std::string drawn(text.text);
  EXPECT_EQ(drawn.size(), static_cast<std::size_t>(kMaxDrawText));
  EXPECT_EQ(drawn, ("#4 " + name).substr(0, kMaxDrawText));
  EXPECT_EQ(label_size(name, 1).width, label_size(drawn, 1).width);
}

TEST(OsdLayout, LabelSizeMatchesTheDrawnTextBox) {
  EXPECT_EQ(label_size("", 1).width, 2);
  EXPECT_EQ(label_size("ab", 1).width, 18);
  EXPECT_EQ(label_size("ab", 1).height, 10);
  EXPECT_EQ(label_size("ab", 3).width, 54);
  EXPECT_EQ(label_size("ab", 3).height, 30);
  DrawCommand c;
  c.kind = DrawKind::kText;
  c.scale = 3;
  std::strcpy(c.text, "ab");
  const detail::PixelBox b = detail::command_box(c);
  EXPECT_EQ(b.x_end - b.x_begin, label_size("ab", 3).width);
  EXPECT_EQ(b.y_end - b.y_begin, label_size("ab", 3).height);
}

TEST(OsdLayout, LabelSitsAboveTheBoxWithADarkBackground) {
  OsdStyle style;
  style.text_scale = 2;
  style.image = 1;
  const auto commands = layout({object({30, 50, 80, 90}, 1, 0.25f, "cat")}, style);
  ASSERT_EQ(commands.size(), 2u);
  const DrawCommand& text = commands[1];
  EXPECT_EQ(text.kind, DrawKind::kText);
  EXPECT_EQ(std::string(text.text), "cat 0.25");
  EXPECT_EQ(text.image, 1);
  EXPECT_EQ(text.scale, 2);
  EXPECT_EQ(text.x0, 30);
  EXPECT_EQ(text.y0, 50 - label_size("cat 0.25", 2).height);
  expect_color(text.color, kOsdLabelTextColor);
  expect_color(text.background, kOsdLabelBackground);
  EXPECT_EQ(text.background_alpha, kOsdLabelBackgroundAlpha);
}

TEST(OsdLayout, LabelGoesInsideTheBoxAtTheTopEdge) {
  const auto commands =
      layout({object({30, 9, 80, 60}, 1, 0.25f, "cat"), object({30, 10, 80, 60}, 1, 0.25f, "cat")});
  ASSERT_EQ(commands.size(), 4u);
  EXPECT_EQ(commands[1].y0, 9);  // 9 rows above a 10-row label: inside, top edges aligned
  EXPECT_EQ(commands[3].y0, 0);  // exactly room above
}

TEST(OsdLayout, LabelIsShiftedIntoTheFrame) {
  const int label_width = label_size("cat 0.25", 1).width;
  const auto commands =
      layout({object({190, 50, 200, 60}, 1, 0.25f, "cat"), object({20, 95, 30, 100}, 1, 0.25f, "cat")},
             OsdStyle{}, kWidth, kHeight);
  ASSERT_EQ(commands.size(), 4u);
  EXPECT_EQ(commands[1].x0, kWidth - label_width);
  EXPECT_EQ(commands[1].y0, 40);
  EXPECT_EQ(commands[3].y0, 85);
  // A label wider than the frame starts at its left edge (the draw clips the rest).
  const auto narrow = layout({object({5, 2, 8, 9}, 1, 0.25f, "cat")}, OsdStyle{}, 20, 10);
  ASSERT_EQ(narrow.size(), 2u);
  EXPECT_EQ(narrow[1].x0, 0);
  EXPECT_EQ(narrow[1].y0, 0);
}

TEST(OsdLayout, FillComesFirstAtItsAlpha) {
  OsdStyle style;
  style.fill_alpha = 0.25f;
  style.show_labels = false;
  const auto commands = layout({object({1, 2, 30, 40}, 4, 0.5f, "x")}, style);
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0].kind, DrawKind::kRectangle);
  EXPECT_EQ(commands[0].thickness, 0);
  EXPECT_EQ(commands[0].alpha, 0.25f);
  expect_color(commands[0].color, kOsdPalette[4]);
  EXPECT_EQ(commands[1].thickness, style.thickness);
  EXPECT_EQ(commands[1].alpha, 1.0f);
}

TEST(OsdLayout, PaletteIsDeterministicDistinctAndWraps) {
  EXPECT_EQ(osd_class_color(0), kOsdPalette[0]);
  EXPECT_EQ(osd_class_color(kOsdPaletteSize + 2), kOsdPalette[2]);
  EXPECT_EQ(osd_class_color(-1), kOsdPalette[kOsdPaletteSize - 1]);
  // Kelly's closest pair (vivid yellow, vivid greenish yellow) is 28 apart in RGB.
  for (int i = 0; i < kOsdPaletteSize; ++i) {
    for (int j = 0; j < i; ++j) {
      double d2 = 0;
      for (int c = 0; c < 3; ++c) d2 += std::pow(double(kOsdPalette[i][c]) - kOsdPalette[j][c], 2);
      EXPECT_GE(std::sqrt(d2), 28.0) << "colors " << j << " and " << i;
    }
  }
}

TEST(OsdLayout, RejectsBadStylesAndFrames) {
  const OsdObject one = object({1, 2, 30, 40}, 0, 0.5f, "x");
  std::vector<DrawCommand> commands;
  auto run = [&](OsdStyle style, int width = kWidth, int height = kHeight) {
    return append_osd_commands({&one, 1}, style, width, height, commands);
  };
  OsdStyle s;
  s.thickness = 0;
  EXPECT_FALSE(run(s).is_ok());
  s = {};
  s.text_scale = 0;
  EXPECT_FALSE(run(s).is_ok());
  s.text_scale = kMaxTextScale + 1;
  EXPECT_FALSE(run(s).is_ok());
  s = {};
  s.fill_alpha = 1.5f;
  EXPECT_FALSE(run(s).is_ok());
  s.fill_alpha = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(run(s).is_ok());
  s = {};
  s.image = -1;
  EXPECT_FALSE(run(s).is_ok());
  EXPECT_FALSE(run(OsdStyle{}, 0, kHeight).is_ok());
  EXPECT_TRUE(commands.empty());
}

TEST(OsdLayout, DrawnOnAnRgbFrame) {
  HostImage image(PixelFormat::kRGB8, kWidth, kHeight, 3, 5);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < 3 * kWidth; ++x) image.view().row(0, y)[x] = 100;
  }
  OsdStyle style;
  style.thickness = 2;
  const auto commands = layout({object({40, 30, 90, 70}, 2, 0.5f, "")}, style);
  ASSERT_TRUE(run_draw_cpu({{image.view()}, {}}, commands, DrawParams{}).is_ok());
  auto pixel = [&](int x, int y) { return image.view().row(0, y) + 3 * x; };
  expect_color(pixel(40, 30), kOsdPalette[2]);  // border, both rows and columns of it
  expect_color(pixel(41, 69), kOsdPalette[2]);
  expect_color(pixel(89, 50), kOsdPalette[2]);
  expect_color(pixel(42, 32), {100, 100, 100});  // inside the border
  expect_color(pixel(90, 50), {100, 100, 100});  // right of the box
  // The label's padding row above the box: 100 blended 60% towards black.
  const int label_top = 30 - label_size("class 2 0.50", 1).height;
  expect_color(pixel(40, label_top), {40, 40, 40});
  expect_color(pixel(39, label_top), {100, 100, 100});
  int ink = 0;
  for (int y = label_top; y < 30; ++y) {
    for (int x = 40; x < 40 + label_size("class 2 0.50", 1).width; ++x) ink += pixel(x, y)[0] == 255;
  }
  EXPECT_GT(ink, 12 * 8);  // at least a few pixels per character
}

}  // namespace
}  // namespace fovea::image::testing
