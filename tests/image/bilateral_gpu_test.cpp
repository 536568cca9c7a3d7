#include <memory>

#include <gtest/gtest.h>

#include "image/bilateral.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

// A segmentation-like mask: 255 inside an ellipse, 0 outside, so that most 32x8 blocks of the CUDA
// kernel see a constant mask (its fast path) and those along the ellipse do not.
void draw_ellipse_mask(ImageView& mask) {
  const double cx = mask.width * 0.45, cy = mask.height * 0.55;
  const double rx = mask.width * 0.3, ry = mask.height * 0.35;
  auto* rows = static_cast<std::uint8_t*>(mask.planes[0].data);
  for (int y = 0; y < mask.height; ++y) {
    for (int x = 0; x < mask.width; ++x) {
      const double u = (x - cx) / rx, v = (y - cy) / ry;
      rows[y * mask.planes[0].pitch + x] = u * u + v * v <= 1.0 ? 255 : 0;
    }
  }
}

enum class MaskKind { kNoise, kEllipse };

void expect_cuda_matches_cpu(PixelFormat guide_format, const std::vector<Size>& sizes,
                             const BilateralParams& params, MaskKind kind = MaskKind::kNoise) {
  std::vector<std::unique_ptr<HostImage>> hm, hg, ho;
  std::vector<std::unique_ptr<DeviceImage>> dm, dg, dout;
  ImageBatch bhm, bhg, bho, bdm, bdg, bdo;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [w, h] = sizes[i];
    hm.push_back(std::make_unique<HostImage>(PixelFormat::kGRAY8, w, h, 3, 3));
    hg.push_back(std::make_unique<HostImage>(guide_format, w, h, 3, 7));
    ho.push_back(std::make_unique<HostImage>(PixelFormat::kGRAY8, w, h, 3, 1));
    hm.back()->fill_random(static_cast<std::uint32_t>(5 + i));
    if (kind == MaskKind::kEllipse) draw_ellipse_mask(hm.back()->view());
    hg.back()->fill_random(static_cast<std::uint32_t>(50 + i));
    dm.push_back(std::make_unique<DeviceImage>(PixelFormat::kGRAY8, w, h));
    dg.push_back(std::make_unique<DeviceImage>(guide_format, w, h));
    dout.push_back(std::make_unique<DeviceImage>(PixelFormat::kGRAY8, w, h));
    dm.back()->upload(*hm.back());
    dg.back()->upload(*hg.back());
    dout.back()->upload(*ho.back());
    const Roi roi = i % 2 == 1 ? Roi{2, 1, w - 3, h - 2} : Roi{};
    const std::pair<ImageBatch*, ImageView> views[] = {
        {&bhm, hm.back()->view()}, {&bhg, hg.back()->view()}, {&bho, ho.back()->view()},
        {&bdm, dm.back()->view()}, {&bdg, dg.back()->view()}, {&bdo, dout.back()->view()}};
    for (const auto& [batch, view] : views) {
      batch->images.push_back(view);
      batch->rois.push_back(roi);
    }
  }
  ASSERT_TRUE(run_joint_bilateral_cpu(bhm, bhg, bho, params).is_ok());
  Status status = run_joint_bilateral_cuda(nullptr, bdm, bdg, bdo, params);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    HostImage got = dout[i]->download(2);
    EXPECT_LE(max_abs_difference(got.view(), ho[i]->view()), kU8RoundingTolerance) << "image " << i;
  }
}

TEST(JointBilateralGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  BilateralParams params;
  params.diameter = 9;
  params.sigma_color = 30.0f;
  params.sigma_space = 4.0f;
  for (PixelFormat guide :
       {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8, PixelFormat::kGRAY8}) {
    expect_cuda_matches_cpu(guide, {{13, 127}}, params);
    expect_cuda_matches_cpu(guide, {{127, 13}, {40, 33}, {6, 5}}, params);
  }
  params.diameter = 0;  // radius from sigma_space
  params.border = BorderMode::kReflect;
  std::vector<Size> many;
  for (int i = 0; i < 17; ++i) many.push_back({12 + i, 20 - i / 2});
  expect_cuda_matches_cpu(PixelFormat::kRGB8, many, params);
}

// Masks with large constant regions, as segmentation gives: blocks inside or outside the shape
// take the kernel's constant-block path, blocks along its edge and at the image borders the filter.
TEST(JointBilateralGpu, MatchesCpuOnMasksWithConstantRegions) {
  FOVEA_REQUIRE_GPU();
  BilateralParams params;
  params.diameter = 9;
  for (BorderMode border : {BorderMode::kReflect101, BorderMode::kReflect, BorderMode::kReplicate}) {
    params.border = border;
    expect_cuda_matches_cpu(PixelFormat::kRGB8, {{301, 171}, {96, 40}, {33, 9}, {250, 251}}, params,
                            MaskKind::kEllipse);
  }
  params.diameter = 15;  // a halo wider than the block is tall
  expect_cuda_matches_cpu(PixelFormat::kGRAY8, {{200, 97}, {65, 129}}, params, MaskKind::kEllipse);
}

}  // namespace
}  // namespace fovea::image::testing
