// InferenceSession on the CPU: a session runs exactly like the plan and executor it wraps, tells
// the caller its inputs and outputs, keeps its engines in the cache it is given, and refuses bad
// requests naming the model and what is wrong. Its CUDA side: cuda/session_cuda_test.cpp.
#include "runtime/session.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/cpu_executor.h"
#include "runtime/engine.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"
#include "runtime/op_test_util.h"
#include "support/test_media.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// x [N, 3, 11, 9] -> conv + relu -> global pool -> flatten -> gemm -> y [N, 5]; the batch is
// symbolic, as in exported models. `seed` changes the weights (another model in the same file).
std::filesystem::path write_classifier(const std::filesystem::path& path, std::uint32_t seed = 1) {
  ModelBuilder m(17);
  m.input("x", kF32, {-1, 3, 11, 9}).output("y", kF32, {-1, 5});
  m.initializer("w", random_tensor(kF32, {4, 3, 3, 3}, seed));
  m.initializer("b", random_tensor(kF32, {4}, seed + 1));
  m.initializer("fc_w", random_tensor(kF32, {5, 4}, seed + 2));
  m.initializer("fc_b", random_tensor(kF32, {5}, seed + 3));
  m.attr(m.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("GlobalAveragePool", {"r"}, {"p"}, "pool");
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.attr(m.node("Gemm", {"f", "fc_w", "fc_b"}, {"y"}, "fc"), "transB", std::int64_t{1});
  return m.write(path);
}

Graph load(const std::filesystem::path& path) {
  auto model = load_onnx(path);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model->graph;
}

std::unique_ptr<InferenceSession> session_or_fail(Result<std::unique_ptr<InferenceSession>> session) {
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  return session.is_ok() ? std::move(session).value() : nullptr;
}

std::vector<Tensor> run(InferenceSession& session, const std::vector<Tensor>& inputs) {
  auto out = session.run_host(nullptr, inputs);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? std::move(out).value() : std::vector<Tensor>{};
}

TEST(InferenceSession, RunsLikeThePlanAndExecutorItWraps) {
  const auto path = write_classifier(fresh_dir("session_cpu") / "classifier.onnx");
  const Graph graph = load(path);
  const InputShapes shapes = {{"x", {3, 3, 11, 9}}};
  auto session = session_or_fail(InferenceSession::open(path, shapes));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->device(), Device::kCpu);
  EXPECT_EQ(session->device_description(), "cpu");
  EXPECT_EQ(session->model_path(), path.string());
  ASSERT_EQ(session->input_count(), 1);
  ASSERT_EQ(session->output_count(), 1);
  EXPECT_EQ(session->input_spec(0).name, "x");
  EXPECT_EQ(session->input_spec(0).dtype, kF32);
  EXPECT_EQ(session->input_spec(0).shape, (Shape{3, 3, 11, 9}));
  EXPECT_EQ(session->output_spec(0).name, "y");
  EXPECT_EQ(session->output_spec(0).shape, (Shape{3, 5}));
  EXPECT_FALSE(session->output_spec(0).rows_vary);
  // A CPU session holds no device memory and never a CUDA graph.
  EXPECT_EQ(session->device_memory().total(), 0u);
  EXPECT_EQ(session->device_allocations(), 0);
  EXPECT_FALSE(session->uses_cuda_graph());

  const Tensor x = random_tensor(kF32, {3, 3, 11, 9}, 7);
  auto expected = CpuExecutor(plan_graph(graph, shapes).value()).run({x});
  ASSERT_TRUE(expected.is_ok());
  const std::vector<Tensor> got = run(*session, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(tensors_near(got[0], (*expected)[0], 0, 0));
  // A borrowed input (a pipeline slot's tensor) runs without a copy and gives the same.
  Tensor slot = x.clone();
  const std::vector<Tensor> borrowed = run(*session, {Tensor::borrow(kF32, x.shape(), slot.raw())});
  ASSERT_EQ(borrowed.size(), 1u);
  EXPECT_TRUE(tensors_near(borrowed[0], (*expected)[0], 0, 0));
}

TEST(InferenceSession, SeveralModelsAtTheirOwnBatchSizesLiveSideBySide) {
  const auto dir = fresh_dir("session_two_models");
  const auto detector = write_classifier(dir / "detector.onnx", 1);
  const auto classifier = write_classifier(dir / "classifier.onnx", 11);
  auto first = session_or_fail(InferenceSession::open(detector, {{"x", {16, 3, 11, 9}}}));
  auto second = session_or_fail(InferenceSession::open(classifier, {{"x", {32, 3, 11, 9}}}));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->output_spec(0).shape, (Shape{16, 5}));
  EXPECT_EQ(second->output_spec(0).shape, (Shape{32, 5}));
  const Tensor x16 = random_tensor(kF32, {16, 3, 11, 9}, 3);
  const std::vector<Tensor> before = run(*first, {x16});
  const std::vector<Tensor> other = run(*second, {random_tensor(kF32, {32, 3, 11, 9}, 4)});
  const std::vector<Tensor> after = run(*first, {x16});
  ASSERT_TRUE(before.size() == 1 && other.size() == 1 && after.size() == 1);
  EXPECT_EQ(other[0].shape(), (Shape{32, 5}));
  // Each session owns its plan and arena: one running leaves the other's results as they were.
  EXPECT_TRUE(tensors_near(after[0], before[0], 0, 0));
}

TEST(InferenceSession, PlansWithTheOptionsItIsGiven) {
  const Graph graph = load(write_classifier(fresh_dir("session_options") / "classifier.onnx"));
  auto half = session_or_fail(InferenceSession::create(
      graph, {{"x", {2, 3, 11, 9}}}, {.precision = Precision::kFloat16, .float16_interface = true}));
  ASSERT_NE(half, nullptr);
  EXPECT_EQ(half->plan().options.precision, Precision::kFloat16);
  // NHWC convolutions are for the GPU's tensor cores; a CPU plan keeps NCHW.
  EXPECT_FALSE(half->plan().options.channels_last);
  EXPECT_EQ(half->input_spec(0).dtype, DataType::kFloat16);
  EXPECT_EQ(half->output_spec(0).dtype, DataType::kFloat16);
  const std::vector<Tensor> out = run(*half, {random_tensor(DataType::kFloat16, {2, 3, 11, 9}, 5)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
}

TEST(InferenceSession, FindsInputsAndOutputsByNameAndNamesTheOthersWhenNot) {
  auto session = session_or_fail(InferenceSession::open(
      write_classifier(fresh_dir("session_names") / "classifier.onnx"), {{"x", {1, 3, 11, 9}}}));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->input_index("x").value(), 0);
  EXPECT_EQ(session->output_index("y").value(), 0);
  auto missing = session->output_index("scores");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("classifier.onnx: no output 'scores' (its outputs: y)"),
            std::string::npos)
      << missing.status().to_string();
}

TEST(InferenceSession, RefusesBadShapesNamingTheInput) {
  const Graph graph = load(write_classifier(fresh_dir("session_shapes") / "classifier.onnx"));
  auto misspelt = InferenceSession::create(graph, {{"images", {1, 3, 11, 9}}});
  ASSERT_FALSE(misspelt.is_ok());
  EXPECT_NE(misspelt.status().message().find("'images' is not an input of the model (its inputs: x)"),
            std::string::npos)
      << misspelt.status().to_string();
  auto missing = InferenceSession::create(graph, {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("no shape given for input 'x'"), std::string::npos)
      << missing.status().to_string();
  auto contradicting = InferenceSession::create(graph, {{"x", {1, 3, 12, 9}}});
  ASSERT_FALSE(contradicting.is_ok());
  EXPECT_NE(contradicting.status().message().find("classifier.onnx: input 'x'"), std::string::npos)
      << contradicting.status().to_string();
  auto wrong_inputs = session_or_fail(InferenceSession::create(graph, {{"x", {2, 3, 11, 9}}}));
  ASSERT_NE(wrong_inputs, nullptr);
  auto ran = wrong_inputs->run_host(nullptr, {random_tensor(kF32, {1, 3, 11, 9}, 1)});
  ASSERT_FALSE(ran.is_ok());
  EXPECT_NE(ran.status().message().find("input 'x'"), std::string::npos) << ran.status().to_string();
}

TEST(InferenceSession, AMissingOrDamagedModelIsAnErrorNamingTheFile) {
  const auto dir = fresh_dir("session_bad_model");
  auto missing = InferenceSession::open(dir / "absent.onnx", {{"x", {1, 3, 11, 9}}});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("absent.onnx"), std::string::npos)
      << missing.status().to_string();
  const auto damaged = dir / "damaged.onnx";
  std::ofstream(damaged, std::ios::binary) << "not a model";
  auto parsed = InferenceSession::open(damaged, {{"x", {1, 3, 11, 9}}});
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("damaged.onnx"), std::string::npos) << parsed.status().to_string();
}

TEST(InferenceSession, ACudaSessionWithoutAGpuSaysSoBeforePlanning) {
#if defined(FOVEA_HAVE_CUDA)
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present (cuda/session_cuda_test.cpp)";
#endif
  const auto dir = fresh_dir("session_no_gpu");
  const Graph graph = load(write_classifier(dir / "classifier.onnx"));
  auto session = InferenceSession::create(graph, {{"x", {1, 3, 11, 9}}},
                                          {.device = Device::kCuda, .engine_cache = dir / "engines"});
  ASSERT_FALSE(session.is_ok());
  EXPECT_NE(session.status().message().find("classifier.onnx: device cuda: "), std::string::npos)
      << session.status().to_string();
  EXPECT_FALSE(std::filesystem::exists(dir / "engines")) << "no engine is planned for a missing GPU";
}

TEST(InferenceSession, KeepsItsEngineInTheCacheAndReplansWhenTheModelChanges) {
  const auto dir = fresh_dir("session_engine_cache");
  const auto path = write_classifier(dir / "classifier.onnx", 1);
  const auto cache = dir / "engines";
  const InputShapes shapes = {{"x", {2, 3, 11, 9}}};
  const SessionOptions options{.engine_cache = cache};
  const Tensor x = random_tensor(kF32, {2, 3, 11, 9}, 9);

  auto planned = session_or_fail(InferenceSession::open(path, shapes, options));
  ASSERT_NE(planned, nullptr);
  const EngineKey key{.model_digest = file_digest(path).value(),
                      .input_shapes = shapes,
                      .options = planned->plan().options,
                      .device = "cpu"};
  const auto engine = engine_path(cache, path, key);
  ASSERT_TRUE(std::filesystem::exists(engine)) << engine;
  EXPECT_NE(engine.filename().string().find("classifier.fp32.x-2x3x11x9.cpu.fovea-engine"), std::string::npos)
      << engine;
  const auto written = std::filesystem::last_write_time(engine);

  // The second session loads the engine (the file is not rewritten) and runs the same.
  auto loaded = session_or_fail(InferenceSession::open(path, shapes, options));
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(std::filesystem::last_write_time(engine), written);
  EXPECT_TRUE(tensors_near(run(*loaded, {x})[0], run(*planned, {x})[0], 0, 0));

  // Other weights in the same file: the engine is stale, planned again and rewritten, and the new
  // session runs the new weights.
  write_classifier(path, 21);
  auto replanned = session_or_fail(InferenceSession::open(path, shapes, options));
  ASSERT_NE(replanned, nullptr);
  EngineKey changed = key;
  changed.model_digest = file_digest(path).value();
  EXPECT_TRUE(load_engine(engine, changed).is_ok());
  auto fresh = session_or_fail(InferenceSession::open(path, shapes));
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(tensors_near(run(*replanned, {x})[0], run(*fresh, {x})[0], 0, 0));
}

TEST(InferenceSession, AnEngineCacheNeedsTheModelFile) {
  ModelBuilder m(17);
  m.input("x", kF32, {2}).output("y", kF32, {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  auto model = parse_onnx(m.serialize(), "in-memory.onnx", ".");
  ASSERT_TRUE(model.is_ok());
  auto session = InferenceSession::create(model->graph, {{"x", {2}}},
                                          {.engine_cache = fresh_dir("session_memory_model")});
  ASSERT_FALSE(session.is_ok());
  EXPECT_NE(session.status().message().find("engines are keyed by the model file"), std::string::npos)
      << session.status().to_string();
}

// A graph ending in NonMaxSuppression: the selection's rows are the data's, so the CPU session
// gives no planned shape for it and each run returns its true one.
TEST(InferenceSession, ADataDependentOutputHasNoPlannedShapeOnTheCpu) {
  ModelBuilder m(17);
  m.input("boxes", kF32, {1, 8, 4}).input("scores", kF32, {1, 2, 8});
  m.initializer("max", int64_tensor({1}, {3})).initializer("iou", float_tensor({1}, {0.5f}));
  m.node("NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {"selected"}, "nms");
  m.output("selected", DataType::kInt64, {-1, 3});
  auto model = parse_onnx(m.serialize(), "nms.onnx", ".");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto session =
      session_or_fail(InferenceSession::create(model->graph, {{"boxes", {1, 8, 4}}, {"scores", {1, 2, 8}}}));
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->output_spec(0).rows_vary);
  EXPECT_FALSE(session->output_spec(0).shape.has_value());
  const std::vector<Tensor> out = run(
      *session, {random_tensor(kF32, {1, 8, 4}, 1, 0.0, 1.0), random_tensor(kF32, {1, 2, 8}, 2, 0.0, 1.0)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rank(), 2);
  EXPECT_EQ(out[0].dim(1), 3);
  EXPECT_LE(out[0].dim(0), 6);  // 2 classes x 3 per class at most
}

TEST(InferenceSession, ParsesDevicesAndPrecisionsAndNamesTheChoices) {
  EXPECT_EQ(parse_device("cuda").value(), Device::kCuda);
  EXPECT_EQ(parse_device("cpu").value(), Device::kCpu);
  EXPECT_EQ(parse_precision("fp16").value(), Precision::kFloat16);
  EXPECT_EQ(parse_precision("fp32").value(), Precision::kFloat32);
  EXPECT_EQ(parse_device("gpu").status().message(), "device 'gpu': use cpu or cuda");
  EXPECT_EQ(parse_precision("int8").value(), Precision::kInt8);
  EXPECT_EQ(parse_precision("bf16").status().message(), "precision 'bf16': use fp32, fp16 or int8");
  EXPECT_EQ(device_name(Device::kCuda), "cuda");
}

// int8 on a GPU: Xavier (7.2), Turing (7.5) and every later GPU have INT8 tensor cores; Volta
// (7.0) and Pascal (6.x) are refused naming the GPU, its capability and the way out.
TEST(InferenceSession, Int8NeedsInt8TensorCores) {
  for (const auto& [major, minor] : {std::pair{7, 2}, std::pair{7, 5}, std::pair{8, 0}, std::pair{9, 0},
                                     std::pair{10, 0}, std::pair{12, 0}}) {
    EXPECT_TRUE(check_int8_tensor_cores("gpu", major, minor).is_ok()) << major << "." << minor;
  }
  for (const auto& [major, minor] : {std::pair{7, 0}, std::pair{6, 1}, std::pair{5, 2}}) {
    const Status refused = check_int8_tensor_cores("Tesla V100", major, minor);
    ASSERT_FALSE(refused.is_ok());
    EXPECT_EQ(refused.code(), StatusCode::kUnsupported);
    EXPECT_NE(refused.message().find("Tesla V100 is " + std::to_string(major) + "." + std::to_string(minor)),
              std::string::npos)
        << refused.message();
    EXPECT_NE(refused.message().find("use fp16"), std::string::npos);
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
