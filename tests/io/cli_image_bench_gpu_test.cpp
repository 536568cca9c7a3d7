// fovea image-bench --backend nvdec through the real binary on the GPU: JPEG photos of two sizes
// (the second makes each session's decoder anew, as a resolution change in a video does) decoded
// by NVDEC's JPEG decoder on two sessions, and a truncated file named and left out (exit 3).
// Skipped without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "io/image_codec.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

// A JPEG (libjpeg-turbo's default 4:2:0) of a smooth gradient, so that it is not trivially small.
void write_photo(const fs::path& path, int width, int height) {
  Result<io::HostImage> image = io::HostImage::allocate(PixelFormat::kRGB8, width, height);
  ASSERT_TRUE(image.is_ok());
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width * 3; ++x)
      image->row(y)[x] = static_cast<std::uint8_t>((x / 3) + 2 * y + x % 3 * 60);
  }
  ASSERT_TRUE(io::write_image_file(path, image->view(), {io::ImageFileFormat::kJpeg}, {}).is_ok());
}

TEST(CliImageBenchGpu, NvdecDecodesJpegsOfTwoSizesAndNamesTheBadOne) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const fs::path dir = test_temp_dir();
  fs::create_directories(dir / "photos");
  for (int i = 0; i < 4; ++i) write_photo(dir / "photos" / fmt::format("a{}.jpg", i), 320, 240);
  for (int i = 0; i < 2; ++i) write_photo(dir / "photos" / fmt::format("b{}.jpg", i), 256, 192);
  const std::string jpeg = read_text(dir / "photos" / "a0.jpg");
  std::ofstream(dir / "photos" / "cut.jpg", std::ios::binary) << jpeg.substr(0, jpeg.size() / 2);
  const fs::path json = dir / "bench.json";
  const int code = run_cli(FOVEA_CLI_PATH,
                           {"image-bench", (dir / "photos").string(), "--backend", "nvdec", "--sessions", "2",
                            "--seconds", "0.3", "--json", json.string()},
                           dir / "log.txt");
  const std::string output = read_text(dir / "log.txt");
  ASSERT_EQ(code, 3) << output;  // the cut file failed, the others were decoded
  const nlohmann::json report = nlohmann::json::parse(read_text(json));
  ASSERT_EQ(report["backends"].size(), 1u) << output;
  const nlohmann::json& nvdec = report["backends"][0];
  EXPECT_EQ(nvdec["backend"], "nvdec");
  EXPECT_EQ(nvdec["files"], 6);
  EXPECT_GE(nvdec["images"].get<std::int64_t>(), 6) << output;
  EXPECT_GT(nvdec["images_per_second"].get<double>(), 0.0);
  ASSERT_EQ(report["failures"].size(), 1u) << output;
  EXPECT_EQ(report["failures"][0]["stage"], "nvdec");
  EXPECT_NE(report["failures"][0]["file"].get<std::string>().find("cut.jpg"), std::string::npos);
}

}  // namespace
}  // namespace fovea::testing
