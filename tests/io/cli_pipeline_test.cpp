// The pipeline commands through the real binary on the CPU: `fovea demo` (the README's main job)
// end to end, and the exit codes and messages of `fovea run` and `fovea segment` on bad input.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "io/synthetic_clip.h"
#include "runtime/demo_model.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

class CliPipeline : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_temp_dir(); }

  // Runs fovea with `args`; the exit code, with everything it printed in output().
  int fovea(const std::vector<std::string>& args) {
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }
  const std::string& output() const { return output_; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::string output_;
};

// The README's main job, shortened to four 1080p frames: it says where it runs, writes the clip,
// the model and the output video, and prints the stats table.
TEST_F(CliPipeline, DemoRunsTheSegmentationFlowEndToEnd) {
  const fs::path out = dir() / "demo";
  ASSERT_EQ(fovea({"demo", "-o", out.string(), "--frames", "4", "--device", "cpu", "--no-progress"}), 0)
      << output();
  EXPECT_NE(output().find("on the CPU"), std::string::npos) << output();
  EXPECT_NE(output().find("segmentation on cpu"), std::string::npos) << output();
  EXPECT_NE(output().find("demo_clip  cpu"), std::string::npos) << output();  // the sources table
  Result<DecodeOutcome> video = decode_with_cpu((out / "output" / "demo_clip.mp4").string());
  ASSERT_TRUE(video.is_ok()) << video.status().to_string();
  ASSERT_EQ(video->frames.size(), 4u);
  EXPECT_EQ(video->frames[0].image.width, 1920);
  EXPECT_EQ(video->frames[0].image.height, 1080);
  std::ifstream report_file(out / "report.json");
  const nlohmann::json report = nlohmann::json::parse(report_file, nullptr, false);
  EXPECT_EQ(report["total"]["frames"], 4);
}

TEST_F(CliPipeline, RunRefusesABadOverrideNamingTheKey) {
  const fs::path config = dir() / "run.yaml";
  std::ofstream(config) << "sources:\n  - uri: clip.mp4\nmodel:\n  path: model.onnx\nsinks:\n  null: true\n";
  EXPECT_EQ(fovea({"run", config.string(), "--set", "mux.batch_size=four"}), 2);
  EXPECT_NE(output().find("mux.batch_size"), std::string::npos) << output();
  EXPECT_EQ(fovea({"run", config.string(), "--set", "mux.bach_size=4"}), 2);
  EXPECT_NE(output().find("bach_size"), std::string::npos) << output();
}

// One missing input among good ones: the good one comes out whole, the run exits 3 and names
// the missing file.
TEST_F(CliPipeline, SegmentReportsAMissingInputAndFinishesTheOthers) {
  const fs::path clip = dir() / "clip.mp4";
  const fs::path model = dir() / "demo.onnx";
  ASSERT_TRUE(io::write_synthetic_clip(clip.string(), {.width = 64, .height = 48, .frames = 6}).is_ok());
  ASSERT_TRUE(runtime::write_demo_segmentation_model(model).is_ok());
  const fs::path missing = dir() / "missing.mp4";
  EXPECT_EQ(fovea({"segment", clip.string(), missing.string(), "--model", model.string(), "--normalize",
                   "none", "--class", "1", "--batch", "2", "--device", "cpu", "--no-progress", "-o",
                   (dir() / "out").string()}),
            3)
      << output();
  EXPECT_NE(output().find("missing.mp4"), std::string::npos) << output();
  Result<DecodeOutcome> video = decode_with_cpu((dir() / "out" / "clip.mp4").string());
  ASSERT_TRUE(video.is_ok()) << video.status().to_string();
  EXPECT_EQ(video->frames.size(), 6u);
}

TEST_F(CliPipeline, SegmentWithAMissingModelFailsNamingIt) {
  const fs::path clip = dir() / "clip.mp4";
  ASSERT_TRUE(io::write_synthetic_clip(clip.string(), {.width = 64, .height = 48, .frames = 2}).is_ok());
  EXPECT_EQ(fovea({"segment", clip.string(), "--model", (dir() / "nope.onnx").string(), "--device", "cpu"}),
            1)
      << output();
  EXPECT_NE(output().find("nope.onnx"), std::string::npos) << output();
}

}  // namespace
}  // namespace fovea::testing
