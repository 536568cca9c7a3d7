#include <memory>

#include <gtest/gtest.h>

#include "image/blur.h"
#include "image/blur_test_util.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

// Blurs a batch of random images of `sizes` on both sides, with pitched host images and ROIs that
// leave a margin, and compares.
void expect_cuda_matches_cpu(PixelFormat format, const std::vector<Size>& sizes, const BlurParams& params) {
  std::vector<std::unique_ptr<HostImage>> host_in;
  std::vector<std::unique_ptr<HostImage>> host_out;
  std::vector<std::unique_ptr<DeviceImage>> dev_in;
  std::vector<std::unique_ptr<DeviceImage>> dev_out;
  ImageBatch cpu_in, cpu_out, gpu_in, gpu_out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [w, h] = sizes[i];
    host_in.push_back(std::make_unique<HostImage>(format, w, h, 3, 7));
    host_in.back()->fill_random(static_cast<std::uint32_t>(11 + i));
    host_out.push_back(std::make_unique<HostImage>(format, w, h, 3, 5));
    dev_in.push_back(std::make_unique<DeviceImage>(format, w, h));
    dev_out.push_back(std::make_unique<DeviceImage>(format, w, h));
    dev_in.back()->upload(*host_in.back());
    dev_out.back()->upload(*host_out.back());
    // Odd images get an interior ROI, even ones the whole image.
    const Roi roi = i % 2 == 1 ? Roi{1, 2, w - 3, h - 2} : Roi{0, 0, w, h};
    cpu_in.images.push_back(host_in.back()->view());
    cpu_out.images.push_back(host_out.back()->view());
    gpu_in.images.push_back(dev_in.back()->view());
    gpu_out.images.push_back(dev_out.back()->view());
    for (ImageBatch* b : {&cpu_in, &cpu_out, &gpu_in, &gpu_out}) b->rois.push_back(roi);
  }
  ASSERT_TRUE(run_blur_cpu(cpu_in, cpu_out, params).is_ok());
  Status status = run_blur_cuda(nullptr, gpu_in, gpu_out, params);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  const double tolerance = format == PixelFormat::kPlanarF32 ? kF32Tolerance : kU8RoundingTolerance;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    HostImage got = dev_out[i]->download(3);
    EXPECT_LE(max_abs_difference(got.view(), host_out[i]->view()), tolerance)
        << pixel_format_name(format) << " image " << i;
  }
}

TEST(BlurGpu, MatchesCpuAcrossFormatsAndBorders) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat format :
       {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8, PixelFormat::kGRAY8}) {
    for (BorderMode border :
         {BorderMode::kReplicate, BorderMode::kReflect101, BorderMode::kConstant, BorderMode::kReflect}) {
      expect_cuda_matches_cpu(format, {{13, 127}}, gaussian(5, 5, border));
      expect_cuda_matches_cpu(format, {{127, 13}, {40, 33}, {7, 5}}, gaussian(15, 9, border, 3.0));
    }
  }
}

TEST(BlurGpu, PlanarFloatAndBox) {
  FOVEA_REQUIRE_GPU();
  BlurParams params = gaussian(7, 7, BorderMode::kReflect101);
  params.border_value = 0.5f;
  expect_cuda_matches_cpu(PixelFormat::kPlanarF32, {{13, 127}, {66, 35}}, params);
  params.kind = BlurKind::kBox;
  params.kernel_width = 11;
  params.kernel_height = 3;
  expect_cuda_matches_cpu(PixelFormat::kRGB8, {{13, 127}, {66, 35}}, params);
}

TEST(BlurGpu, WideKernelsAndLargeBatches) {
  FOVEA_REQUIRE_GPU();
  // 255 taps needs the shared-memory opt-in; 17 images need two launches.
  expect_cuda_matches_cpu(PixelFormat::kRGBA8, {{300, 40}},
                          gaussian(255, 101, BorderMode::kReflect101, 30.0));
  std::vector<Size> many;
  for (int i = 0; i < 17; ++i) many.push_back({20 + 3 * i, 9 + i});
  expect_cuda_matches_cpu(PixelFormat::kGRAY8, many, gaussian(31, 31, BorderMode::kReflect));
}

TEST(BlurGpu, RejectsBadInputBeforeLaunching) {
  FOVEA_REQUIRE_GPU();
  DeviceImage in(PixelFormat::kRGB8, 16, 16);
  DeviceImage out(PixelFormat::kRGB8, 8, 8);
  EXPECT_FALSE(
      run_blur_cuda(nullptr, {{in.view()}, {}}, {{out.view()}, {}}, gaussian(3, 3, BorderMode::kReplicate))
          .is_ok());
  EXPECT_FALSE(
      run_blur_cuda(nullptr, {{in.view()}, {}}, {{in.view()}, {}}, gaussian(3, 3, BorderMode::kReplicate))
          .is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
