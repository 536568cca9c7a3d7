// fovea model run/info/bench on CUDA through the real binary, which runs them on InferenceSession:
// the same outputs as the CPU, the engine cache written once and then loaded, and no allocation
// while bench times the runs.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/cuda_raii.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/demo_model.h"
#include "runtime/npy.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;
using runtime::testing::Accuracy;
using runtime::testing::outputs_within;
using runtime::testing::random_tensor;

class ModelCliGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    dir_ = test_temp_dir();
    ASSERT_TRUE(runtime::write_demo_segmentation_model(model()).is_ok());
    ASSERT_TRUE(
        runtime::write_npy(input(), random_tensor(DataType::kFloat32, {2, 3, 48, 64}, 1, 0.0, 1.0)).is_ok());
  }

  int fovea(const std::vector<std::string>& args) {
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }
  const std::string& output() const { return output_; }
  fs::path model() const { return dir_ / "demo.onnx"; }
  fs::path input() const { return dir_ / "in.npy"; }

  // `model run` on `device` (and more flags) into its own folder; the output tensor.
  runtime::Tensor run(const std::string& device, const std::vector<std::string>& flags = {}) {
    const fs::path out = dir_ / ("out-" + device + std::to_string(runs_++));
    std::vector<std::string> args{
        "model",        "run",        model().string(), "--input", "input=" + input().string(),
        "--output-dir", out.string(), "--device",       device};
    args.insert(args.end(), flags.begin(), flags.end());
    EXPECT_EQ(fovea(args), 0) << output();
    auto tensor = runtime::read_npy(out / "out.npy");
    EXPECT_TRUE(tensor.is_ok()) << tensor.status().to_string();
    return tensor.is_ok() ? *tensor : runtime::Tensor{};
  }

 private:
  fs::path dir_;
  std::string output_;
  int runs_ = 0;
};

TEST_F(ModelCliGpu, RunOnCudaGivesWhatTheCpuGives) {
  const runtime::Tensor cpu = run("cpu");
  const runtime::Tensor fp32 = run("cuda", {"--repeat", "3"});
  EXPECT_NE(output().find("on CUDA in fp32"), std::string::npos) << output();
  EXPECT_TRUE(outputs_within(
      fp32, cpu, runtime::testing::cuda_tolerance(runtime::Precision::kFloat32, Accuracy::kAccumulating)));
  const runtime::Tensor fp16 = run("cuda", {"--precision", "fp16"});
  EXPECT_TRUE(outputs_within(fp16, cpu, runtime::testing::kModelFloat16Tolerance));
}

TEST_F(ModelCliGpu, TheEngineCacheIsWrittenOnceThenLoaded) {
  const fs::path cache = fs::path(test_temp_dir()) / "engines";
  const runtime::Tensor planned = run("cuda", {"--engine-cache", cache.string()});
  EXPECT_NE(output().find("none yet, planning"), std::string::npos) << output();
  const runtime::Tensor loaded = run("cuda", {"--engine-cache", cache.string()});
  EXPECT_NE(output().find(": loaded"), std::string::npos) << output();
  int engines = 0;
  for (const auto& entry : fs::directory_iterator(cache))
    engines += entry.path().extension() == ".fovea-engine";
  EXPECT_EQ(engines, 1);
  EXPECT_TRUE(outputs_within(loaded, planned, {}));
}

TEST_F(ModelCliGpu, BenchAllocatesNothingWhileItTimesTheRuns) {
  ASSERT_EQ(fovea({"model", "bench", model().string(), "--shape", "input=1x3x48x64", "--batch", "1,4",
                   "--warmup", "2", "--iterations", "5", "--json", "-q"}),
            0)
      << output();
  const nlohmann::json report = nlohmann::json::parse(output().substr(output().find('[')));
  ASSERT_EQ(report.size(), 2u) << output();
  for (const nlohmann::json& point : report) {
    EXPECT_EQ(point["allocations_during_runs"], 0) << point.dump();
    EXPECT_TRUE(point["cuda_graph"].get<bool>()) << point.dump();
    EXPECT_GT(point["items_per_second"].get<double>(), 0) << point.dump();
  }
}

TEST_F(ModelCliGpu, InfoGivesTheCudaPlansMemory) {
  ASSERT_EQ(fovea({"model", "info", model().string(), "--shape", "input=1x3x48x64", "--device", "cuda",
                   "--json", "-q"}),
            0)
      << output();
  const nlohmann::json report = nlohmann::json::parse(output().substr(output().find('{')));
  EXPECT_GT(report["cuda"]["total_bytes"].get<std::size_t>(), 0u) << report.dump();
  EXPECT_GT(report["cuda"]["weights_bytes"].get<std::size_t>(), 0u) << report.dump();
}

}  // namespace
}  // namespace fovea::testing
