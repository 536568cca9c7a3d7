// The pipeline commands through the real binary on the CPU: `fovea demo` (the README's main job)
// end to end, `fovea run` and `fovea segment` agreeing on one job, sizes written WIDTHxHEIGHT, and
// the exit codes and messages of every command on bad input (README's exit-code table).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "io/synthetic_clip.h"
#include "runtime/demo_model.h"
#include "runtime/npy.h"
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

  // A 64x48 clip of 6 frames and the demo model (2 classes), written once per test.
  fs::path clip() {
    const fs::path path = dir_ / "clip.mp4";
    if (!fs::exists(path)) {
      EXPECT_TRUE(io::write_synthetic_clip(path.string(), {.width = 64, .height = 48, .frames = 6}).is_ok());
    }
    return path;
  }
  fs::path model() {
    const fs::path path = dir_ / "demo.onnx";
    if (!fs::exists(path)) {
      EXPECT_TRUE(runtime::write_demo_segmentation_model(path).is_ok());
    }
    return path;
  }

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
  std::ifstream report_file(out / "stats.json");
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

TEST_F(CliPipeline, SegmentWithAMissingModelIsABadCommandLine) {
  EXPECT_EQ(fovea({"segment", clip().string(), "--model", (dir() / "nope.onnx").string(), "--device", "cpu"}),
            2)
      << output();
  EXPECT_NE(output().find("--model"), std::string::npos) << output();
  EXPECT_NE(output().find("nope.onnx"), std::string::npos) << output();
}

// Issue 18, item 7: `model run`'s --device defaults to cpu, as its help says; bench's default
// (cuda) is its own.
TEST_F(CliPipeline, ModelRunRunsOnTheCpuByDefault) {
  runtime::Tensor input = runtime::Tensor::allocate(DataType::kFloat32, {1, 3, 8, 8});
  for (std::int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = static_cast<float>(i % 7) / 7.0f;
  ASSERT_TRUE(runtime::write_npy(dir() / "in.npy", input).is_ok());
  ASSERT_EQ(fovea({"model", "run", model().string(), "--input", "input=" + (dir() / "in.npy").string(),
                   "--output-dir", (dir() / "out").string()}),
            0)
      << output();
  EXPECT_NE(output().find("CPU threads"), std::string::npos) << output();
  Result<runtime::Tensor> out = runtime::read_npy(dir() / "out" / "out.npy");
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->shape(), (runtime::Shape{1, 2, 8, 8}));
  ASSERT_EQ(fovea({"model", "bench", "--help"}), 0);
  EXPECT_NE(output().find("=cuda"), std::string::npos) << output();
}

// The metadata lines of a JSON Lines file, for comparing two runs.
std::vector<nlohmann::json> read_jsonl(const fs::path& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// Issue 18, item 8: one set of defaults. The same job through `segment` (flags left out) and
// through `run` with the smallest file gives the same frames at the source's own size, in the
// same batches, with the same masks.
TEST_F(CliPipeline, SegmentAndAMinimalConfigurationRunTheSameJob) {
  ASSERT_EQ(fovea({"segment", clip().string(), "--model", model().string(), "--class", "1", "--device", "cpu",
                   "--no-progress", "-o", (dir() / "segment").string(), "--metadata",
                   (dir() / "segment.jsonl").string()}),
            0)
      << output();
  const fs::path config = dir() / "run.yaml";
  std::ofstream(config) << "sources:\n  - uri: " << clip().string()
                        << "\nmodel:\n  path: " << model().string()
                        << "\ntask:\n  classes: [1]\nsinks:\n  video:\n    output_dir: "
                        << (dir() / "run").string()
                        << "\n  metadata:\n    path: " << (dir() / "run.jsonl").string() << "\n";
  ASSERT_EQ(fovea({"run", config.string(), "--device", "cpu", "--no-progress"}), 0) << output();
  EXPECT_EQ(output().find("scaled"), std::string::npos) << output();  // nothing to scale

  const std::vector<nlohmann::json> by_segment = read_jsonl(dir() / "segment.jsonl");
  ASSERT_EQ(by_segment.size(), 6u);
  EXPECT_EQ(read_jsonl(dir() / "run.jsonl"), by_segment);
  EXPECT_EQ(by_segment[5]["batch"], 1);  // batches of 4: frames 0..3, then 4..5
  for (const char* name : {"segment", "run"}) {
    Result<DecodeOutcome> video = decode_with_cpu((dir() / name / "clip.mp4").string());
    ASSERT_TRUE(video.is_ok()) << video.status().to_string();
    ASSERT_EQ(video->frames.size(), 6u) << name;
    EXPECT_EQ(video->frames[0].image.width, 64) << name;
    EXPECT_EQ(video->frames[0].image.height, 48) << name;
  }
}

// Sources that disagree on their size: every frame is scaled to the first source's, and the log
// says so, naming the other source.
TEST_F(CliPipeline, SourcesOfDifferentSizesAreScaledToTheFirstAndTheLogSaysSo) {
  const fs::path small = dir() / "small.mp4";
  ASSERT_TRUE(io::write_synthetic_clip(small.string(), {.width = 32, .height = 24, .frames = 2}).is_ok());
  const fs::path config = dir() / "run.yaml";
  std::ofstream(config) << "sources:\n  - uri: " << clip().string() << "\n  - uri: " << small.string()
                        << "\nmodel:\n  path: " << model().string()
                        << "\nsinks:\n  video:\n    output_dir: " << (dir() / "out").string() << "\n";
  ASSERT_EQ(fovea({"run", config.string(), "--device", "cpu", "--no-progress"}), 0) << output();
  EXPECT_NE(output().find("small.mp4 is 32x24"), std::string::npos) << output();
  EXPECT_NE(output().find("scaled to the first source's size, 64x48"), std::string::npos) << output();
  Result<DecodeOutcome> video = decode_with_cpu((dir() / "out" / "small.mp4").string());
  ASSERT_TRUE(video.is_ok()) << video.status().to_string();
  ASSERT_EQ(video->frames.size(), 2u);
  EXPECT_EQ(video->frames[0].image.width, 64);
  EXPECT_EQ(video->frames[0].image.height, 48);
}

// Issue 18, item 9: sizes are WIDTHxHEIGHT, as FFmpeg's and as fovea prints them.
TEST_F(CliPipeline, SizesAreWidthByHeight) {
  ASSERT_EQ(fovea({"segment", clip().string(), "--model", model().string(), "--frame-size", "96x64", "--size",
                   "48x32", "--device", "cpu", "--no-progress", "-o", (dir() / "out").string()}),
            0)
      << output();
  EXPECT_NE(output().find("at 48x32"), std::string::npos) << output();  // the network input, printed
  EXPECT_NE(output().find("scaled to 96x64"), std::string::npos) << output();
  Result<DecodeOutcome> video = decode_with_cpu((dir() / "out" / "clip.mp4").string());
  ASSERT_TRUE(video.is_ok()) << video.status().to_string();
  ASSERT_FALSE(video->frames.empty());
  EXPECT_EQ(video->frames[0].image.width, 96);
  EXPECT_EQ(video->frames[0].image.height, 64);
  ASSERT_EQ(fovea({"segment", "--help"}), 0);
  EXPECT_NE(output().find("WIDTHxHEIGHT, e.g. 960x544"), std::string::npos) << output();
  EXPECT_EQ(output().find("HEIGHTxWIDTH"), std::string::npos) << output();
}

// Issue 18, item 10: a bad flag is named as the user typed it, with the configuration's reason.
TEST_F(CliPipeline, SegmentNamesTheFlagNotAConfigurationKey) {
  const auto segment_error = [&](std::vector<std::string> flags) {
    std::vector<std::string> args{"segment", clip().string(), "--model", model().string(), "--device", "cpu"};
    args.insert(args.end(), flags.begin(), flags.end());
    EXPECT_EQ(fovea(args), 2) << output();
    EXPECT_EQ(output().find("<command line>"), std::string::npos) << output();
    return output();
  };
  EXPECT_NE(segment_error({"--blur", "30"}).find("--blur 30: must be odd, got 30"), std::string::npos);
  EXPECT_NE(segment_error({"--blur", "33"}).find("--blur 33: must be between 1 and 31, got 33"),
            std::string::npos);
  EXPECT_NE(segment_error({"--batch", "0"}).find("--batch 0: must be between 1 and 1024, got 0"),
            std::string::npos);
  EXPECT_NE(segment_error({"--frame-size", "65x48"}).find("--frame-size 65x48: must be even"),
            std::string::npos);
  EXPECT_NE(segment_error({"--size", "960"}).find("--size 960: expected WIDTHxHEIGHT"), std::string::npos);
  EXPECT_NE(segment_error({"--class", "1", "--class", "1"}).find("--class 1: class 1 is listed twice"),
            std::string::npos);
}

// Issue 18, item 11: a bad value for any flag is exit 2 naming the flag, before any work.
TEST_F(CliPipeline, BadFlagValuesExitTwoNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string named;
  };
  const std::string clip_path = clip().string();
  const std::string model_path = model().string();
  const std::string out = (dir() / "out").string();
  const fs::path config = dir() / "run.yaml";
  std::ofstream(config) << "sources:\n  - uri: " << clip_path << "\nmodel:\n  path: " << model_path
                        << "\nsinks:\n  null: true\n";
  const std::vector<Case> cases = {
      {{"segment", clip_path, "--model", model_path, "--class", "5", "-o", out},
       "--class: class 5 is not among the model's 2 classes"},
      {{"segment", clip_path, "--model", model_path, "--preset", "superfast2", "-o", out}, "--preset"},
      {{"segment", clip_path, "--model", model_path, "--precision", "fp8"}, "--precision"},
      {{"segment", clip_path, "--model", model_path, "--decoder", "gpu"}, "--decoder gpu"},
      {{"demo", "-o", out, "--frames", "-5"}, "--frames: must be at least 1, got -5"},
      {{"run", config.string(), "--set", "task.classes=[5]"}, "task.classes: class 5 is not among"},
      {{"run", config.string(), "--set", "model.path=" + (dir() / "nope.onnx").string()}, "models.0.path"},
      {{"model", "info", model_path, "--shape", "image=1x3x8x8"}, "--shape"},
      {{"model", "run", model_path, "--input", "input=" + (dir() / "nope.npy").string()}, "--input"},
      {{"model", "bench", model_path, "--batch", "4,0"}, "--batch: must be at least 1, got 0"},
      {{"transcode", clip_path, (dir() / "t.mp4").string(), "--preset", "superfast2"}, "--preset"},
      {{"transcode", clip_path, (dir() / "t.mp4").string(), "--crf", "99"}, "--crf"},
      {{"decode-bench", clip_path, "--decoder", "cpu", "--sessions", "0"}, "--sessions"},
      {{"probe", clip_path, "--timeout-ms", "-1"}, "--timeout-ms"},
      {{"sweep", config.string(), "--param", "mux.batch_size=0", "--out", out}, "--param mux.batch_size=0"},
      {{"report", dir().string(), "--top", "-1"}, "--top"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(fovea(c.args), 2) << c.args[0] << " " << c.named << ":\n" << output();
    EXPECT_NE(output().find(c.named), std::string::npos) << output();
  }
  EXPECT_FALSE(fs::exists(fs::path(out) / "clip.mp4")) << "a refused command wrote its output";
}

}  // namespace
}  // namespace fovea::testing
