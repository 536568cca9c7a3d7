#include <memory>

#include <gtest/gtest.h>

#include "image/composite.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

// One operand on both sides: a pitched random host image and its device copy.
struct Operand {
  Operand(PixelFormat format, Size size, std::uint32_t seed)
      : host(format, size.width, size.height, 3, 9), device(format, size.width, size.height) {
    host.fill_random(seed);
    device.upload(host);
  }
  HostImage host;
  DeviceImage device;
};

enum class Op { kBlend, kOverlay };

void expect_cuda_matches_cpu(Op op, PixelFormat format, const std::vector<Size>& sizes) {
  std::vector<std::unique_ptr<Operand>> fg, bg, mask, out;
  ImageBatch h_fg, h_bg, h_mask, h_out, d_fg, d_bg, d_mask, d_out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto seed = static_cast<std::uint32_t>(100 + 4 * i);
    fg.push_back(std::make_unique<Operand>(format, sizes[i], seed));
    bg.push_back(std::make_unique<Operand>(format, sizes[i], seed + 1));
    mask.push_back(std::make_unique<Operand>(PixelFormat::kGRAY8, sizes[i], seed + 2));
    out.push_back(std::make_unique<Operand>(format, sizes[i], seed + 3));
    // Odd images take an interior ROI (even for NV12), even ones the whole image.
    const Roi roi = i % 2 == 1 ? Roi{2, 2, sizes[i].width - 4, sizes[i].height - 2} : Roi{};
    const std::pair<ImageBatch*, Operand*> sides[] = {{&h_fg, fg.back().get()},
                                                      {&h_bg, bg.back().get()},
                                                      {&h_mask, mask.back().get()},
                                                      {&h_out, out.back().get()}};
    ImageBatch* device_sides[] = {&d_fg, &d_bg, &d_mask, &d_out};
    for (int s = 0; s < 4; ++s) {
      sides[s].first->images.push_back(sides[s].second->host.view());
      sides[s].first->rois.push_back(roi);
      device_sides[s]->images.push_back(sides[s].second->device.view());
      device_sides[s]->rois.push_back(roi);
    }
  }
  OverlayParams params;
  params.color = {30, 200, 90};
  params.alpha = 0.7f;
  if (op == Op::kBlend) {
    ASSERT_TRUE(run_blend_cpu(h_fg, h_bg, h_mask, h_out).is_ok());
    ASSERT_TRUE(run_blend_cuda(nullptr, d_fg, d_bg, d_mask, d_out).is_ok());
  } else {
    ASSERT_TRUE(run_overlay_cpu(h_fg, h_mask, h_out, params).is_ok());
    ASSERT_TRUE(run_overlay_cuda(nullptr, d_fg, d_mask, d_out, params).is_ok());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    HostImage got = out[i]->device.download(1);
    EXPECT_LE(max_abs_difference(got.view(), out[i]->host.view()), kU8RoundingTolerance)
        << pixel_format_name(format) << " image " << i;
  }
}

TEST(CompositeGpu, BlendMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8}) {
    expect_cuda_matches_cpu(Op::kBlend, format, {{13, 127}});
    expect_cuda_matches_cpu(Op::kBlend, format, {{127, 13}, {40, 33}, {300, 7}});
  }
  expect_cuda_matches_cpu(Op::kBlend, PixelFormat::kNV12, {{126, 78}, {66, 10}, {8, 4}});
}

TEST(CompositeGpu, OverlayMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8}) {
    expect_cuda_matches_cpu(Op::kOverlay, format, {{13, 127}, {64, 9}});
  }
  expect_cuda_matches_cpu(Op::kOverlay, PixelFormat::kNV12, {{126, 78}, {66, 10}});
}

TEST(CompositeGpu, LargeBatchesTakeSeveralLaunches) {
  FOVEA_REQUIRE_GPU();
  std::vector<Size> sizes;
  for (int i = 0; i < 11; ++i) sizes.push_back({20 + 2 * i, 8 + 2 * i});
  expect_cuda_matches_cpu(Op::kBlend, PixelFormat::kNV12, sizes);  // 22 planes
}

TEST(CompositeGpu, InPlaceBlendMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  Operand fg(PixelFormat::kRGB8, {37, 21}, 1);
  Operand bg(PixelFormat::kRGB8, {37, 21}, 2);
  Operand mask(PixelFormat::kGRAY8, {37, 21}, 3);
  const ImageBatch h_bg{{bg.host.view()}, {}};
  const ImageBatch d_bg{{bg.device.view()}, {}};
  ASSERT_TRUE(run_blend_cpu({{fg.host.view()}, {}}, h_bg, {{mask.host.view()}, {}}, h_bg).is_ok());
  ASSERT_TRUE(
      run_blend_cuda(nullptr, {{fg.device.view()}, {}}, d_bg, {{mask.device.view()}, {}}, d_bg).is_ok());
  HostImage got = bg.device.download();
  EXPECT_LE(max_abs_difference(got.view(), bg.host.view()), kU8RoundingTolerance);
}

}  // namespace
}  // namespace fovea::image::testing
