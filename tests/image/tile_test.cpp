#include <vector>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/resize.h"
#include "image/tile.h"

namespace fovea::image::testing {
namespace {

void expect_roi(const Roi& got, const Roi& want) {
  EXPECT_EQ(got.x, want.x);
  EXPECT_EQ(got.y, want.y);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
}

TEST(TileLayout, SquareGridByDefault) {
  auto one = tile_layout(1, 1920, 1080);
  ASSERT_TRUE(one.is_ok());
  ASSERT_EQ(one->tiles.size(), 1u);
  expect_roi(one->tiles[0], {0, 0, 1920, 1080});
  auto four = tile_layout(4, 1920, 1080);
  ASSERT_TRUE(four.is_ok());
  EXPECT_EQ(four->columns, 2);
  EXPECT_EQ(four->rows, 2);
  expect_roi(four->tiles[3], {960, 540, 960, 540});
  auto five = tile_layout(5, 1920, 1080);
  ASSERT_TRUE(five.is_ok());
  EXPECT_EQ(five->columns, 3);
  EXPECT_EQ(five->rows, 2);
  expect_roi(five->tiles[4], {640, 540, 640, 540});
  auto ten = tile_layout(10, 1000, 502);  // 4 x 3: 250 x 167, rounded down to 250 x 166
  ASSERT_TRUE(ten.is_ok());
  EXPECT_EQ(ten->columns, 4);
  EXPECT_EQ(ten->rows, 3);
  expect_roi(ten->tiles[9], {250, 332, 250, 166});
}

TEST(TileLayout, ColumnsGivenAndTilesEven) {
  auto wide = tile_layout(6, 1000, 500, 4);  // 4 x 2 with two tiles free: 250 -> 250, 250 -> 250
  ASSERT_TRUE(wide.is_ok());
  EXPECT_EQ(wide->rows, 2);
  expect_roi(wide->tiles[5], {250, 250, 250, 250});
  auto odd = tile_layout(3, 998, 100, 3);  // 332.67 -> 332
  ASSERT_TRUE(odd.is_ok());
  expect_roi(odd->tiles[2], {664, 0, 332, 100});
  auto column = tile_layout(3, 100, 100, 1);  // 100 / 3 = 33 -> 32
  ASSERT_TRUE(column.is_ok());
  expect_roi(column->tiles[2], {0, 64, 100, 32});
}

TEST(TileLayout, RejectsImpossibleGrids) {
  EXPECT_FALSE(tile_layout(0, 640, 480).is_ok());
  EXPECT_FALSE(tile_layout(4, 641, 480).is_ok());
  EXPECT_FALSE(tile_layout(4, 640, 0).is_ok());
  EXPECT_FALSE(tile_layout(4, 640, 480, -1).is_ok());
  EXPECT_FALSE(tile_layout(4, 640, 480, 1 << 20).is_ok());
  EXPECT_TRUE(tile_layout(9, 6, 6).is_ok());    // 3 x 3 tiles of 2 x 2
  EXPECT_FALSE(tile_layout(16, 6, 6).is_ok());  // 4 x 4 tiles of 1 x 1
  EXPECT_FALSE(tile_layout(9, 4, 6).is_ok());
}

TEST(TileLayout, FramesKeepTheirAspectCenteredOnEvenPixels) {
  expect_roi(fit_in_tile({640, 540, 640, 540}, 1920, 1080), {640, 540 + 90, 640, 360});
  expect_roi(fit_in_tile({0, 0, 960, 540}, 640, 480), {120, 0, 720, 540});
  expect_roi(fit_in_tile({0, 0, 960, 540}, 1920, 1080), {0, 0, 960, 540});
  // 4x2 into 10x10: height 5 rounds to 6 (halves up), offset (10 - 6) / 2 = 2.
  expect_roi(fit_in_tile({2, 4, 10, 10}, 4, 2), {2, 6, 10, 6});
  // 6x2 into 10x10: height 3.33 rounds to 4, offset 3 rounds down to 2.
  expect_roi(fit_in_tile({0, 0, 10, 10}, 6, 2), {0, 2, 10, 4});
  expect_roi(fit_in_tile({0, 0, 10, 10}, 1000, 2), {0, 4, 10, 2});  // at least 2
  expect_roi(fit_in_tile({0, 0, 10, 10}, 2, 1000), {4, 0, 2, 10});
}

// An NV12 image with every sample set: Y = y, U = u, V = v.
void fill_nv12(HostImage& image, int y, int u, int v) {
  ASSERT_TRUE(
      fill_canvas_cpu(image.view(), Nv12Color{static_cast<std::uint8_t>(y), static_cast<std::uint8_t>(u),
                                              static_cast<std::uint8_t>(v)})
          .is_ok());
}

TEST(Tile, FillSetsEverySampleAndNoPadding) {
  HostImage canvas(PixelFormat::kNV12, 6, 4, 3, 3);
  ASSERT_TRUE(fill_canvas_cpu(canvas.view()).is_ok());
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 6 + 3; ++x) EXPECT_EQ(canvas.view().row(0, y)[x], x < 6 ? 16 : 0);
  }
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 6 + 3; ++x) EXPECT_EQ(canvas.view().row(1, y)[x], x < 6 ? 128 : 0);
  }
  // One tile through roi_subview: only its samples change.
  ASSERT_TRUE(fill_canvas_cpu(roi_subview(canvas.view(), Roi{2, 2, 2, 2}), Nv12Color{1, 2, 3}).is_ok());
  EXPECT_EQ(canvas.view().row(0, 2)[2], 1);
  EXPECT_EQ(canvas.view().row(0, 3)[3], 1);
  EXPECT_EQ(canvas.view().row(0, 3)[4], 16);
  EXPECT_EQ(canvas.view().row(0, 1)[2], 16);
  EXPECT_EQ(canvas.view().row(1, 1)[2], 2);
  EXPECT_EQ(canvas.view().row(1, 1)[3], 3);
  EXPECT_EQ(canvas.view().row(1, 1)[4], 128);
  EXPECT_EQ(canvas.view().row(1, 0)[2], 128);
}

TEST(Tile, SameSizeTileIsACopyAndTheRestIsUntouched) {
  HostImage frame(PixelFormat::kNV12, 10, 6, 3, 5);
  frame.fill_random(1);
  HostImage canvas(PixelFormat::kNV12, 20, 12, 3, 2);
  fill_nv12(canvas, 7, 8, 9);
  const Roi destination{4, 2, 10, 6};
  ASSERT_TRUE(run_tile_cpu({{frame.view()}, {}}, {&destination, 1}, canvas.view()).is_ok());
  for (int y = 0; y < 12; ++y) {
    for (int x = 0; x < 20; ++x) {
      const bool inside = x >= 4 && x < 14 && y >= 2 && y < 8;
      EXPECT_EQ(canvas.view().row(0, y)[x], inside ? frame.view().row(0, y - 2)[x - 4] : 7) << x << "," << y;
    }
  }
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 20; ++x) {
      const bool inside = x >= 4 && x < 14 && y >= 1 && y < 4;
      const int outside = x % 2 == 0 ? 8 : 9;
      EXPECT_EQ(canvas.view().row(1, y)[x], inside ? frame.view().row(1, y - 1)[x - 4] : outside)
          << x << "," << y;
    }
  }
}

// A GRAY8 view of samples `step` bytes apart is what resize needs; for NV12's interleaved UV it
// takes a copy of one channel.
HostImage channel_copy(const ImageView& view, int plane, int channel, int channels, int width, int height) {
  HostImage out(PixelFormat::kGRAY8, width, height, 3, 1);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) out.view().row(0, y)[x] = view.row(plane, y)[x * channels + channel];
  }
  return out;
}

// Each plane of the tile is exactly image/resize's OpenCV bilinear resize of that plane.
void expect_planes_resized(const ImageView& frame, const ImageView& canvas, const Roi& d) {
  for (int plane = 0; plane < 2; ++plane) {
    const int sub = plane == 0 ? 1 : 2;
    for (int channel = 0; channel < sub; ++channel) {
      const HostImage src = channel_copy(frame, plane, channel, sub, frame.width / sub, frame.height / sub);
      HostImage want(PixelFormat::kGRAY8, d.width / sub, d.height / sub);
      ASSERT_TRUE(run_resize_cpu({{src.view()}, {}}, {{want.view()}, {}}, ResizeParams{}).is_ok());
      const ImageView tile = roi_subview(canvas, d);
      const HostImage got = channel_copy(tile, plane, channel, sub, d.width / sub, d.height / sub);
      EXPECT_EQ(max_abs_difference(got.view(), want.view()), 0.0)
          << "plane " << plane << " channel " << channel;
    }
  }
}

TEST(Tile, PlanesAreResampledFromTheirOwnPlane) {
  HostImage big(PixelFormat::kNV12, 126, 78, 3, 3);
  big.fill_random(2);
  HostImage small(PixelFormat::kNV12, 14, 10, 3, 1);
  small.fill_random(3);
  HostImage canvas(PixelFormat::kNV12, 160, 90, 3, 4);
  ASSERT_TRUE(fill_canvas_cpu(canvas.view()).is_ok());
  auto grid = tile_layout(2, 160, 90);
  ASSERT_TRUE(grid.is_ok());
  const std::vector<Roi> destinations{fit_in_tile(grid->tiles[0], 126, 78),
                                      fit_in_tile(grid->tiles[1], 14, 10)};
  ASSERT_TRUE(run_tile_cpu({{big.view(), small.view()}, {}}, destinations, canvas.view()).is_ok());
  expect_planes_resized(big.view(), canvas.view(), destinations[0]);    // downscale
  expect_planes_resized(small.view(), canvas.view(), destinations[1]);  // upscale
  // Letterbox bars keep the fill.
  EXPECT_EQ(canvas.view().row(0, destinations[1].y - 1)[destinations[1].x], 16);
  EXPECT_EQ(canvas.view().row(1, destinations[1].y / 2 - 1)[destinations[1].x + 1], 128);
}

TEST(Tile, ConstantFramesStayConstant) {
  HostImage frame(PixelFormat::kNV12, 6, 4);
  fill_nv12(frame, 50, 60, 70);
  HostImage canvas(PixelFormat::kNV12, 64, 64);
  const Roi destination{2, 4, 50, 38};
  ASSERT_TRUE(run_tile_cpu({{frame.view()}, {}}, {&destination, 1}, canvas.view()).is_ok());
  EXPECT_EQ(canvas.view().row(0, 4)[2], 50);
  EXPECT_EQ(canvas.view().row(0, 41)[51], 50);
  EXPECT_EQ(canvas.view().row(1, 20)[50], 60);
  EXPECT_EQ(canvas.view().row(1, 20)[51], 70);
  EXPECT_EQ(canvas.view().row(0, 42)[51], 0);
}

TEST(Tile, SourcesMissingFromABatchKeepTheirTiles) {
  HostImage a(PixelFormat::kNV12, 8, 8);
  HostImage b(PixelFormat::kNV12, 8, 8);
  fill_nv12(a, 30, 31, 32);
  fill_nv12(b, 40, 41, 42);
  HostImage canvas(PixelFormat::kNV12, 16, 8);
  auto grid = tile_layout(2, 16, 8);
  ASSERT_TRUE(grid.is_ok());
  ASSERT_TRUE(run_tile_cpu({{a.view(), b.view()}, {}}, grid->tiles, canvas.view()).is_ok());
  fill_nv12(b, 90, 91, 92);
  ASSERT_TRUE(run_tile_cpu({{b.view()}, {}}, {&grid->tiles[1], 1}, canvas.view()).is_ok());
  EXPECT_EQ(canvas.view().row(0, 3)[3], 30);
  EXPECT_EQ(canvas.view().row(1, 3)[1], 32);
  EXPECT_EQ(canvas.view().row(0, 3)[11], 90);
  EXPECT_EQ(canvas.view().row(1, 3)[9], 92);
}

TEST(Tile, RejectsBadInput) {
  HostImage frame(PixelFormat::kNV12, 8, 8);
  HostImage canvas(PixelFormat::kNV12, 32, 16);
  auto run = [&](std::vector<Roi> destinations) {
    return run_tile_cpu({{frame.view(), frame.view()}, {}}, destinations, canvas.view());
  };
  EXPECT_TRUE(run({{0, 0, 8, 8}, {8, 0, 8, 8}}).is_ok());
  EXPECT_FALSE(run({{0, 0, 8, 8}}).is_ok());                 // one destination for two frames
  EXPECT_FALSE(run({{0, 0, 8, 8}, {6, 0, 8, 8}}).is_ok());   // overlapping
  EXPECT_FALSE(run({{0, 0, 8, 8}, {9, 0, 8, 8}}).is_ok());   // odd x
  EXPECT_FALSE(run({{0, 0, 8, 8}, {8, 0, 7, 8}}).is_ok());   // odd width
  EXPECT_FALSE(run({{0, 0, 8, 8}, {28, 0, 8, 8}}).is_ok());  // outside the canvas
  EXPECT_FALSE(run({{0, 0, 8, 8}, {-2, 8, 8, 8}}).is_ok());  // negative x
  EXPECT_FALSE(run({{0, 0, 8, 8}, {8, 0, 0, 8}}).is_ok());   // empty
  const Roi d{0, 0, 8, 8};
  EXPECT_FALSE(run_tile_cpu({{frame.view()}, {Roi{0, 0, 4, 4}}}, {&d, 1}, canvas.view()).is_ok());
  HostImage rgb(PixelFormat::kRGB8, 8, 8);
  EXPECT_FALSE(run_tile_cpu({{rgb.view()}, {}}, {&d, 1}, canvas.view()).is_ok());
  EXPECT_FALSE(run_tile_cpu({{frame.view()}, {}}, {&d, 1}, rgb.view()).is_ok());
  ImageView odd = canvas.view();
  odd.width = 31;
  EXPECT_FALSE(run_tile_cpu({{frame.view()}, {}}, {&d, 1}, odd).is_ok());
  EXPECT_FALSE(fill_canvas_cpu(odd).is_ok());
  ImageView device = canvas.view();
  device.memory = MemoryKind::kDevice;  // never dereferenced: the runs refuse first
  EXPECT_FALSE(run_tile_cpu({{frame.view()}, {}}, {&d, 1}, device).is_ok());
  EXPECT_FALSE(fill_canvas_cpu(device).is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
