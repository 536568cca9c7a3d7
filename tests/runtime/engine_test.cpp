// Engines: a planned graph saved and loaded again runs exactly like the plan it came from, and an
// engine for another model, shape, precision or device is refused as stale, naming the field.
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/cpu_executor.h"
#include "runtime/engine.h"
#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

Graph small_net() {
  ModelBuilder m;
  return load_graph(conv_chain(m));
}

EngineKey key_for(Precision precision, bool channels_last, std::int64_t batch) {
  return EngineKey{.model_digest = "0123456789abcdef",
                   .input_shapes = {{"x", {batch, 4, 9, 11}}},
                   .options = {.precision = precision, .channels_last = channels_last},
                   .device = "cpu"};
}

std::filesystem::path engine_dir(const std::string& name) {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(Engine, SavedPlansLoadAndRunTheSame) {
  const Graph graph = small_net();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 4, 9, 11}, 4);
  for (auto [precision, channels_last] :
       {std::pair{Precision::kFloat32, false}, std::pair{Precision::kFloat16, true}}) {
    const EngineKey key = key_for(precision, channels_last, 2);
    auto plan = plan_graph(graph, key.input_shapes, key.options);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    const auto path = engine_path(engine_dir("engine_roundtrip"), "models/net.onnx", key);
    EXPECT_NE(path.filename().string().find(channels_last ? "net.fp16.nhwc.x-2x4x9x11.cpu"
                                                          : "net.fp32.x-2x4x9x11.cpu"),
              std::string::npos)
        << path;
    ASSERT_TRUE(save_engine(*plan, key, path).is_ok());
    auto loaded = load_engine(path, key);
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
    EXPECT_EQ(loaded->graph.nodes.size(), plan->graph.nodes.size());
    EXPECT_EQ(loaded->memory.arena_bytes, plan->memory.arena_bytes);
    auto expected = CpuExecutor(std::move(plan).value()).run({x});
    auto actual = CpuExecutor(std::move(loaded).value()).run({x});
    ASSERT_TRUE(expected.is_ok() && actual.is_ok());
    EXPECT_TRUE(tensors_near((*actual)[0], (*expected)[0], 0, 0)) << precision_name(precision);
  }
}

TEST(Engine, AStaleEngineIsRefusedNamingWhatChanged) {
  const Graph graph = small_net();
  const EngineKey key = key_for(Precision::kFloat32, false, 2);
  auto plan = plan_graph(graph, key.input_shapes, key.options);
  ASSERT_TRUE(plan.is_ok());
  const auto path = engine_dir("engine_stale") / "net.fovea-engine";
  ASSERT_TRUE(save_engine(*plan, key, path).is_ok());

  EngineKey other_model = key;
  other_model.model_digest = "fedcba9876543210";
  EngineKey other_device = key;
  other_device.device = "NVIDIA H200 sm90";
  EngineKey other_interface = key;
  other_interface.options.float16_interface = true;
  for (const auto& [changed, field] :
       {std::pair{other_model, "model_digest"}, std::pair{other_device, "device"},
        std::pair{other_interface, "float16_interface"}}) {
    auto loaded = load_engine(path, changed);
    ASSERT_FALSE(loaded.is_ok());
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(loaded.status().message().find(std::string("stale, its ") + field), std::string::npos)
        << loaded.status().to_string();
  }
  EXPECT_EQ(load_engine(path.parent_path() / "absent.fovea-engine", key).status().code(),
            StatusCode::kNotFound);
  std::ofstream(path, std::ios::trunc) << "not an engine";
  EXPECT_EQ(load_engine(path, key).status().code(), StatusCode::kCorruptData);
}

TEST(Engine, TheCachePlansOnceAndReplansAStaleEngine) {
  const Graph graph = small_net();
  const auto dir = engine_dir("engine_cache");
  const EngineKey key = key_for(Precision::kFloat32, false, 2);
  ASSERT_TRUE(plan_with_engine_cache(graph, "net.onnx", dir, key).is_ok());
  const auto path = engine_path(dir, "net.onnx", key);
  ASSERT_TRUE(std::filesystem::exists(path));
  // Same key: loaded. Another digest for the same file name: stale, planned and rewritten.
  ASSERT_TRUE(load_engine(path, key).is_ok());
  EngineKey changed = key;
  changed.model_digest = "1111111111111111";
  ASSERT_TRUE(plan_with_engine_cache(graph, "net.onnx", dir, changed).is_ok());
  EXPECT_TRUE(load_engine(path, changed).is_ok());
  EXPECT_FALSE(load_engine(path, key).is_ok());
}

}  // namespace
}  // namespace fovea::runtime::testing
