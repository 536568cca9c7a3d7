// `fovea sweep` over the cascade's keys, through the real binary on the CPU: the demo detector
// (runtime/demo_detector.h) tracked by ByteTrack and a tiny color classifier (the cascade flow
// tests' model) on a synthetic clip, swept over the detector interval and the classifier's batch
// size. Every combination runs, and the sweep names the fastest configuration and its bounding
// stage.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/synthetic_clip.h"
#include "pipeline/cascade_flow_fixture.h"
#include "runtime/demo_detector.h"
#include "runtime/onnx_writer.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kFrames = 12;

TEST(CliSweepCascade, SweepsTheIntervalAndTheSecondaryBatchSizeAndNamesTheFastest) {
  const fs::path dir = test_temp_dir();
  const fs::path clip = dir / "clip.mp4";
  ASSERT_TRUE(io::write_synthetic_clip(clip, {.width = 320, .height = 180, .frames = kFrames}).is_ok());
  ASSERT_TRUE(runtime::write_demo_detection_model(dir / "detector.onnx").is_ok());
  Result<std::string> color = runtime::serialize_onnx(pipeline::detect_test::color_model_graph(), {});
  ASSERT_TRUE(color.is_ok()) << color.status().to_string();
  std::ofstream(dir / "color.onnx", std::ios::binary) << *color;
  std::ofstream(dir / "labels.txt") << "background\nred\ngreen\nblue\n";
  std::ofstream(dir / "colors.txt") << "red\ngreen\nblue\n";
  std::ofstream(dir / "cascade.yaml")
      << "sources:\n  - uri: " << clip.string() << "\nmux:\n  batch_size: 3\nflow: detection\nmodels:\n"
      << "  - name: detector\n    path: " << (dir / "detector.onnx").string() << "\n    parser: boxes\n"
      << "    labels: " << (dir / "labels.txt").string()
      << "\n    input_width: " << runtime::kDemoDetectorInputWidth
      << "\n    input_height: " << runtime::kDemoDetectorInputHeight
      << "\n    mean: [0, 0, 0]\n    std: [1, 1, 1]\n"
      << "  - name: color\n    path: " << (dir / "color.onnx").string()
      << "\n    labels: " << (dir / "colors.txt").string() << "\n    mean: [0, 0, 0]\n    std: [1, 1, 1]\n"
      << "detect:\n  confidence: 0.5\ntrack:\n  enabled: true\nsecondary:\n  - model: color\n"
      << "sinks:\n  null: true\n";

  const fs::path out = dir / "out";
  const int code =
      run_cli(FOVEA_CLI_PATH,
              {"sweep", (dir / "cascade.yaml").string(), "--device", "cpu", "--out", out.string(), "--param",
               "detect.interval=0,2", "--param", "models.1.batch_size=1,4"},
              dir / "log.txt");
  const std::string output = read_text(dir / "log.txt");
  ASSERT_EQ(code, 0) << output;

  std::ifstream in(out / "sweep.json");
  const nlohmann::json sweep = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(sweep.is_discarded());
  ASSERT_EQ(sweep["runs"].size(), 4u);
  double best_fps = -1;
  std::string best;
  for (const nlohmann::json& run : sweep["runs"]) {
    EXPECT_EQ(run["status"], "ok") << run.dump();
    EXPECT_EQ(run["frames"], kFrames) << run.dump();
    EXPECT_TRUE(run["bottleneck"].is_object()) << run.dump();
    if (run["fps"].get<double>() > best_fps) {
      best_fps = run["fps"].get<double>();
      best = run["label"].get<std::string>();
    }
  }
  EXPECT_EQ(sweep["runs"][3]["values"]["detect.interval"], "2");
  EXPECT_EQ(sweep["runs"][3]["values"]["models.1.batch_size"], "4");
  ASSERT_TRUE(sweep["fastest"].is_object());
  EXPECT_EQ(sweep["fastest"]["label"], best);
  EXPECT_NE(output.find("fastest: " + best + " ("), std::string::npos) << output;
  EXPECT_NE(output.find("its bottleneck: "), std::string::npos) << output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fovea::testing
