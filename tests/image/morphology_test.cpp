#include <string>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/morphology.h"

namespace fovea::image::testing {
namespace {

MorphologyParams make(MorphologyOp op, int w, int h, int iterations = 1) {
  MorphologyParams params;
  params.op = op;
  params.element_width = w;
  params.element_height = h;
  params.iterations = iterations;
  return params;
}

// The mask as rows of '#' (nonzero) and '.'.
std::string picture(const ImageView& view) {
  std::string s;
  for (int y = 0; y < view.height; ++y) {
    for (int x = 0; x < view.width; ++x) s += view.row(0, y)[x] != 0 ? '#' : '.';
    s += '\n';
  }
  return s;
}

TEST(Morphology, DilateOfASinglePixelIsTheElement) {
  HostImage in(PixelFormat::kGRAY8, 7, 5, 3, 3);
  HostImage out(PixelFormat::kGRAY8, 7, 5, 3, 1);
  in.view().row(0, 2)[3] = 255;
  ASSERT_TRUE(
      run_morphology_cpu({{in.view()}, {}}, {{out.view()}, {}}, make(MorphologyOp::kDilate, 3, 1)).is_ok());
  EXPECT_EQ(picture(out.view()), ".......\n.......\n..###..\n.......\n.......\n");
  ASSERT_TRUE(run_morphology_cpu({{in.view()}, {}}, {{out.view()}, {}}, make(MorphologyOp::kDilate, 3, 3, 2))
                  .is_ok());
  EXPECT_EQ(picture(out.view()), ".#####.\n.#####.\n.#####.\n.#####.\n.#####.\n");
  // Even sizes anchor at size/2: a 2x2 element reaches one pixel left and up.
  ASSERT_TRUE(
      run_morphology_cpu({{in.view()}, {}}, {{out.view()}, {}}, make(MorphologyOp::kDilate, 2, 2)).is_ok());
  EXPECT_EQ(picture(out.view()), ".......\n.......\n...##..\n...##..\n.......\n");
}

TEST(Morphology, ErodeShrinksAndIgnoresTheBorder) {
  HostImage in(PixelFormat::kGRAY8, 6, 4);
  HostImage out(PixelFormat::kGRAY8, 6, 4);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) in.view().row(0, y)[x] = 200;
  ASSERT_TRUE(
      run_morphology_cpu({{in.view()}, {}}, {{out.view()}, {}}, make(MorphologyOp::kErode, 3, 3)).is_ok());
  // Pixels beyond the edges are left out, so the block touching the left/top/bottom edges keeps
  // those columns and rows; only its right side (next to zeros) shrinks.
  EXPECT_EQ(picture(out.view()), "###...\n###...\n###...\n###...\n");
  EXPECT_EQ(out.view().row(0, 0)[0], 200);
}

TEST(Morphology, InPlaceWithRois) {
  HostImage image(PixelFormat::kGRAY8, 8, 8);
  image.view().row(0, 4)[4] = 9;
  const ImageBatch batch{{image.view()}, {Roi{3, 3, 3, 3}}};
  ASSERT_TRUE(run_morphology_cpu(batch, batch, make(MorphologyOp::kDilate, 5, 5)).is_ok());
  EXPECT_EQ(image.view().row(0, 3)[3], 9);
  EXPECT_EQ(image.view().row(0, 5)[5], 9);
  EXPECT_EQ(image.view().row(0, 2)[4], 0);  // outside the ROI
  EXPECT_EQ(image.view().row(0, 6)[6], 0);
}

TEST(Morphology, RejectsBadInput) {
  HostImage in(PixelFormat::kGRAY8, 8, 8);
  HostImage small(PixelFormat::kGRAY8, 4, 8);
  HostImage rgb(PixelFormat::kRGB8, 8, 8);
  const ImageBatch input{{in.view()}, {}};
  auto code = [](const Status& s) { return s.code(); };
  EXPECT_EQ(code(run_morphology_cpu(input, input, make(MorphologyOp::kErode, 0, 3))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_morphology_cpu(input, input, make(MorphologyOp::kErode, 3, 3, 0))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_morphology_cpu(input, {{small.view()}, {}}, make(MorphologyOp::kErode, 3, 3))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(run_morphology_cpu(input, {{in.view(), in.view()}, {}}, make(MorphologyOp::kErode, 3, 3))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      code(run_morphology_cpu({{rgb.view()}, {}}, {{rgb.view()}, {}}, make(MorphologyOp::kErode, 3, 3))),
      StatusCode::kUnsupported);
  EXPECT_EQ(
      code(run_morphology_cpu({{in.view()}, {Roi{0, 5, 8, 4}}}, input, make(MorphologyOp::kErode, 3, 3))),
      StatusCode::kInvalidArgument);
  auto plan = plan_morphology({{in.view(), small.view()}, {}}, make(MorphologyOp::kDilate, 3, 3));
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->workspace_bytes, 2u * 256u);
}

}  // namespace
}  // namespace fovea::image::testing
