#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "image/draw.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

// Random commands of every kind, many overlapping (so list order matters), some partly or fully
// outside their image.
std::vector<DrawCommand> random_commands(int count, const std::vector<Size>& sizes, std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<DrawCommand> commands;
  for (int i = 0; i < count; ++i) {
    DrawCommand c;
    c.kind = static_cast<DrawKind>(uniform(0, 2));
    c.image = uniform(0, static_cast<int>(sizes.size()) - 1);
    const Size s = sizes[c.image];
    c.x0 = uniform(-20, s.width + 5);
    c.y0 = uniform(-20, s.height + 5);
    c.x1 = uniform(-20, s.width + 20);
    c.y1 = uniform(-20, s.height + 20);
    for (int ch = 0; ch < 3; ++ch) {
      c.color[ch] = static_cast<std::uint8_t>(uniform(0, 255));
      c.background[ch] = static_cast<std::uint8_t>(uniform(0, 255));
    }
    c.alpha = static_cast<float>(uniform(0, 4)) / 4.0f;
    c.background_alpha = static_cast<float>(uniform(0, 3)) / 3.0f;
    c.thickness = c.kind == DrawKind::kRectangle ? uniform(-1, 4) : uniform(1, 6);
    c.scale = uniform(1, 3);
    const char* labels[] = {"person 0.93", "car", "ID 42 ~{}|", "\x7f\x01 bad chars"};
    std::strncpy(c.text, labels[uniform(0, 3)], kMaxDrawText);
    commands.push_back(c);
  }
  return commands;
}

void expect_cuda_matches_cpu(PixelFormat format, const std::vector<Size>& sizes, int num_commands) {
  std::vector<std::unique_ptr<HostImage>> host;
  std::vector<std::unique_ptr<DeviceImage>> device;
  ImageBatch h, d;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    host.push_back(std::make_unique<HostImage>(format, sizes[i].width, sizes[i].height, 3, 6));
    host.back()->fill_random(static_cast<std::uint32_t>(3 + i));
    device.push_back(std::make_unique<DeviceImage>(format, sizes[i].width, sizes[i].height));
    device.back()->upload(*host.back());
    h.images.push_back(host.back()->view());
    d.images.push_back(device.back()->view());
  }
  const std::vector<DrawCommand> commands = random_commands(num_commands, sizes, 77);
  DrawParams params;
  params.matrix = ColorMatrix::kBt601;
  auto plan = plan_draw(d, commands);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  void* d_buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&d_buffer, plan->buffer_bytes), cudaSuccess);
  ASSERT_TRUE(run_draw_cpu(h, commands, params).is_ok());
  Status status = run_draw_cuda(nullptr, d, commands, params, d_buffer, plan->buffer_bytes);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    HostImage got = device[i]->download(1);
    EXPECT_LE(max_abs_difference(got.view(), host[i]->view()), kU8RoundingTolerance)
        << pixel_format_name(format) << " image " << i;
  }
  EXPECT_FALSE(run_draw_cuda(nullptr, d, commands, params, d_buffer, plan->buffer_bytes - 1).is_ok());
  cudaFree(d_buffer);
}

TEST(DrawGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kBGR8}) {
    expect_cuda_matches_cpu(format, {{13, 127}}, 40);
    expect_cuda_matches_cpu(format, {{127, 13}, {300, 200}, {7, 5}}, 300);  // two command chunks
  }
  expect_cuda_matches_cpu(PixelFormat::kNV12, {{126, 78}, {66, 10}}, 120);
  std::vector<Size> many;
  for (int i = 0; i < 18; ++i) many.push_back({40 + 2 * i, 30 - 2 * (i % 5)});  // even: NV12
  expect_cuda_matches_cpu(PixelFormat::kNV12, many, 200);                       // two launches
}

}  // namespace
}  // namespace fovea::image::testing
