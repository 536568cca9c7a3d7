// fovea model run on the CPU through the real binary: outputs whose names map to the same file
// name ("a/b" and "a_b") are both kept, the later one under its output index, and the printed
// mapping says where each went.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/model_builder.h"
#include "runtime/npy.h"
#include "runtime/op_test_util.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;
using runtime::testing::ModelBuilder;
using runtime::testing::random_tensor;

TEST(ModelCli, OutputsWhoseFileNamesClashAreAllKept) {
  const fs::path dir = test_temp_dir();
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 4}).output("a/b", DataType::kFloat32, {1, 4});
  m.output("a_b", DataType::kFloat32, {1, 4}).output("a_b.1", DataType::kFloat32, {1, 4});
  m.node("Relu", {"x"}, {"a/b"});
  m.node("Neg", {"x"}, {"a_b"});
  m.node("Abs", {"x"}, {"a_b.1"});
  const fs::path model = m.write(dir / "clash.onnx");
  const runtime::Tensor x = random_tensor(DataType::kFloat32, {1, 4}, 3, -1.0, 1.0);
  ASSERT_TRUE(runtime::write_npy(dir / "x.npy", x).is_ok());
  const fs::path out = dir / "out";
  ASSERT_EQ(run_cli(FOVEA_CLI_PATH,
                    {"model", "run", model.string(), "--input", "x=" + (dir / "x.npy").string(),
                     "--output-dir", out.string()},
                    dir / "log.txt"),
            0)
      << read_text(dir / "log.txt");
  const std::string log = read_text(dir / "log.txt");
  EXPECT_NE(log.find("a/b: float32 [1, 4] -> " + (out / "a_b.npy").string()), std::string::npos) << log;
  EXPECT_NE(log.find("a_b: float32 [1, 4] -> " + (out / "a_b.1.npy").string()), std::string::npos) << log;
  EXPECT_NE(log.find("a_b.1: float32 [1, 4] -> " + (out / "a_b.1.2.npy").string()), std::string::npos) << log;
  const auto first = [&](const fs::path& file) {
    Result<runtime::Tensor> read = runtime::read_npy(file);
    EXPECT_TRUE(read.is_ok()) << file << ": " << read.status().to_string();
    return read.is_ok() ? read->data<float>()[0] : 0.0f;
  };
  const float x0 = x.data<float>()[0];
  EXPECT_EQ(first(out / "a_b.npy"), x0 > 0 ? x0 : 0.0f);
  EXPECT_EQ(first(out / "a_b.1.npy"), -x0);
  EXPECT_EQ(first(out / "a_b.1.2.npy"), x0 < 0 ? -x0 : x0);
}

}  // namespace
}  // namespace fovea::testing
