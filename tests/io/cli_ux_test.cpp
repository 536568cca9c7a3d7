// What a user sees, through the real binary on the CPU: `--version`, -q/-v after the subcommand,
// `fovea report` on traced runs and on a `fovea demo` folder, one NVENC line at most, decode-bench
// without a GPU, YAML paths taken from the file's folder, the null sink said aloud, and the stats
// table after Ctrl-C.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/gpu.h"
#include "io/synthetic_clip.h"
#include "runtime/demo_model.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

class CliUx : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_temp_dir();
    ASSERT_TRUE(io::write_synthetic_clip(clip().string(), {.width = 64, .height = 48, .frames = 6}).is_ok());
    ASSERT_TRUE(runtime::write_demo_segmentation_model(model()).is_ok());
  }

  fs::path clip() const { return dir_ / "clip.mp4"; }
  fs::path model() const { return dir_ / "demo.onnx"; }

  // Runs fovea with `args`; the exit code, with everything it printed in output_.
  int fovea(const std::vector<std::string>& args) {
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }

  // `fovea segment` on the test clip with the demo model, small and fast on the CPU.
  std::vector<std::string> segment(std::vector<std::string> more) const {
    std::vector<std::string> args{"segment",     clip().string(),
                                  "--model",     model().string(),
                                  "--normalize", "none",
                                  "--class",     std::to_string(runtime::kDemoSubjectClass),
                                  "--batch",     "2",
                                  "--blur",      "5",
                                  "--no-refine", "--no-progress"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  fs::path dir_;
  std::string output_;
};

TEST_F(CliUx, VersionSaysTheProjectVersionAndWhetherCudaIsBuiltIn) {
  ASSERT_EQ(fovea({"--version"}), 0) << output_;
  EXPECT_EQ(output_.find("fovea " FOVEA_VERSION "\n"), 0u) << output_;
  EXPECT_NE(output_.find("CUDA: "), std::string::npos) << output_;
}

// The help lists -q and -v; they work after the subcommand as well as before it.
TEST_F(CliUx, QuietAndVerboseWorkAfterTheSubcommand) {
  ASSERT_EQ(fovea(segment({})), 0) << output_;
  EXPECT_NE(output_.find("fovea [info]"), std::string::npos) << output_;
  ASSERT_EQ(fovea(segment({"-q"})), 0) << output_;
  EXPECT_EQ(output_.find("fovea [info]"), std::string::npos) << output_;
  ASSERT_EQ(fovea(segment({"--verbose"})), 0) << output_;
  EXPECT_NE(output_.find("fovea [debug]"), std::string::npos) << output_;
  ASSERT_EQ(fovea({"-q", "probe", clip().string()}), 0) << output_;
}

// probe says "unknown" (null in JSON) for what the container does not give (a raw .h264 stream has
// no duration or bit rate), and the JSON array holds a failed input in its place with the reason: a
// missing file, and a file with no video stream, which is an unsupported input, not a missing one.
TEST_F(CliUx, ProbeSaysWhatItDoesNotKnowAndListsFailures) {
  const fs::path raw = dir_ / "clip.h264";
  ASSERT_TRUE(io::write_synthetic_clip(raw.string(), {.width = 64, .height = 48, .frames = 4}).is_ok());
  ASSERT_EQ(fovea({"probe", raw.string()}), 0) << output_;
  EXPECT_NE(output_.find("duration    unknown"), std::string::npos) << output_;
  const fs::path text = dir_ / "notes.mp4";
  std::ofstream(text) << "not a video";
  ASSERT_EQ(fovea({"probe", "--json", raw.string(), (dir_ / "missing.mp4").string(), text.string()}), 3)
      << output_;
  EXPECT_NE(output_.find("\"duration_s\": null"), std::string::npos) << output_;
  EXPECT_NE(output_.find("\"error\": \"not found: " + (dir_ / "missing.mp4").string()), std::string::npos)
      << output_;
  EXPECT_NE(output_.find("\"url\": \"" + text.string() + "\""), std::string::npos) << output_;
}

// Two runs of the same clip are labelled by their folders, not both by the clip's name; on the CPU
// the HTML page still charts where the time went.
TEST_F(CliUx, ReportLabelsRunsByTheirFolders) {
  for (const char* run : {"run1", "run2"}) {
    ASSERT_EQ(fovea(segment({"--device", "cpu", "--trace", (dir_ / run).string()})), 0) << output_;
  }
  const fs::path page = dir_ / "page.html";
  ASSERT_EQ(fovea({"report", (dir_ / "run1").string(), (dir_ / "run2").string(), "--html", page.string()}), 0)
      << output_;
  EXPECT_NE(output_.find("Run run1: "), std::string::npos) << output_;
  EXPECT_NE(output_.find("Run run2: "), std::string::npos) << output_;
  EXPECT_EQ(output_.find("Run clip"), std::string::npos) << output_;
  EXPECT_NE(output_.find("wall time)"), std::string::npos) << output_;
  const std::string html = read_text(page);
  EXPECT_NE(html.find("<rect"), std::string::npos) << html;
  EXPECT_NE(html.find("CPU time per stage"), std::string::npos) << html;
}

// The demo's folder holds its statistics (stats.json) and its trace: `fovea report DIR` reads it.
TEST_F(CliUx, ReportReadsTheDemoFolder) {
  const fs::path demo = dir_ / "demo";
  ASSERT_EQ(fovea({"demo", "-o", demo.string(), "--frames", "2", "--device", "cpu", "--no-progress"}), 0)
      << output_;
  EXPECT_TRUE(fs::is_regular_file(demo / "stats.json"));
  EXPECT_NE(output_.find("fovea report " + demo.string()), std::string::npos) << output_;
  ASSERT_EQ(fovea({"report", demo.string()}), 0) << output_;
  EXPECT_NE(output_.find("Run demo: "), std::string::npos) << output_;
  EXPECT_NE(output_.find("** nvtx_sum"), std::string::npos) << output_;
}

// Every output falls back from NVENC on a machine without it; that is said once at most (not at
// all without a GPU, where the run has said "no GPU" already), not once per output.
TEST_F(CliUx, NvencFallbackIsNotRepeatedPerOutput) {
  const fs::path second = dir_ / "second.mp4";
  fs::copy_file(clip(), second);
  std::vector<std::string> args = segment({"-o", (dir_ / "out").string()});
  args.insert(args.begin() + 2, second.string());
  ASSERT_EQ(fovea(args), 0) << output_;
  EXPECT_LE(count_of(output_, "unavailable"), gpu_available() ? 1u : 0u) << output_;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "out" / "second.mp4")) << output_;
}

// x265 prints to stderr itself, past FFmpeg's log; its level follows fovea's: by default its info
// banner (its whole configuration) is not printed, with -v it is. Skipped by name where FFmpeg has
// no libx265 (the GPU machine's minimal build).
TEST_F(CliUx, X265FollowsFoveasLogLevel) {
  if (!has_ffmpeg_encoder("libx265")) GTEST_SKIP() << "this FFmpeg has no libx265";
  const auto transcode = [&](const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> args{
        "transcode", clip().string(), (dir_ / name).string(), "--codec", "hevc", "--decoder", "cpu"};
    args.insert(args.end(), more.begin(), more.end());
    return fovea(args);
  };
  ASSERT_EQ(transcode("default.mp4", {}), 0) << output_;
  EXPECT_EQ(output_.find("x265 [info]"), std::string::npos) << output_;
  ASSERT_EQ(transcode("verbose.mp4", {"-v"}), 0) << output_;
  EXPECT_NE(output_.find("x265 [info]"), std::string::npos) << output_;
}

TEST_F(CliUx, DecodeBenchWithoutAGpuSaysToUseTheCpu) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present: nvdec is the right default";
  EXPECT_EQ(fovea({"decode-bench", clip().string()}), 1) << output_;
  EXPECT_NE(output_.find("no GPU"), std::string::npos) << output_;
  EXPECT_NE(output_.find("--decoder cpu"), std::string::npos) << output_;
  EXPECT_EQ(output_.find(".cpp"), std::string::npos) << output_;  // no source path
  EXPECT_EQ(fovea({"decode-bench", clip().string(), "--decoder", "auto"}), 0) << output_;
}

// Paths in a configuration are next to it, wherever fovea is started from (the test's working
// directory is not the configuration's folder).
TEST_F(CliUx, RelativePathsInYamlAreTakenFromTheFilesFolder) {
  fs::create_directories(dir_ / "cfg");
  std::ofstream(dir_ / "cfg" / "run.yaml") << "sources:\n  - uri: ../clip.mp4\nmodel:\n  path: ../demo.onnx\n"
                                           << "task:\n  refine_mask: false\n  blur_kernel: 5\n"
                                           << "sinks:\n  null: true\nstats:\n  progress: false\n"
                                           << "  report: stats.json\n";
  ASSERT_NE(fs::current_path(), dir_ / "cfg");
  ASSERT_EQ(fovea({"run", (dir_ / "cfg" / "run.yaml").string(), "--device", "cpu"}), 0) << output_;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "cfg" / "stats.json")) << output_;
}

TEST_F(CliUx, SegmentWithoutOutputSaysTheVideoIsDiscarded) {
  ASSERT_EQ(fovea(segment({"--device", "cpu"})), 0) << output_;
  EXPECT_NE(output_.find("the blurred video is discarded (a null sink"), std::string::npos) << output_;
  ASSERT_EQ(fovea(segment({"--device", "cpu", "-o", (dir_ / "out").string()})), 0) << output_;
  EXPECT_EQ(output_.find("discarded"), std::string::npos) << output_;
}

// The demo model's batch and spatial dims are symbolic: info says it took them as 1, and its FLOP
// count at that size is not printed as 0.
TEST_F(CliUx, ModelInfoSaysWhichDimsItAssumed) {
  ASSERT_EQ(fovea({"model", "info", model().string()}), 0) << output_;
  EXPECT_NE(output_.find("symbolic in the model, taken as 1: --shape input=... sets them"), std::string::npos)
      << output_;
  EXPECT_EQ(output_.find("FLOPs       0.000"), std::string::npos) << output_;
  ASSERT_EQ(fovea({"model", "info", model().string(), "--shape", "input=1x3x48x64"}), 0) << output_;
  EXPECT_EQ(output_.find("taken as 1"), std::string::npos) << output_;
}

// --graph prints the planned graph a node a line: the demo segmenter's convolutions fused with
// their epilogues, each with its operands' types; a bad --shape is still a usage error.
TEST_F(CliUx, ModelInfoGraphPrintsThePlannedNodes) {
  ASSERT_EQ(fovea({"model", "info", model().string(), "--graph", "--shape", "input=2x3x48x64"}), 0)
      << output_;
  EXPECT_NE(output_.find("nodes planned for cpu fp32"), std::string::npos) << output_;
  EXPECT_NE(output_.find("fovea.FusedConv  input float32 [2, 3, 48, 64], "), std::string::npos) << output_;
  EXPECT_NE(output_.find(" (const float32 ["), std::string::npos) << output_;
  EXPECT_EQ(fovea({"model", "info", model().string(), "--graph", "--shape", "input=2xQ"}), 2) << output_;
}

// After Ctrl-C a looping source did not end: the table says it was interrupted.
TEST_F(CliUx, StatsTableSaysInterruptedAfterCtrlC) {
  const pid_t pid = start_cli(FOVEA_CLI_PATH, segment({"--device", "cpu", "--loop"}), dir_ / "log.txt");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130);
  output_ = read_text(dir_ / "log.txt");
  const std::size_t row = output_.find("\nclip ");
  ASSERT_NE(row, std::string::npos) << output_;
  const std::string line = output_.substr(row + 1, output_.find('\n', row + 1) - row - 1);
  EXPECT_TRUE(line.ends_with("interrupted")) << line;
}

}  // namespace
}  // namespace fovea::testing
