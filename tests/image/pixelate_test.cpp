#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/pixelate.h"

namespace fovea::image::testing {
namespace {

PixelateRect rect(int x, int y, int width, int height, int image = 0) {
  return PixelateRect{image, x, y, width, height};
}

Status pixelate(HostImage& image, std::initializer_list<PixelateRect> rects, int cell) {
  return run_pixelate_cpu({{image.view()}, {}}, std::span<const PixelateRect>(rects.begin(), rects.size()),
                          PixelateParams{cell});
}

// A one-row gray image (RGB with equal channels) from values, and its first channel back.
HostImage gray_row(const std::vector<int>& values) {
  HostImage image(PixelFormat::kRGB8, static_cast<int>(values.size()), 1, 3, 2);
  for (std::size_t x = 0; x < values.size(); ++x) {
    for (int c = 0; c < 3; ++c) image.view().row(0, 0)[3 * x + c] = static_cast<std::uint8_t>(values[x]);
  }
  return image;
}
std::vector<int> first_channel(const HostImage& image) {
  std::vector<int> values;
  for (int x = 0; x < image.view().width; ++x) values.push_back(image.view().row(0, 0)[3 * x]);
  return values;
}

TEST(Pixelate, CellMeansRoundHalvesUp) {
  HostImage image = gray_row({0, 1, 1, 1, 1, 2, 0, 0, 0, 1, 7});
  ASSERT_TRUE(pixelate(image, {rect(0, 0, 10, 1)}, 2).is_ok());
  // 0.5 -> 1, 1 -> 1, 1.5 -> 2, 0 -> 0, 0.5 -> 1; the pixel outside the rectangle is kept.
  EXPECT_EQ(first_channel(image), (std::vector<int>{1, 1, 1, 1, 2, 2, 0, 0, 1, 1, 7}));
  HostImage thirds = gray_row({1, 0, 0, 2, 1, 2});
  ASSERT_TRUE(pixelate(thirds, {rect(0, 0, 6, 1)}, 3).is_ok());
  EXPECT_EQ(first_channel(thirds), (std::vector<int>{0, 0, 0, 2, 2, 2}));  // 1/3 -> 0, 5/3 -> 2
}

TEST(Pixelate, CellsAreAnchoredAtTheUnclippedCornerAndShrinkAtTheEdges) {
  HostImage image = gray_row({10, 20, 30, 40, 50, 60, 70});
  // Cells [-1, 2), [2, 5), [5, 8) clipped to [0, 2), [2, 5), [5, 7).
  ASSERT_TRUE(pixelate(image, {rect(-1, 0, 9, 1)}, 3).is_ok());
  EXPECT_EQ(first_channel(image), (std::vector<int>{15, 15, 40, 40, 40, 65, 65}));
  HostImage last = gray_row({10, 20, 30, 40, 50, 60, 70});
  // Cells [1, 3), [3, 5), [5, 6): the last one a single pixel.
  ASSERT_TRUE(pixelate(last, {rect(1, 0, 5, 1)}, 2).is_ok());
  EXPECT_EQ(first_channel(last), (std::vector<int>{10, 25, 25, 45, 45, 60, 70}));
}

TEST(Pixelate, EmptyAndOutsideRectanglesChangeNothing) {
  HostImage image = gray_row({1, 2, 3, 4});
  ASSERT_TRUE(
      pixelate(image,
               {rect(0, 0, 0, 1), rect(0, 0, 4, -3), rect(4, 0, 3, 1), rect(-5, 0, 5, 1), rect(0, 1, 4, 1)},
               2)
          .is_ok());
  EXPECT_EQ(first_channel(image), (std::vector<int>{1, 2, 3, 4}));
  ASSERT_TRUE(pixelate(image, {}, 2).is_ok());
}

TEST(Pixelate, RectanglesApplyInListOrder) {
  HostImage ab = gray_row({0, 0, 4, 4});
  ASSERT_TRUE(pixelate(ab, {rect(0, 0, 3, 1), rect(1, 0, 3, 1)}, 4).is_ok());
  EXPECT_EQ(first_channel(ab), (std::vector<int>{1, 2, 2, 2}));  // 4/3 -> 1, then (1+1+4)/3 = 2
  HostImage ba = gray_row({0, 0, 4, 4});
  ASSERT_TRUE(pixelate(ba, {rect(1, 0, 3, 1), rect(0, 0, 3, 1)}, 4).is_ok());
  EXPECT_EQ(first_channel(ba), (std::vector<int>{2, 2, 2, 3}));  // 8/3 -> 3, then 6/3 = 2
}

TEST(Pixelate, RgbChannelsAreAveragedSeparately) {
  HostImage image(PixelFormat::kBGR8, 2, 2);
  const std::uint8_t values[2][6] = {{0, 10, 200, 4, 10, 100}, {0, 10, 0, 0, 11, 0}};
  for (int y = 0; y < 2; ++y) {
    for (int i = 0; i < 6; ++i) image.view().row(0, y)[i] = values[y][i];
  }
  ASSERT_TRUE(pixelate(image, {rect(0, 0, 2, 2)}, 8).is_ok());
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 2; ++x) {
      const std::uint8_t* p = image.view().row(0, y) + 3 * x;
      EXPECT_EQ(p[0], 1);   // 4 / 4
      EXPECT_EQ(p[1], 10);  // 41 / 4 = 10.25
      EXPECT_EQ(p[2], 75);  // 300 / 4
    }
  }
}

// The contract stated as directly as possible: every sample of the clipped rectangle (and, on
// NV12, every chroma sample of its footprint) is keyed by its cell, and takes the rounded mean of
// its key's samples. Independent of the span arithmetic the op uses.
void apply_by_definition(ImageView& view, const PixelateRect& r, int cell) {
  const int x0 = std::max(r.x, 0);
  const int y0 = std::max(r.y, 0);
  const int x1 = std::min(r.x + r.width, view.width);
  const int y1 = std::min(r.y + r.height, view.height);
  if (x0 >= x1 || y0 >= y1) return;
  const bool nv12 = view.format == PixelFormat::kNV12;
  auto key = [&](int x, int y) { return std::make_pair((x - r.x) / cell, (y - r.y) / cell); };
  auto average = [&](int plane, int channels, int sx0, int sy0, int sx1, int sy1, auto key_of) {
    std::map<std::pair<int, int>, std::pair<std::vector<unsigned>, unsigned>> cells;
    for (int y = sy0; y < sy1; ++y) {
      for (int x = sx0; x < sx1; ++x) {
        auto& [sums, n] = cells[key_of(x, y)];
        sums.resize(channels);
        for (int c = 0; c < channels; ++c) sums[c] += view.row(plane, y)[x * channels + c];
        ++n;
      }
    }
    for (int y = sy0; y < sy1; ++y) {
      for (int x = sx0; x < sx1; ++x) {
        const auto& [sums, n] = cells[key_of(x, y)];
        for (int c = 0; c < channels; ++c) {
          view.row(plane, y)[x * channels + c] = static_cast<std::uint8_t>((2 * sums[c] + n) / (2 * n));
        }
      }
    }
  };
  average(0, nv12 ? 1 : 3, x0, y0, x1, y1, key);
  if (nv12) {
    average(1, 2, x0 / 2, y0 / 2, (x1 + 1) / 2, (y1 + 1) / 2,
            [&](int cx, int cy) { return key(std::max(2 * cx, x0), std::max(2 * cy, y0)); });
  }
}

TEST(Pixelate, MatchesTheDefinitionOnRandomRectangles) {
  std::mt19937 rng(5);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kNV12}) {
    for (int trial = 0; trial < 40; ++trial) {
      const bool nv12 = format == PixelFormat::kNV12;
      const int width = nv12 ? 2 * uniform(1, 40) : uniform(1, 80);
      const int height = nv12 ? 2 * uniform(1, 30) : uniform(1, 60);
      HostImage got(format, width, height, 3, 3);
      HostImage want(format, width, height, 3, 3);
      got.fill_random(static_cast<std::uint32_t>(trial));
      want.fill_random(static_cast<std::uint32_t>(trial));
      const int cell = uniform(1, 9);
      std::vector<PixelateRect> rects;
      for (int i = 0; i < 4; ++i) {
        rects.push_back(
            rect(uniform(-10, width), uniform(-10, height), uniform(-2, width), uniform(-2, height)));
        apply_by_definition(want.view(), rects.back(), cell);
      }
      ASSERT_TRUE(run_pixelate_cpu({{got.view()}, {}}, rects, PixelateParams{cell}).is_ok());
      EXPECT_EQ(max_abs_difference(got.view(), want.view()), 0.0)
          << pixel_format_name(format) << " " << width << "x" << height << " cell " << cell << " trial "
          << trial;
    }
  }
}

TEST(Pixelate, Nv12ChromaOfAnOddRectangle) {
  HostImage image(PixelFormat::kNV12, 8, 4);
  // UV row 0: (U, V) = (2k, 100 + k) at column k; row 1: U 1 higher.
  for (int cy = 0; cy < 2; ++cy) {
    for (int cx = 0; cx < 4; ++cx) {
      image.view().row(1, cy)[2 * cx] = static_cast<std::uint8_t>(2 * cx + cy);
      image.view().row(1, cy)[2 * cx + 1] = static_cast<std::uint8_t>(100 + cx);
    }
  }
  // Pixels [1, 5) x [1, 3), cells [1, 3) and [3, 5): chroma columns [0, 2) and [2, 3), rows [0, 2).
  ASSERT_TRUE(pixelate(image, {rect(1, 1, 4, 2)}, 2).is_ok());
  for (int cy = 0; cy < 2; ++cy) {
    const std::uint8_t* uv = image.view().row(1, cy);
    EXPECT_EQ(uv[0], 2);    // (0 + 2 + 1 + 3) / 4 = 1.5
    EXPECT_EQ(uv[1], 101);  // (100 + 101) * 2 / 4 = 100.5
    EXPECT_EQ(uv[2], 2);
    EXPECT_EQ(uv[4], 5);  // (4 + 5) / 2 = 4.5
    EXPECT_EQ(uv[5], 102);
    EXPECT_EQ(uv[6], 6 + cy);  // outside the footprint
    EXPECT_EQ(uv[7], 103);
  }
}

TEST(Pixelate, ConflictsFollowTheSamplesTouched) {
  HostImage nv12(PixelFormat::kNV12, 16, 8);
  HostImage rgb(PixelFormat::kRGB8, 16, 8);
  const ImageBatch nv12_batch{{nv12.view(), nv12.view()}, {}};
  const ImageBatch rgb_batch{{rgb.view()}, {}};
  // Columns [0, 3) and [3, 6) share the chroma of pixels 2..3 on NV12, nothing on RGB.
  EXPECT_TRUE(detail::pixelate_rects_conflict(nv12_batch, rect(0, 0, 3, 4), rect(3, 0, 3, 4)));
  EXPECT_FALSE(detail::pixelate_rects_conflict(rgb_batch, rect(0, 0, 3, 4), rect(3, 0, 3, 4)));
  EXPECT_FALSE(detail::pixelate_rects_conflict(nv12_batch, rect(0, 0, 4, 4), rect(4, 0, 4, 4)));
  EXPECT_FALSE(detail::pixelate_rects_conflict(nv12_batch, rect(0, 0, 4, 4), rect(0, 0, 4, 4, 1)));
  EXPECT_FALSE(detail::pixelate_rects_conflict(nv12_batch, rect(0, 0, 4, 4), rect(0, 0, 0, 4)));
  EXPECT_TRUE(detail::pixelate_rects_conflict(rgb_batch, rect(-5, -5, 10, 10), rect(4, 4, 1, 1)));
}

TEST(Pixelate, PlanCoversTheRectangleList) {
  HostImage image(PixelFormat::kRGB8, 4, 4);
  const std::vector<PixelateRect> rects(3);
  auto plan = plan_pixelate({{image.view()}, {}}, rects, PixelateParams{});
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->buffer_bytes, 3 * sizeof(PixelateRect));
}

TEST(Pixelate, RejectsBadInput) {
  HostImage image(PixelFormat::kRGB8, 4, 4);
  EXPECT_FALSE(pixelate(image, {rect(0, 0, 2, 2)}, 0).is_ok());
  EXPECT_FALSE(pixelate(image, {rect(0, 0, 2, 2)}, kMaxPixelateCell + 1).is_ok());
  EXPECT_FALSE(pixelate(image, {rect(0, 0, 2, 2, 1)}, 2).is_ok());
  EXPECT_FALSE(pixelate(image, {rect(0, 0, 2, 2, -1)}, 2).is_ok());
  EXPECT_FALSE(pixelate(image, {rect(0, 0, kMaxPixelateCoordinate + 1, 2)}, 2).is_ok());
  EXPECT_FALSE(pixelate(image, {rect(-kMaxPixelateCoordinate - 1, 0, 2, 2)}, 2).is_ok());
  const PixelateRect one = rect(0, 0, 2, 2);
  EXPECT_FALSE(run_pixelate_cpu({{image.view()}, {Roi{0, 0, 2, 2}}}, {&one, 1}, PixelateParams{}).is_ok());
  HostImage gray(PixelFormat::kGRAY8, 4, 4);
  EXPECT_FALSE(pixelate(gray, {one}, 2).is_ok());
  EXPECT_FALSE(run_pixelate_cpu({}, {}, PixelateParams{}).is_ok());
  ImageView device = image.view();
  device.memory = MemoryKind::kDevice;  // never dereferenced: the run refuses first
  EXPECT_FALSE(run_pixelate_cpu({{device}, {}}, {&one, 1}, PixelateParams{}).is_ok());
  HostImage odd(PixelFormat::kNV12, 4, 4);
  odd.view().width = 3;
  EXPECT_FALSE(pixelate(odd, {one}, 2).is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
