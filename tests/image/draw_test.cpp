#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "image/draw.h"
#include "image/image_test_util.h"

namespace fovea::image::testing {
namespace {

DrawCommand rectangle(int x0, int y0, int x1, int y1, int thickness) {
  DrawCommand c;
  c.kind = DrawKind::kRectangle;
  c.x0 = x0;
  c.y0 = y0;
  c.x1 = x1;
  c.y1 = y1;
  c.thickness = thickness;
  return c;
}

DrawCommand line(int x0, int y0, int x1, int y1, int thickness) {
  DrawCommand c = rectangle(x0, y0, x1, y1, thickness);
  c.kind = DrawKind::kLine;
  return c;
}

DrawCommand text(int x, int y, const char* s, int scale) {
  DrawCommand c = rectangle(x, y, 0, 0, 1);
  c.kind = DrawKind::kText;
  std::strncpy(c.text, s, kMaxDrawText);
  c.scale = scale;
  return c;
}

// Rows of '#' where the first channel (R or Y) is nonzero.
std::string picture(const ImageView& view) {
  const int step = view.format == PixelFormat::kNV12 ? 1 : 3;
  std::string s;
  for (int y = 0; y < view.height; ++y) {
    for (int x = 0; x < view.width; ++x) s += view.row(0, y)[x * step] != 0 ? '#' : '.';
    s += '\n';
  }
  return s;
}

Status draw(HostImage& image, std::initializer_list<DrawCommand> commands) {
  return run_draw_cpu({{image.view()}, {}}, std::span<const DrawCommand>(commands.begin(), commands.size()),
                      DrawParams{});
}

TEST(Draw, RectangleOutlineAndFill) {
  HostImage image(PixelFormat::kRGB8, 7, 5, 3, 2);
  ASSERT_TRUE(draw(image, {rectangle(1, 1, 6, 5, 1)}).is_ok());
  EXPECT_EQ(picture(image.view()), ".......\n.#####.\n.#...#.\n.#...#.\n.#####.\n");
  HostImage thick(PixelFormat::kRGB8, 7, 5);
  ASSERT_TRUE(draw(thick, {rectangle(0, 0, 7, 5, 2)}).is_ok());
  EXPECT_EQ(picture(thick.view()), "#######\n#######\n##...##\n#######\n#######\n");
  HostImage filled(PixelFormat::kBGR8, 3, 2);
  DrawCommand half = rectangle(0, 0, 2, 2, 0);
  half.color[0] = 200;  // red
  half.color[2] = 50;   // blue
  half.alpha = 0.5f;
  ASSERT_TRUE(draw(filled, {half}).is_ok());
  EXPECT_EQ(filled.view().row(0, 1)[3 + 2], 100);  // BGR: red is the third byte
  EXPECT_EQ(filled.view().row(0, 1)[3 + 0], 25);
  EXPECT_EQ(filled.view().row(0, 1)[6 + 2], 0);  // outside
}

TEST(Draw, ClipsAtTheEdgesAndIgnoresShapesOutside) {
  HostImage image(PixelFormat::kRGB8, 4, 4);
  ASSERT_TRUE(draw(image, {rectangle(-2, -3, 3, 2, 0), rectangle(10, 10, 20, 20, 0), line(-9, -9, -5, -1, 3),
                           text(100, 0, "far", 2)})
                  .is_ok());
  EXPECT_EQ(picture(image.view()), "###.\n###.\n....\n....\n");
}

TEST(Draw, LinesCoverPixelsNearTheSegment) {
  HostImage image(PixelFormat::kRGB8, 6, 4);
  ASSERT_TRUE(draw(image, {line(0, 1, 4, 1, 1), line(0, 3, 0, 3, 1)}).is_ok());
  EXPECT_EQ(picture(image.view()), "......\n#####.\n......\n#.....\n");
  HostImage diagonal(PixelFormat::kRGB8, 4, 4);
  ASSERT_TRUE(draw(diagonal, {line(0, 0, 3, 3, 1)}).is_ok());
  EXPECT_EQ(picture(diagonal.view()), "#...\n.#..\n..#.\n...#\n");
  HostImage thick(PixelFormat::kRGB8, 5, 5);
  ASSERT_TRUE(draw(thick, {line(0, 2, 4, 2, 3)}).is_ok());
  EXPECT_EQ(picture(thick.view()), ".....\n#####\n#####\n#####\n.....\n");
}

TEST(Draw, TextOfAMatchesTheGlyphBits) {
  HostImage image(PixelFormat::kRGB8, 12, 12);
  ASSERT_TRUE(draw(image, {text(1, 2, "A", 1)}).is_ok());
  // The label's box starts at (1, 2) with 1 pixel of padding, so the cell starts at (2, 3).
  for (int row = 0; row < kGlyphHeight; ++row) {
    for (int col = 0; col < kGlyphWidth; ++col) {
      const bool ink = (kBitmapFont['A' - kFirstGlyph][row] >> (7 - col)) & 1;
      EXPECT_EQ(image.view().row(0, 3 + row)[(2 + col) * 3] != 0, ink) << row << "," << col;
    }
  }
  EXPECT_EQ(picture(image.view()).substr(13 * 3, 13 * 3), "....###.....\n...#...#....\n...#...#....\n");
}

TEST(Draw, ScaledTextWithABackgroundBox) {
  HostImage image(PixelFormat::kRGB8, 24, 24);
  DrawCommand label = text(0, 0, "-", 2);  // '-' is ink on glyph row 3 only
  label.background[1] = 90;
  label.background_alpha = 1.0f;
  ASSERT_TRUE(draw(image, {label}).is_ok());
  const std::uint8_t* ink = image.view().row(0, 2 + 2 * 3) + (2 + 2 * 1) * 3;
  EXPECT_EQ(ink[0], 255);  // white ink at glyph row 3, column 1 (magnified 2x, after 2 pixels padding)
  EXPECT_EQ(image.view().row(0, 0)[1], 90);            // the box's corner
  EXPECT_EQ(image.view().row(0, 19)[19 * 3 + 1], 90);  // box: 2 * 2 + 8 * 2 = 20 pixels wide and high
  EXPECT_EQ(image.view().row(0, 20)[1], 0);
  EXPECT_EQ(image.view().row(0, 0)[20 * 3 + 1], 0);
}

TEST(Draw, Nv12PaintsLumaAndTopLeftChroma) {
  HostImage image(PixelFormat::kNV12, 4, 4);
  ASSERT_TRUE(draw(image, {rectangle(1, 1, 3, 3, 0)}).is_ok());
  EXPECT_EQ(picture(image.view()), "....\n.##.\n.##.\n....\n");
  EXPECT_EQ(image.view().row(0, 1)[1], 235);  // white in BT.709 limited range
  EXPECT_EQ(image.view().row(1, 0)[0], 0);    // block (0, 0): its top-left (0, 0) is not covered
  EXPECT_EQ(image.view().row(1, 1)[2], 128);  // block (1, 1): (2, 2) is covered
  EXPECT_EQ(image.view().row(1, 1)[3], 128);
}

TEST(Draw, RejectsBadCommandsAndImages) {
  HostImage image(PixelFormat::kRGB8, 8, 8);
  HostImage gray(PixelFormat::kGRAY8, 8, 8);
  auto code = [](const Status& s) { return s.code(); };
  DrawCommand wrong_image = rectangle(0, 0, 2, 2, 1);
  wrong_image.image = 1;
  EXPECT_EQ(code(draw(image, {wrong_image})), StatusCode::kInvalidArgument);
  DrawCommand bright = rectangle(0, 0, 2, 2, 1);
  bright.alpha = 1.5f;
  EXPECT_EQ(code(draw(image, {bright})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(draw(image, {line(0, 0, 3, 3, 0)})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(draw(image, {text(0, 0, "x", 0)})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(draw(image, {rectangle(0, 0, kMaxDrawCoordinate + 1, 2, 1)})), StatusCode::kInvalidArgument);
  DrawCommand unterminated = text(0, 0, "", 1);
  std::memset(unterminated.text, 'a', sizeof(unterminated.text));
  EXPECT_EQ(code(draw(image, {unterminated})), StatusCode::kInvalidArgument);
  const DrawCommand ok[] = {rectangle(0, 0, 2, 2, 1)};
  EXPECT_EQ(code(run_draw_cpu({{gray.view()}, {}}, ok, DrawParams{})), StatusCode::kUnsupported);
  EXPECT_EQ(code(run_draw_cpu({{image.view()}, {Roi{0, 0, 4, 4}}}, ok, DrawParams{})),
            StatusCode::kInvalidArgument);
  ImageView empty = image.view();
  empty.width = 0;
  EXPECT_EQ(code(run_draw_cpu({{empty}, {}}, ok, DrawParams{})), StatusCode::kInvalidArgument);
  auto plan = plan_draw({{image.view()}, {}}, ok);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->buffer_bytes, 1024 + sizeof(DrawCommand));
}

TEST(BitmapFont, EveryPrintableCharacterHasAGlyphAndOthersFallBack) {
  for (int c = 33; c < 127; ++c) {
    int ink = 0;
    for (int row = 0; row < kGlyphHeight; ++row) ink |= kBitmapFont[c - kFirstGlyph][row];
    EXPECT_NE(ink, 0) << static_cast<char>(c);
    EXPECT_EQ(kBitmapFont[c - kFirstGlyph][kGlyphHeight - 1], 0) << "row 7 is spacing";
  }
  EXPECT_EQ(glyph_index('\n'), '?' - kFirstGlyph);
  EXPECT_EQ(glyph_index('A'), 'A' - kFirstGlyph);
}

}  // namespace
}  // namespace fovea::image::testing
