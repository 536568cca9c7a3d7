// `fovea sweep` end to end, through the real binary on the CPU: a tiny synthetic clip (64x48) and the
// demo model run once per parameter value, each traced into its own folder; the multi-run report,
// sweep.json and the "fastest:" line; a failing run does not stop the others; bad --param values
// stop the sweep before anything runs; Ctrl-C finalizes the current run and skips the rest.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/synthetic_clip.h"
#include "runtime/demo_model.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kFrames = 8;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

class CliSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_temp_dir();
    ASSERT_TRUE(io::write_synthetic_clip(clip(), {.width = 64, .height = 48, .frames = kFrames}).is_ok());
    ASSERT_TRUE(runtime::write_demo_segmentation_model(dir_ / "demo.onnx").is_ok());
    write_config(false);
  }

  fs::path clip() const { return dir_ / "clip.mp4"; }
  fs::path config() const { return dir_ / "sweep.yaml"; }
  fs::path out() const { return dir_ / "out"; }

  void write_config(bool loop) const {
    std::ofstream yaml(config());
    yaml << "sources:\n  - uri: " << clip().string() << "\n    loop: " << (loop ? "true" : "false")
         << "\nmux:\n  width: 64\n  height: 48\nmodel:\n  path: " << (dir_ / "demo.onnx").string()
         << "\ntask:\n  classes: [" << runtime::kDemoSubjectClass
         << "]\n  blur_kernel: 5\n  refine_mask: false\nsinks:\n  null: true\n";
  }

  // Runs `fovea sweep CONFIG --device cpu --out OUT ARGS...`; the exit code, the output in output_.
  int sweep(const std::vector<std::string>& args) {
    std::vector<std::string> all{"sweep", config().string(), "--device", "cpu", "--out", out().string()};
    all.insert(all.end(), args.begin(), args.end());
    const int code = run_cli(FOVEA_CLI_PATH, all, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }

  fs::path dir_;
  std::string output_;
};

TEST_F(CliSweep, RunsEachValueIntoItsFolderAndNamesTheFastest) {
  ASSERT_EQ(sweep({"--param", "mux.batch_size=1,2", "--csv"}), 0) << output_;
  for (const std::string label : {"mux.batch_size=1", "mux.batch_size=2"}) {
    EXPECT_TRUE(fs::is_regular_file(out() / label / "report.json")) << label;
    EXPECT_TRUE(fs::is_regular_file(out() / label / "trace.json")) << label;
    EXPECT_TRUE(fs::is_regular_file(out() / label / "stats.json")) << label;
    EXPECT_TRUE(fs::is_regular_file(out() / label / "nvtx_sum.csv")) << label;
    // The trace is labelled as the sweep labels it, for `fovea report DIR/*`.
    EXPECT_EQ(read_json(out() / label / "report.json").value("label", ""), label);
    EXPECT_NE(output_.find("] " + label + ": "), std::string::npos) << output_;
  }
  EXPECT_TRUE(fs::is_regular_file(out() / "report.html"));
  EXPECT_TRUE(fs::is_regular_file(out() / "nvtx_gpu_proj_sum_runs.csv"));

  const nlohmann::json sweep = read_json(out() / "sweep.json");
  ASSERT_FALSE(sweep.is_discarded());
  ASSERT_EQ(sweep["runs"].size(), 2u);
  double best_fps = -1;
  std::string best;
  for (const nlohmann::json& run : sweep["runs"]) {
    EXPECT_EQ(run["status"], "ok");
    EXPECT_EQ(run["frames"], kFrames);
    EXPECT_GT(run["fps"].get<double>(), 0);
    EXPECT_TRUE(run["bottleneck"].is_object());
    if (run["fps"].get<double>() > best_fps) {
      best_fps = run["fps"].get<double>();
      best = run["label"].get<std::string>();
    }
  }
  EXPECT_EQ(sweep["runs"][1]["values"]["mux.batch_size"], "2");
  ASSERT_TRUE(sweep["fastest"].is_object());
  EXPECT_EQ(sweep["fastest"]["label"], best);
  EXPECT_NE(output_.find("fastest: " + best + " ("), std::string::npos) << output_;
  EXPECT_NE(output_.find("its bottleneck: "), std::string::npos) << output_;
  EXPECT_NE(output_.find("nvtx_gpu_proj_sum_runs"), std::string::npos) << output_;
}

// On the CPU (no GPU data) the page names each run's bottleneck as the terminal does, from the
// same figures, and its chart is not empty.
TEST_F(CliSweep, HtmlNamesTheTerminalsBottlenecksOnTheCpu) {
  ASSERT_EQ(sweep({"--param", "mux.batch_size=1,2"}), 0) << output_;
  const std::string html = read_text(out() / "report.html");
  EXPECT_NE(html.find("<rect"), std::string::npos) << html;
  for (const std::string label : {"mux.batch_size=1", "mux.batch_size=2"}) {
    const std::string prefix = "bottleneck of " + label + ": ";
    const std::size_t at = output_.find(prefix);
    ASSERT_NE(at, std::string::npos) << output_;
    const std::string said = output_.substr(at + prefix.size(), output_.find('\n', at) - at - prefix.size());
    EXPECT_NE(said.find("CPU per instance"), std::string::npos) << said;
    EXPECT_NE(html.find("Bottleneck of " + label + ": " + said), std::string::npos) << said << "\n" << html;
  }
}

TEST_F(CliSweep, RunsTheCartesianProductInOrderWithSafeFolderNames) {
  ASSERT_EQ(sweep({"--param", "mux.batch_size=1,2", "--param", "model.mean=[0,0,0],[0.1,0,0]"}), 0)
      << output_;
  const nlohmann::json sweep = read_json(out() / "sweep.json");
  ASSERT_EQ(sweep["runs"].size(), 4u);
  const std::vector<std::string> labels = {
      "mux.batch_size=1,model.mean=[0,0,0]", "mux.batch_size=1,model.mean=[0.1,0,0]",
      "mux.batch_size=2,model.mean=[0,0,0]", "mux.batch_size=2,model.mean=[0.1,0,0]"};
  for (std::size_t i = 0; i < labels.size(); ++i) {
    EXPECT_EQ(sweep["runs"][i]["label"], labels[i]);
    EXPECT_EQ(sweep["runs"][i]["status"], "ok");
  }
  // Brackets are not kept in folder names.
  EXPECT_EQ(sweep["runs"][0]["folder"], "mux.batch_size=1,model.mean=_0,0,0_");
  EXPECT_TRUE(fs::is_regular_file(out() / "mux.batch_size=1,model.mean=_0,0,0_" / "report.json"));
}

TEST_F(CliSweep, KeysJoinedByPlusTakeEachValueTogether) {
  ASSERT_EQ(sweep({"--param", "mux.batch_size+task.blur_kernel=3,5"}), 0) << output_;
  const nlohmann::json first = read_json(out() / "sweep.json");
  ASSERT_EQ(first["runs"].size(), 2u);  // not the 4 of a cartesian product
  EXPECT_EQ(first["runs"][0]["label"], "mux.batch_size+task.blur_kernel=3");
  EXPECT_EQ(first["runs"][1]["label"], "mux.batch_size+task.blur_kernel=5");
  EXPECT_TRUE(fs::is_regular_file(out() / "mux.batch_size+task.blur_kernel=5" / "report.json"));
  // Each value is checked against every key: 4 suits mux.batch_size, not an odd blur kernel.
  EXPECT_EQ(sweep({"--param", "mux.batch_size+task.blur_kernel=3,4"}), 2) << output_;
  EXPECT_NE(output_.find("task.blur_kernel"), std::string::npos) << output_;
}

TEST_F(CliSweep, AFailingRunIsReportedAndTheOthersRun) {
  const std::string missing = (dir_ / "missing.mp4").string();
  ASSERT_EQ(sweep({"--param", "sources.0.uri=" + missing + "," + clip().string()}), 3) << output_;
  const nlohmann::json sweep = read_json(out() / "sweep.json");
  ASSERT_EQ(sweep["runs"].size(), 2u);
  EXPECT_EQ(sweep["runs"][0]["status"], "failed");
  EXPECT_EQ(sweep["runs"][1]["status"], "ok");
  EXPECT_EQ(sweep["fastest"]["label"], "sources.0.uri=" + clip().string());
  // Slashes in a value become underscores in the folder name.
  const std::string folder = sweep["runs"][1]["folder"];
  EXPECT_EQ(folder.find('/'), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(out() / folder / "report.json")) << folder;
  EXPECT_NE(output_.find("missing.mp4"), std::string::npos) << output_;
}

TEST_F(CliSweep, BadParamsStopTheSweepBeforeAnythingRuns) {
  struct Case {
    std::string param;
    std::string named;  // what the message must name
  };
  const std::vector<Case> cases = {
      {"mux.batch_size", "mux.batch_size"},         // no '='
      {"mux.batch_size=", "mux.batch_size"},        // no values
      {"mux.batch_size=1,,2", "mux.batch_size"},    // an empty value
      {"mux.batchsize=1,2", "mux.batchsize"},       // unknown key
      {"mux.batch_size=1,four", "mux.batch_size"},  // wrong type
      {"mux.batch_size=1,0", "mux.batch_size"},     // out of range
      {"mux.batch_size=1,1", "mux.batch_size"},     // listed twice
      {"model.mean=[0,0", "model.mean"},            // unbalanced bracket
  };
  for (const Case& c : cases) {
    EXPECT_EQ(sweep({"--param", c.param}), 2) << c.param << "\n" << output_;
    EXPECT_NE(output_.find(c.named), std::string::npos) << c.param << "\n" << output_;
    EXPECT_FALSE(fs::exists(out())) << c.param << ": something ran";
  }
  // One key in two --param options, alone or joined with another, or twice in one.
  const std::vector<std::vector<std::string>> twice = {
      {"--param", "mux.batch_size=1,2", "--param", "mux.batch_size=4"},
      {"--param", "mux.batch_size+task.blur_kernel=3,5", "--param", "task.blur_kernel=7"},
      {"--param", "mux.batch_size+mux.batch_size=1,2"}};
  for (const auto& args : twice) {
    EXPECT_EQ(sweep(args), 2) << args[1] << "\n" << output_;
    EXPECT_NE(output_.find("given twice"), std::string::npos) << output_;
    EXPECT_FALSE(fs::exists(out()));
  }
  // An empty key among joined ones.
  EXPECT_EQ(sweep({"--param", "mux.batch_size+=1,2"}), 2) << output_;
  EXPECT_NE(output_.find("an empty key"), std::string::npos) << output_;
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(CliSweep, CtrlCFinalizesTheCurrentRunAndSkipsTheRest) {
  write_config(/*loop=*/true);  // the first run never ends on its own
  const pid_t pid = start_cli(FOVEA_CLI_PATH,
                              {"sweep", config().string(), "--device", "cpu", "--out", out().string(),
                               "--param", "mux.batch_size=1,2"},
                              dir_ / "log.txt");
  ASSERT_GT(pid, 0);
  // The trace session creates the run's folder when the run starts; give it a few batches.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(out() / "mux.batch_size=1") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(out() / "mux.batch_size=1")) << read_text(dir_ / "log.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130) << read_text(dir_ / "log.txt");

  const nlohmann::json sweep = read_json(out() / "sweep.json");
  ASSERT_EQ(sweep["runs"].size(), 2u);
  EXPECT_EQ(sweep["runs"][0]["status"], "interrupted");
  EXPECT_EQ(sweep["runs"][1]["status"], "not run");
  EXPECT_TRUE(fs::is_regular_file(out() / "mux.batch_size=1" / "report.json"));
  EXPECT_FALSE(fs::exists(out() / "mux.batch_size=2"));
}

}  // namespace
}  // namespace fovea::testing
