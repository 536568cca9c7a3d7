// A model over 2 GiB: its weights must be external data, which the loader reads next to it.
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

TEST(LargeModel, LoadsAndRunsWeightsOver2GiBFromExternalData) {
  constexpr std::int64_t kElements = (std::int64_t{9} << 30) / 16;  // 2.25 GiB of float32
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / "large_model";
  std::filesystem::create_directories(dir);
  {
    // Element i holds float(i % 1000003), written in 16 MiB chunks.
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    std::vector<float> chunk(std::size_t{4} << 20);
    for (std::int64_t start = 0; start < kElements; start += static_cast<std::int64_t>(chunk.size())) {
      const std::int64_t n =
          std::min<std::int64_t>(static_cast<std::int64_t>(chunk.size()), kElements - start);
      for (std::int64_t i = 0; i < n; ++i)
        chunk[static_cast<std::size_t>(i)] = static_cast<float>((start + i) % 1000003);
      data.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(n * 4));
    }
    ASSERT_TRUE(data.good());
  }
  ModelBuilder m;
  m.input("indices", DataType::kInt64, {3}).output("y", DataType::kFloat32, {3});
  m.external_initializer("table", DataType::kFloat32, {kElements}, "weights.bin", 0);
  m.node("Gather", {"table", "indices"}, {"y"});
  auto model = load_onnx(m.write(dir / "model.onnx"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Tensor indices =
      Tensor::from_vector<std::int64_t>(DataType::kInt64, {3}, {0, 1000004, kElements - 1});
  CpuExecutor executor(plan_for(model->graph, {indices}));
  auto out = executor.run({indices});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].data<float>()[0], 0.0f);
  EXPECT_EQ((*out)[0].data<float>()[1], 1.0f);
  EXPECT_EQ((*out)[0].data<float>()[2], static_cast<float>((kElements - 1) % 1000003));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fovea::runtime::testing
