// Pixelation: CUDA against the CPU reference, bit for bit, on random images of odd sizes (pitched
// on both sides), batch 1 and N, with random rectangles (overlapping, partly or fully outside,
// empty) and cell sizes.
#include <cuda_runtime_api.h>

#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/pixelate.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

std::vector<PixelateRect> random_rects(int count, const std::vector<Size>& sizes, std::mt19937& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<PixelateRect> rects;
  for (int i = 0; i < count; ++i) {
    PixelateRect r;
    r.image = uniform(0, static_cast<int>(sizes.size()) - 1);
    const Size s = sizes[static_cast<std::size_t>(r.image)];
    r.x = uniform(-20, s.width + 5);
    r.y = uniform(-20, s.height + 5);
    r.width = uniform(-3, s.width);
    r.height = uniform(-3, s.height);
    rects.push_back(r);
  }
  return rects;
}

void expect_cuda_matches_cpu(PixelFormat format, const std::vector<Size>& sizes, int num_rects, int cell,
                             std::uint32_t seed) {
  std::vector<std::unique_ptr<HostImage>> host;
  std::vector<std::unique_ptr<DeviceImage>> device;
  ImageBatch h, d;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    host.push_back(std::make_unique<HostImage>(format, sizes[i].width, sizes[i].height, 3, 5));
    host.back()->fill_random(seed + static_cast<std::uint32_t>(i));
    device.push_back(std::make_unique<DeviceImage>(format, sizes[i].width, sizes[i].height));
    device.back()->upload(*host.back());
    h.images.push_back(host.back()->view());
    d.images.push_back(device.back()->view());
  }
  std::mt19937 rng(seed);
  const std::vector<PixelateRect> rects = random_rects(num_rects, sizes, rng);
  const PixelateParams params{cell};
  auto plan = plan_pixelate(d, rects, params);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  void* d_buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&d_buffer, plan->buffer_bytes + 1), cudaSuccess);
  ASSERT_TRUE(run_pixelate_cpu(h, rects, params).is_ok());
  const Status status = run_pixelate_cuda(nullptr, d, rects, params, d_buffer, plan->buffer_bytes);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const HostImage got = device[i]->download(1);
    EXPECT_EQ(max_abs_difference(got.view(), host[i]->view()), 0.0)
        << pixel_format_name(format) << " image " << i << " cell " << cell;
  }
  if (!rects.empty()) {
    EXPECT_FALSE(run_pixelate_cuda(nullptr, d, rects, params, d_buffer, plan->buffer_bytes - 1).is_ok());
    EXPECT_FALSE(run_pixelate_cpu(d, rects, params).is_ok());
  }
  cudaFree(d_buffer);
}

TEST(PixelateGpu, MatchesCpuBitForBit) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kBGR8}) {
    expect_cuda_matches_cpu(format, {{13, 127}}, 6, 7, 1);
    expect_cuda_matches_cpu(format, {{127, 13}, {300, 200}, {7, 5}}, 40, 16, 2);
    expect_cuda_matches_cpu(format, {{61, 33}}, 10, 1, 3);
  }
  expect_cuda_matches_cpu(PixelFormat::kNV12, {{126, 78}}, 8, 5, 4);
  expect_cuda_matches_cpu(PixelFormat::kNV12, {{126, 78}, {66, 10}, {1920, 1080}}, 60, 16, 5);
  expect_cuda_matches_cpu(PixelFormat::kNV12, {{640, 360}}, 5, kMaxPixelateCell, 6);
  expect_cuda_matches_cpu(PixelFormat::kNV12, {{38, 22}}, 12, 1, 7);
  expect_cuda_matches_cpu(PixelFormat::kNV12, {{38, 22}}, 0, 4, 8);
}

TEST(PixelateGpu, MoreImagesThanOneLaunchHolds) {
  FOVEA_REQUIRE_GPU();
  std::vector<Size> many;
  for (int i = 0; i < 70; ++i) many.push_back({20 + 2 * (i % 7), 16 + 2 * (i % 3)});  // even: NV12
  expect_cuda_matches_cpu(PixelFormat::kNV12, many, 200, 3, 9);
}

}  // namespace
}  // namespace fovea::image::testing
