// fovea image-bench through the real binary on the CPU: a folder of generated JPEGs and PNGs (one
// of them damaged) gives images/s above zero, the JSON keys scripts read, and the bad file by
// name; --backend nvjpeg without libnvjpeg, or nvdec without a GPU, fails with exit 1 and says why.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "io/image_codec.h"
#include "io/nvjpeg_decoder.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

class CliImageBench : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_temp_dir();
    fs::create_directories(dir_ / "images" / "sub");
    Result<io::HostImage> image = io::HostImage::allocate(PixelFormat::kRGB8, 31, 17);
    ASSERT_TRUE(image.is_ok());
    for (int y = 0; y < 17; ++y) {
      for (int x = 0; x < 31 * 3; ++x) image->row(y)[x] = static_cast<std::uint8_t>(x * 5 + y * 3);
    }
    const std::vector<std::string> none;
    ASSERT_TRUE(
        io::write_image_file(dir_ / "images" / "a.jpg", image->view(), {io::ImageFileFormat::kJpeg}, none)
            .is_ok());
    ASSERT_TRUE(io::write_image_file(dir_ / "images" / "sub" / "b.png", image->view(),
                                     {io::ImageFileFormat::kPng}, none)
                    .is_ok());
    const std::string jpeg = read_text(dir_ / "images" / "a.jpg");
    std::ofstream(dir_ / "images" / "cut.jpg", std::ios::binary) << jpeg.substr(0, jpeg.size() / 2);
  }

  int fovea(const std::vector<std::string>& args) {
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }

  fs::path dir_;
  std::string output_;
};

TEST_F(CliImageBench, CpuCeilingWithJsonAndTheBadFileNamed) {
  const fs::path json = dir_ / "bench.json";
  ASSERT_EQ(fovea({"image-bench", (dir_ / "images").string(), "--recursive", "--backend", "cpu", "--seconds",
                   "0.2", "--encode", "jpeg", "--json", json.string()}),
            3)
      << output_;  // some inputs failed
  EXPECT_NE(output_.find("the disk is not measured"), std::string::npos) << output_;
  EXPECT_NE(output_.find("cut.jpg"), std::string::npos) << output_;
  const nlohmann::json report = nlohmann::json::parse(read_text(json));
  EXPECT_EQ(report["files"], 3);
  ASSERT_EQ(report["backends"].size(), 2u);
  const nlohmann::json& cpu = report["backends"][0];
  EXPECT_EQ(cpu["backend"], "cpu");
  EXPECT_EQ(cpu["files"], 2);
  EXPECT_GT(cpu["images_per_second"].get<double>(), 0.0);
  EXPECT_GT(cpu["mb_per_second"].get<double>(), 0.0);
  EXPECT_EQ(report["backends"][1]["backend"], "encode-jpeg");
  EXPECT_GT(report["backends"][1]["images_per_second"].get<double>(), 0.0);
  ASSERT_EQ(report["failures"].size(), 1u);
  EXPECT_NE(report["failures"][0]["file"].get<std::string>().find("cut.jpg"), std::string::npos);
}

TEST_F(CliImageBench, JsonOverAnInputIsRefused) {
  const fs::path input = dir_ / "images" / "a.jpg";
  const std::string before = read_text(input);
  EXPECT_EQ(fovea({"image-bench", input.string(), "--backend", "cpu", "--seconds", "0.1", "--json",
                   input.string()}),
            2)
      << output_;
  EXPECT_EQ(read_text(input), before);
}

// A missing input or a folder without images is the command line's mistake (exit 2), as for
// `fovea images`; thread counts and seconds out of range, NaN included, are refused before any work.
TEST_F(CliImageBench, BadInputsAndFlagValuesExitTwo) {
  EXPECT_EQ(fovea({"image-bench", (dir_ / "nowhere").string(), "--backend", "cpu"}), 2) << output_;
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(fovea({"image-bench", (dir_ / "empty").string(), "--backend", "cpu"}), 2) << output_;
  const std::string images = (dir_ / "images").string();
  EXPECT_EQ(fovea({"image-bench", images, "--backend", "cpu", "--threads", "100000"}), 2) << output_;
  EXPECT_NE(output_.find("--threads: must be between 0 and 1024, got 100000"), std::string::npos) << output_;
  for (const char* seconds : {"nan", "inf", "0", "-1", "1e-300"}) {
    EXPECT_EQ(fovea({"image-bench", images, "--backend", "cpu", "--seconds", seconds}), 2)
        << seconds << output_;
    EXPECT_NE(output_.find("--seconds: must be a finite number"), std::string::npos) << output_;
  }
}

TEST_F(CliImageBench, NvjpegWithoutTheLibrarySaysWhy) {
  if (io::NvjpegDecoder::available()) GTEST_SKIP() << "libnvjpeg loads here";
  EXPECT_EQ(fovea({"image-bench", (dir_ / "images").string(), "--backend", "nvjpeg", "--seconds", "0.1"}), 1)
      << output_;
  EXPECT_NE(output_.find("nvJPEG unavailable"), std::string::npos) << output_;
}

TEST_F(CliImageBench, NvdecWithoutAGpuSaysWhy) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is here: cli_image_bench_gpu_test.cpp decodes with NVDEC";
  EXPECT_EQ(fovea({"image-bench", (dir_ / "images").string(), "--backend", "nvdec", "--seconds", "0.1"}), 1)
      << output_;
  EXPECT_NE(output_.find("NVDEC unavailable"), std::string::npos) << output_;
}

}  // namespace
}  // namespace fovea::testing
