// Mosaic tiler: CUDA against the CPU reference on frames of several even, odd-ish sizes (pitched on
// both sides), upscaled and downscaled into a grid, batch 1 and more frames than one launch holds;
// and the canvas fill, exactly.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/tile.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

void expect_cuda_matches_cpu(const std::vector<Size>& frames, int canvas_width, int canvas_height) {
  std::vector<std::unique_ptr<HostImage>> host;
  std::vector<std::unique_ptr<DeviceImage>> device;
  ImageBatch h, d;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    host.push_back(std::make_unique<HostImage>(PixelFormat::kNV12, frames[i].width, frames[i].height, 3, 3));
    host.back()->fill_random(static_cast<std::uint32_t>(11 + i));
    device.push_back(std::make_unique<DeviceImage>(PixelFormat::kNV12, frames[i].width, frames[i].height));
    device.back()->upload(*host.back());
    h.images.push_back(host.back()->view());
    d.images.push_back(device.back()->view());
  }
  // The canvas starts random on both sides, so untouched samples must stay as they were.
  HostImage host_canvas(PixelFormat::kNV12, canvas_width, canvas_height, 3, 7);
  host_canvas.fill_random(5);
  DeviceImage device_canvas(PixelFormat::kNV12, canvas_width, canvas_height);
  device_canvas.upload(host_canvas);
  auto grid = tile_layout(static_cast<int>(frames.size()), canvas_width, canvas_height);
  ASSERT_TRUE(grid.is_ok()) << grid.status().to_string();
  std::vector<Roi> destinations;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    destinations.push_back(fit_in_tile(grid->tiles[i], frames[i].width, frames[i].height));
  }
  ASSERT_TRUE(run_tile_cpu(h, destinations, host_canvas.view()).is_ok());
  const Status status = run_tile_cuda(nullptr, d, destinations, device_canvas.view());
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  // resize_pixel's float multiply-adds may be fused on the device: one rounding step at most.
  EXPECT_LE(max_abs_difference(device_canvas.download(2).view(), host_canvas.view()), kU8RoundingTolerance)
      << frames.size() << " frames on " << canvas_width << "x" << canvas_height;
  EXPECT_FALSE(run_tile_cuda(nullptr, h, destinations, host_canvas.view()).is_ok());
}

TEST(TileGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_cuda_matches_cpu({{126, 78}}, 640, 360);                                      // upscale
  expect_cuda_matches_cpu({{1920, 1080}, {14, 126}, {62, 18}, {300, 200}}, 358, 202);  // both ways
  std::vector<Size> many;
  for (int i = 0; i < 11; ++i) many.push_back({40 + 6 * i, 30 + 4 * (i % 4)});
  expect_cuda_matches_cpu(many, 500, 282);  // 22 jobs: two launches
}

TEST(TileGpu, FillMatchesCpuExactly) {
  FOVEA_REQUIRE_GPU();
  HostImage host(PixelFormat::kNV12, 126, 78, 3, 3);
  host.fill_random(1);
  DeviceImage device(PixelFormat::kNV12, 126, 78);
  device.upload(host);
  const Nv12Color color{20, 30, 240};
  ASSERT_TRUE(fill_canvas_cpu(roi_subview(host.view(), Roi{4, 2, 60, 40}), color).is_ok());
  const Status status = fill_canvas_cuda(nullptr, roi_subview(device.view(), Roi{4, 2, 60, 40}), color);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_EQ(max_abs_difference(device.download(1).view(), host.view()), 0.0);
  EXPECT_FALSE(fill_canvas_cuda(nullptr, host.view(), color).is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
