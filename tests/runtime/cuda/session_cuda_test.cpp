// InferenceSession on CUDA: the same model gives what the CPU session gives, through host tensors and
// through device tensors on the caller's stream; runs only enqueue (no host wait, no allocation);
// several models at their own batch sizes share a stream; engines are cached per GPU.
#include "runtime/session.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/cuda_raii.h"
#include "runtime/cpu_executor.h"
#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/engine.h"
#include "runtime/graph_test_util.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"
#include "runtime/quant/calibrator.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
// How long RunDoesNotWaitForTheStream holds its stream: far longer than enqueueing a run takes.
constexpr auto kHold = std::chrono::milliseconds(500);

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// x [N, 3, 19, 17] -> conv-relu, conv + residual - relu -> global pool -> flatten -> gemm ->
// y [N, 10]: every item is computed on its own, so a partial batch's items can be checked alone.
std::filesystem::path write_classifier(const std::filesystem::path& path, std::uint32_t seed = 1) {
  ModelBuilder m(17);
  m.input("x", kF32, {-1, 3, 19, 17}).output("y", kF32, {-1, 10});
  m.initializer("w1", random_tensor(kF32, {8, 3, 3, 3}, seed, -0.5, 0.5));
  m.initializer("b1", random_tensor(kF32, {8}, seed + 1));
  m.initializer("w2", random_tensor(kF32, {8, 8, 3, 3}, seed + 2, -0.2, 0.2));
  m.initializer("b2", random_tensor(kF32, {8}, seed + 3));
  m.initializer("fc_w", random_tensor(kF32, {10, 8}, seed + 4));
  m.initializer("fc_b", random_tensor(kF32, {10}, seed + 5));
  m.attr(m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  m.attr(m.node("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Add", {"c2", "r1"}, {"sum"}, "residual");
  m.node("Relu", {"sum"}, {"r2"}, "relu2");
  m.node("GlobalAveragePool", {"r2"}, {"pooled"}, "pool");
  m.node("Flatten", {"pooled"}, {"flat"}, "flatten");
  m.attr(m.node("Gemm", {"flat", "fc_w", "fc_b"}, {"y"}, "fc"), "transB", std::int64_t{1});
  return m.write(path);
}

InputShapes at_batch(std::int64_t batch) {
  return {{"x", {batch, 3, 19, 17}}};
}

std::unique_ptr<InferenceSession> open_or_fail(const std::filesystem::path& path, const InputShapes& shapes,
                                               const SessionOptions& options) {
  auto session = InferenceSession::open(path, shapes, options);
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  return session.is_ok() ? std::move(session).value() : nullptr;
}

// The float32 CPU reference for the same model and input.
Tensor cpu_output(const std::filesystem::path& path, const Tensor& x) {
  auto session = InferenceSession::open(path, {{"x", x.shape()}});
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  auto out = (*session)->run_host(nullptr, {x});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return (*out)[0];
}

// Items [first, first + count) of a dense tensor, as an owned copy.
Tensor items(const Tensor& t, std::int64_t first, std::int64_t count) {
  Shape shape = t.shape();
  shape[0] = count;
  const std::size_t item_bytes = t.bytes() / static_cast<std::size_t>(t.dim(0));
  return Tensor::borrow(t.dtype(), shape,
                        static_cast<std::byte*>(const_cast<void*>(t.raw())) + item_bytes * first)
      .clone();
}

Tensor to_half(const Tensor& t) {
  Tensor half = Tensor::allocate(DataType::kFloat16, t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) half.data<Half>()[i] = float_to_half(t.data<float>()[i]);
  return half;
}

Tensor to_float(const Tensor& t) {
  Tensor f = Tensor::allocate(kF32, t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = half_to_float(t.data<Half>()[i]);
  return f;
}

// Uploads `host` to new device memory (synchronously: test setup).
DeviceMemory upload(const Tensor& host) {
  auto memory = DeviceMemory::allocate(host.bytes());
  EXPECT_TRUE(memory.is_ok()) << memory.status().to_string();
  EXPECT_EQ(cudaMemcpy(memory->get(), host.raw(), host.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  // From pageable memory cudaMemcpy may return before its DMA lands, and the sessions' streams are
  // non-blocking (not ordered after the legacy stream): without this wait a session could read the
  // buffer half written (a float16 run read 0.86 where 0.25 was meant, call 72).
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return std::move(memory).value();
}

// Copies the session's output i to the host once `stream` reaches this point.
Tensor download(const InferenceSession& session, int i, cudaStream_t stream) {
  const Tensor& output = session.output(i);
  Tensor host = Tensor::allocate(output.dtype(), output.shape());
  EXPECT_EQ(cudaMemcpyAsync(host.raw(), output.raw(), host.bytes(), cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return host;
}

Tolerance tolerance_for(Precision precision) {
  return precision == Precision::kFloat32 ? cuda_tolerance(precision, Accuracy::kAccumulating)
                                          : kModelFloat16Tolerance;
}

TEST(InferenceSessionCuda, MatchesTheCpuThroughHostTensorsAndOnTheCallersStream) {
  FOVEA_REQUIRE_GPU();
  const auto path = write_classifier(fresh_dir("session_cuda_match") / "classifier.onnx");
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const Tensor x = random_tensor(kF32, {5, 3, 19, 17}, 7);
  const Tensor expected = cpu_output(path, x);
  for (Precision precision : kPrecisions) {
    auto session = open_or_fail(path, at_batch(5), {.device = Device::kCuda, .precision = precision});
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->device_description().rfind("cuda (", 0), 0u) << session->device_description();
    // float16 plans keep convolution chains in NHWC for the tensor cores.
    EXPECT_EQ(session->plan().options.channels_last, precision == Precision::kFloat16);
    EXPECT_EQ(session->input_spec(0).dtype, kF32);  // the interface stays float32 unless asked
    EXPECT_EQ(session->output_spec(0).shape, (Shape{5, 10}));
    auto host = session->run_host(stream->get(), {x});
    ASSERT_TRUE(host.is_ok()) << host.status().to_string();
    EXPECT_TRUE(outputs_within((*host)[0], expected, tolerance_for(precision))) << precision_name(precision);

    const DeviceMemory d_x = upload(x);
    ASSERT_TRUE(session->copy_input(stream->get(), 0, d_x.get(), 5).is_ok());
    ASSERT_TRUE(session->run(stream->get()).is_ok());
    EXPECT_TRUE(outputs_within(download(*session, 0, stream->get()), expected, tolerance_for(precision)))
        << precision_name(precision);
  }
}

// An int8 session on CUDA quantizes the convolutions the int8 tensor-core kernel takes, runs them
// as fovea.Int8Conv and the rest in float16; the CPU executor running the same plan (Int8Conv's
// reference, the same float16 storage) gives the same outputs within float16's model tolerance.
TEST(InferenceSessionCuda, AnInt8PlanRunsItsConvolutionsOnTheInt8KernelAsTheCpuRunsThePlan) {
  FOVEA_REQUIRE_GPU();
  const auto dir = fresh_dir("session_cuda_int8");
  ModelBuilder builder(17);
  const auto path = int8_residual_stack(builder).write(dir / "stack.onnx");
  auto model = load_onnx(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto calibrator = quant::Calibrator::create(model->graph, Device::kCpu);
  ASSERT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
  ASSERT_TRUE((*calibrator)->add_batch({random_tensor(kF32, {8, 16, 10, 10}, 51)}).is_ok());
  Result<quant::CalibrationTable> table = (*calibrator)->finish(quant::CalibrationMethod::kPercentile);
  ASSERT_TRUE(table.is_ok()) << table.status().to_string();
  table->model_digest = *file_digest(path);
  ASSERT_TRUE(quant::write_calibration(dir / "stack.calib", *table).is_ok());

  auto session = open_or_fail(
      path, {{"x", {3, 16, 10, 10}}},
      {.device = Device::kCuda, .precision = Precision::kInt8, .calibration = dir / "stack.calib"});
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(count_ops(session->plan().graph, "Int8Conv"), 6);
  const Tensor x = random_tensor(kF32, {3, 16, 10, 10}, 52);
  auto cuda = session->run_host(nullptr, {x});
  ASSERT_TRUE(cuda.is_ok()) << cuda.status().to_string();
  CpuExecutor cpu(session->plan());
  auto expected = cpu.run({x});
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  EXPECT_TRUE(outputs_within((*cuda)[0], (*expected)[0], kModelFloat16Tolerance));
}

TEST(InferenceSessionCuda, APartialBatchReplacesOnlyItsItems) {
  FOVEA_REQUIRE_GPU();
  const auto path = write_classifier(fresh_dir("session_cuda_partial") / "classifier.onnx");
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  auto session = open_or_fail(path, at_batch(4), {.device = Device::kCuda});
  ASSERT_NE(session, nullptr);
  const Tensor full = random_tensor(kF32, {4, 3, 19, 17}, 1);
  const Tensor partial = random_tensor(kF32, {2, 3, 19, 17}, 2);
  const DeviceMemory d_full = upload(full);
  const DeviceMemory d_partial = upload(partial);
  ASSERT_TRUE(session->copy_input(stream->get(), 0, d_full.get(), 4).is_ok());
  ASSERT_TRUE(session->copy_input(stream->get(), 0, d_partial.get(), 2).is_ok());
  ASSERT_TRUE(session->run(stream->get()).is_ok());
  const Tensor out = download(*session, 0, stream->get());
  const Tolerance tolerance = tolerance_for(Precision::kFloat32);
  EXPECT_TRUE(outputs_within(items(out, 0, 2), cpu_output(path, partial), tolerance));
  EXPECT_TRUE(outputs_within(items(out, 2, 2), items(cpu_output(path, full), 2, 2), tolerance));

  for (std::int64_t bad : {0, 5}) {
    const Status status = session->copy_input(stream->get(), 0, d_full.get(), bad);
    ASSERT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("classifier.onnx: input 'x' holds 4 items"), std::string::npos)
        << status.to_string();
  }
}

TEST(InferenceSessionCuda, AFloat16InterfaceTakesAndGivesHalf) {
  FOVEA_REQUIRE_GPU();
  const auto path = write_classifier(fresh_dir("session_cuda_half") / "classifier.onnx");
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  auto session =
      open_or_fail(path, at_batch(3),
                   {.device = Device::kCuda, .precision = Precision::kFloat16, .float16_interface = true});
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->input_spec(0).dtype, DataType::kFloat16);
  EXPECT_EQ(session->output_spec(0).dtype, DataType::kFloat16);
  EXPECT_EQ(session->input(0).dtype(), DataType::kFloat16);
  const Tensor x = to_half(random_tensor(kF32, {3, 3, 19, 17}, 3));
  auto out = session->run_host(stream->get(), {x});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dtype(), DataType::kFloat16);
  // The reference runs in float32 on the same rounded input.
  EXPECT_TRUE(outputs_within((*out)[0], cpu_output(path, to_float(x)), kModelFloat16Tolerance));
}

// The case: a detector at batch 16 and a classifier at batch 32, one stream, back to back.
TEST(InferenceSessionCuda, TwoModelsAtTheirOwnBatchSizesShareAStream) {
  FOVEA_REQUIRE_GPU();
  const auto dir = fresh_dir("session_cuda_two");
  const auto detector_path = write_classifier(dir / "detector.onnx", 1);
  const auto classifier_path = write_classifier(dir / "classifier.onnx", 21);
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const SessionOptions options{.device = Device::kCuda, .precision = Precision::kFloat16};
  auto detector = open_or_fail(detector_path, at_batch(16), options);
  auto classifier = open_or_fail(classifier_path, at_batch(32), options);
  ASSERT_TRUE(detector && classifier);
  const Tensor frames = random_tensor(kF32, {16, 3, 19, 17}, 4);
  const Tensor crops = random_tensor(kF32, {32, 3, 19, 17}, 5);
  const DeviceMemory d_frames = upload(frames);
  const DeviceMemory d_crops = upload(crops);
  for (int repeat = 0; repeat < 3; ++repeat) {
    ASSERT_TRUE(detector->copy_input(stream->get(), 0, d_frames.get(), 16).is_ok());
    ASSERT_TRUE(detector->run(stream->get()).is_ok());
    ASSERT_TRUE(classifier->copy_input(stream->get(), 0, d_crops.get(), 32).is_ok());
    ASSERT_TRUE(classifier->run(stream->get()).is_ok());
  }
  EXPECT_TRUE(outputs_within(download(*detector, 0, stream->get()), cpu_output(detector_path, frames),
                             kModelFloat16Tolerance));
  EXPECT_TRUE(outputs_within(download(*classifier, 0, stream->get()), cpu_output(classifier_path, crops),
                             kModelFloat16Tolerance));
}

// run() only enqueues: with the stream held up by a host function, it still returns at once.
TEST(InferenceSessionCuda, RunDoesNotWaitForTheStream) {
  FOVEA_REQUIRE_GPU();
  const auto path = write_classifier(fresh_dir("session_cuda_async") / "classifier.onnx");
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  auto session = open_or_fail(path, at_batch(2), {.device = Device::kCuda});
  ASSERT_NE(session, nullptr);
  const DeviceMemory d_x = upload(random_tensor(kF32, {2, 3, 19, 17}, 6));
  const auto hold = [](void*) { std::this_thread::sleep_for(kHold); };
  ASSERT_EQ(cudaLaunchHostFunc(stream->get(), hold, nullptr), cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(session->copy_input(stream->get(), 0, d_x.get(), 2).is_ok());
  ASSERT_TRUE(session->run(stream->get()).is_ok());
  const auto enqueued = std::chrono::steady_clock::now() - start;
  EXPECT_LT(enqueued, kHold / 2) << "run() waited for the stream";
  ASSERT_TRUE(stream->synchronize().is_ok());
}

TEST(InferenceSessionCuda, ReplaysWithoutAllocatingAndTheGraphCanBeTurnedOff) {
  FOVEA_REQUIRE_GPU();
  const auto path = write_classifier(fresh_dir("session_cuda_replay") / "classifier.onnx");
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  auto graphed = open_or_fail(path, at_batch(3), {.device = Device::kCuda});
  auto eager = open_or_fail(path, at_batch(3), {.device = Device::kCuda, .use_cuda_graph = false});
  ASSERT_TRUE(graphed && eager);
  EXPECT_TRUE(graphed->uses_cuda_graph());
  EXPECT_FALSE(eager->uses_cuda_graph());
  const SessionMemory memory = graphed->device_memory();
  EXPECT_GT(memory.weights, 0u);
  EXPECT_GE(memory.io, graphed->input(0).bytes() + graphed->output(0).bytes());
  const int allocations = graphed->device_allocations();
  const Tensor x = random_tensor(kF32, {3, 3, 19, 17}, 8);
  auto first = graphed->run_host(stream->get(), {x});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(graphed->run(stream->get()).is_ok());
  auto unrolled = eager->run_host(stream->get(), {x});
  ASSERT_TRUE(first.is_ok() && unrolled.is_ok());
  EXPECT_EQ(graphed->device_allocations(), allocations);
  EXPECT_TRUE(outputs_within((*unrolled)[0], (*first)[0], Tolerance{}));
}

TEST(InferenceSessionCuda, KeepsItsEngineInTheCacheKeyedByTheGpu) {
  FOVEA_REQUIRE_GPU();
  const auto dir = fresh_dir("session_cuda_engine");
  const auto path = write_classifier(dir / "classifier.onnx");
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const SessionOptions options{
      .device = Device::kCuda, .precision = Precision::kFloat16, .engine_cache = dir / "engines"};
  auto planned = open_or_fail(path, at_batch(2), options);
  ASSERT_NE(planned, nullptr);
  const EngineKey key{.model_digest = file_digest(path).value(),
                      .input_shapes = at_batch(2),
                      .options = planned->plan().options,
                      .device = cuda::device_signature()};
  const auto engine = engine_path(dir / "engines", path, key);
  ASSERT_TRUE(std::filesystem::exists(engine)) << engine;
  EXPECT_NE(engine.filename().string().find("classifier.fp16.nhwc.x-2x3x19x17."), std::string::npos)
      << engine;
  const auto written = std::filesystem::last_write_time(engine);
  auto loaded = open_or_fail(path, at_batch(2), options);
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(std::filesystem::last_write_time(engine), written) << "the engine was planned again";
  const Tensor x = random_tensor(kF32, {2, 3, 19, 17}, 9);
  auto a = planned->run_host(stream->get(), {x});
  auto b = loaded->run_host(stream->get(), {x});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_TRUE(outputs_within((*b)[0], (*a)[0], Tolerance{}));
}

// A graph ending in NonMaxSuppression: the selection is placed at its bound, and each run says how
// many rows it filled.
// 40 boxes [1, 40, 4] of side 0.3 at seeded corners in [0, 0.7): NMS's input in the tests below.
Tensor nms_boxes() {
  Tensor boxes = random_tensor(kF32, {1, 40, 4}, 1, 0.0, 0.7);
  for (std::int64_t i = 0; i < 40; ++i) {
    boxes.data<float>()[i * 4 + 2] = boxes.data<float>()[i * 4] + 0.3f;
    boxes.data<float>()[i * 4 + 3] = boxes.data<float>()[i * 4 + 1] + 0.3f;
  }
  return boxes;
}

TEST(InferenceSessionCuda, ADataDependentOutputHasItsBoundAndARowCount) {
  FOVEA_REQUIRE_GPU();
  ModelBuilder m(17);
  m.input("boxes", kF32, {1, 40, 4}).input("scores", kF32, {1, 3, 40});
  m.initializer("max", int64_tensor({1}, {6})).initializer("iou", float_tensor({1}, {0.3f}));
  m.initializer("threshold", float_tensor({1}, {0.2f}));
  m.node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "threshold"}, {"selected"}, "nms");
  m.output("selected", DataType::kInt64, {-1, 3});
  const auto path = m.write(fresh_dir("session_cuda_nms") / "nms.onnx");
  const InputShapes shapes = {{"boxes", {1, 40, 4}}, {"scores", {1, 3, 40}}};
  auto session = open_or_fail(path, shapes, {.device = Device::kCuda});
  auto cpu = open_or_fail(path, shapes, {});
  ASSERT_TRUE(session && cpu);
  EXPECT_TRUE(session->output_spec(0).rows_vary);
  EXPECT_EQ(session->output_spec(0).shape, (Shape{18, 3}));  // 3 classes x 6 per class
  EXPECT_NE(session->output_rows_device(0), nullptr);
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const Tensor boxes = nms_boxes();
  const std::vector<Tensor> inputs = {boxes, random_tensor(kF32, {1, 3, 40}, 2, 0.0, 0.21)};
  auto got = session->run_host(stream->get(), inputs);
  auto expected = cpu->run_host(nullptr, inputs);
  ASSERT_TRUE(got.is_ok() && expected.is_ok()) << got.status().to_string();
  EXPECT_TRUE(outputs_within((*got)[0], (*expected)[0], Tolerance{}));
}

// NMS's selection read by later nodes (the boxes it keeps, gathered): CUDA cannot plan past it, so
// the session is refused naming the node, or with cpu_tail runs the scores' Relu on CUDA and the
// NMS and the gather on the CPU, giving what the CPU session gives.
TEST(InferenceSessionCuda, NodesAfterADataDependentOutputRunOnTheCpuTail) {
  FOVEA_REQUIRE_GPU();
  ModelBuilder m(17);
  m.input("boxes", kF32, {1, 40, 4}).input("scores", kF32, {1, 3, 40});
  m.initializer("max", int64_tensor({1}, {6})).initializer("iou", float_tensor({1}, {0.3f}));
  m.initializer("threshold", float_tensor({1}, {0.2f}));
  m.initializer("box_column", int64_tensor({1}, {2})).initializer("first", int64_tensor({1}, {0}));
  m.node("Relu", {"scores"}, {"positive"}, "relu");
  m.node("NonMaxSuppression", {"boxes", "positive", "max", "iou", "threshold"}, {"selected"}, "nms");
  m.attr(m.node("Gather", {"selected", "box_column"}, {"box_index"}, "column"), "axis", std::int64_t{1});
  m.initializer("one", int64_tensor({1}, {1}));
  m.node("Squeeze", {"box_index", "one"}, {"index"}, "flat");
  m.node("Squeeze", {"boxes", "first"}, {"all_boxes"}, "drop_batch");
  m.attr(m.node("Gather", {"all_boxes", "index"}, {"kept"}, "keep"), "axis", std::int64_t{0});
  m.output("positive", kF32, {1, 3, 40}).output("kept", kF32, {-1, 4});
  const auto path = m.write(fresh_dir("session_cuda_tail") / "nms_gather.onnx");
  const InputShapes shapes = {{"boxes", {1, 40, 4}}, {"scores", {1, 3, 40}}};

  auto refused = InferenceSession::open(path, shapes, {.device = Device::kCuda});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("node 'nms' (NonMaxSuppression)"), std::string::npos)
      << refused.status().message();

  auto session = open_or_fail(path, shapes, {.device = Device::kCuda, .cpu_tail = true});
  auto cpu = open_or_fail(path, shapes, {});
  ASSERT_TRUE(session && cpu);
  EXPECT_GT(session->cpu_tail_nodes(), 0);
  EXPECT_NE(session->first_cpu_tail_node().find("'nms'"), std::string::npos);
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  EXPECT_FALSE(session->run(stream->get()).is_ok());  // the tail needs the host: run_host only
  const Tensor boxes = nms_boxes();
  const std::vector<Tensor> inputs = {boxes, random_tensor(kF32, {1, 3, 40}, 2, -0.1, 0.21)};
  auto got = session->run_host(stream->get(), inputs);
  auto expected = cpu->run_host(nullptr, inputs);
  ASSERT_TRUE(got.is_ok() && expected.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(outputs_within((*got)[i], (*expected)[i], Tolerance{}));
  EXPECT_GT((*got)[1].dim(0), 0);
}

// A kernel's dynamic shared-memory limit belongs to the kernel: the small TopK prepared second must
// not lower what the large one, prepared first, launches with (torchvision's RPN sorts each
// pyramid level apart; this failed with "invalid argument" before).
TEST(InferenceSessionCuda, TopKsOfDifferentSizesShareTheirKernel) {
  FOVEA_REQUIRE_GPU();
  ModelBuilder m(17);
  m.input("large", kF32, {1, 16000}).input("small", kF32, {1, 100});
  m.initializer("k", int64_tensor({1}, {5}));
  m.node("TopK", {"large", "k"}, {"large_top", "large_index"}, "top_large");
  m.node("TopK", {"small", "k"}, {"small_top", "small_index"}, "top_small");
  m.output("large_top", kF32, {1, 5}).output("small_top", kF32, {1, 5});
  const auto path = m.write(fresh_dir("session_cuda_topks") / "topks.onnx");
  const InputShapes shapes = {{"large", {1, 16000}}, {"small", {1, 100}}};
  auto session = open_or_fail(path, shapes, {.device = Device::kCuda});
  auto cpu = open_or_fail(path, shapes, {});
  ASSERT_TRUE(session && cpu);
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const std::vector<Tensor> inputs = {random_tensor(kF32, {1, 16000}, 3), random_tensor(kF32, {1, 100}, 4)};
  auto got = session->run_host(stream->get(), inputs);
  auto expected = cpu->run_host(nullptr, inputs);
  ASSERT_TRUE(got.is_ok() && expected.is_ok()) << got.status().to_string();
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(outputs_within((*got)[i], (*expected)[i], Tolerance{}));
}

}  // namespace
}  // namespace fovea::runtime::testing
