#include "core/image.h"

#include <gtest/gtest.h>

namespace fovea {
namespace {

TEST(FormatLayout, Nv12OddSizeRoundsChromaUp) {
  Result<FormatLayout> layout = format_layout(PixelFormat::kNV12, 13, 127);
  ASSERT_TRUE(layout.is_ok());
  EXPECT_EQ(layout->num_planes, 2);
  EXPECT_EQ(layout->planes[0].width_bytes, 13);
  EXPECT_EQ(layout->planes[0].height, 127);
  EXPECT_EQ(layout->planes[1].width_bytes, 14);  // 7 UV pairs
  EXPECT_EQ(layout->planes[1].height, 64);
}

TEST(FormatLayout, EveryFormatHasPlanes) {
  struct Expected {
    PixelFormat format;
    int planes;
    int row0_bytes;
  };
  for (const Expected& e : {Expected{PixelFormat::kNV12, 2, 20}, Expected{PixelFormat::kP016, 2, 40},
                            Expected{PixelFormat::kYUV420P, 3, 20}, Expected{PixelFormat::kRGB8, 1, 60},
                            Expected{PixelFormat::kBGR8, 1, 60}, Expected{PixelFormat::kRGBA8, 1, 80},
                            Expected{PixelFormat::kGRAY8, 1, 20}, Expected{PixelFormat::kPlanarF32, 3, 80},
                            Expected{PixelFormat::kPlanarF16, 3, 40}}) {
    Result<FormatLayout> layout = format_layout(e.format, 20, 10);
    ASSERT_TRUE(layout.is_ok()) << pixel_format_name(e.format);
    EXPECT_EQ(layout->num_planes, e.planes) << pixel_format_name(e.format);
    EXPECT_EQ(layout->planes[0].width_bytes, e.row0_bytes) << pixel_format_name(e.format);
  }
}

TEST(FormatLayout, RejectsAbsurdSizes) {
  EXPECT_EQ(format_layout(PixelFormat::kNV12, 0, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(format_layout(PixelFormat::kNV12, 10, -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(format_layout(PixelFormat::kNV12, 1 << 20, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(format_layout(PixelFormat::kPlanarF32, 10, 10, 9).status().code(), StatusCode::kInvalidArgument);
}

TEST(ImageAllocation, PitchesAlignedAndPlanesDisjoint) {
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kYUV420P, 1921, 1081, 3, 256);
  ASSERT_TRUE(allocation.is_ok());
  EXPECT_EQ(allocation->pitches[0], 2048u);
  EXPECT_EQ(allocation->pitches[1], 1024u);
  EXPECT_EQ(allocation->offsets[1], 2048u * 1081);
  EXPECT_EQ(allocation->offsets[2], allocation->offsets[1] + 1024u * 541);
  EXPECT_EQ(allocation->total_bytes, allocation->offsets[2] + 1024u * 541);
  EXPECT_FALSE(plan_image_allocation(PixelFormat::kNV12, 8, 8, 3, 100).is_ok());
}

TEST(ImageView, RowsFollowPitch) {
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kNV12, 30, 20, 3, 64);
  ASSERT_TRUE(allocation.is_ok());
  std::vector<std::uint8_t> memory(allocation->total_bytes);
  ImageView view = image_view_in(memory.data(), *allocation, PixelFormat::kNV12, 30, 20, MemoryKind::kHost);
  EXPECT_EQ(view.row(0, 1) - view.row(0, 0), 64);
  EXPECT_EQ(view.row(1, 0), memory.data() + 64 * 20);
}

TEST(TensorView, ContiguousStridesAndElements) {
  float data[2 * 3 * 4] = {};
  TensorView view = contiguous_tensor(data, DataType::kFloat32, MemoryKind::kHost, {2, 3, 4});
  EXPECT_EQ(view.num_elements(), 24);
  EXPECT_EQ(view.strides[0], 12);
  EXPECT_EQ(view.strides[2], 1);
  EXPECT_TRUE(view.is_contiguous());
  view.strides[2] = 2;
  EXPECT_FALSE(view.is_contiguous());
  EXPECT_EQ(data_type_size(DataType::kFloat16), 2u);
}

}  // namespace
}  // namespace fovea
