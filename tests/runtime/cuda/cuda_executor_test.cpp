// The CUDA executor on whole models: the same plan as the CPU executor gives the same outputs, in
// float32 and float16, replayed from a CUDA graph with no allocation while it runs.
#include "runtime/cuda/cuda_executor.h"

#include <cudnn.h>

#include <algorithm>
#include <utility>

#include "runtime/cpu_executor.h"
#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/cuda/lt_matmul.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"

#include "core/cuda_raii.h"

namespace fovea::runtime::testing {
namespace {

using cuda::CudaExecutor;
constexpr DataType kF32 = DataType::kFloat32;

// A small residual classifier: conv-relu, conv + residual add - relu (both fuse into FusedConv),
// global pooling, flatten (a view), gemm, softmax.
Graph residual_classifier() {
  ModelBuilder m(17);
  m.input("x", kF32, {-1, 3, 19, 17}).output("probs", kF32, {-1, 10});
  m.initializer("w1", random_tensor(kF32, {8, 3, 3, 3}, 1, -0.5, 0.5));
  m.initializer("b1", random_tensor(kF32, {8}, 2));
  m.initializer("w2", random_tensor(kF32, {8, 8, 3, 3}, 3, -0.2, 0.2));
  m.initializer("b2", random_tensor(kF32, {8}, 4));
  m.initializer("fc_w", random_tensor(kF32, {10, 8}, 5));
  m.initializer("fc_b", random_tensor(kF32, {10}, 6));
  auto& conv1 = m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  m.attr(conv1, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& conv2 = m.node("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2");
  m.attr(conv2, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Add", {"c2", "r1"}, {"sum"}, "residual");
  m.node("Relu", {"sum"}, {"r2"}, "relu2");
  m.node("GlobalAveragePool", {"r2"}, {"pooled"}, "pool");
  m.node("Flatten", {"pooled"}, {"flat"}, "flatten");
  auto& fc = m.node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}, "fc");
  m.attr(fc, "transB", std::int64_t{1});
  m.node("Softmax", {"logits"}, {"probs"}, "softmax");
  auto model = parse_onnx(m.serialize(), "residual.onnx", ".");
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model->graph;
}

ExecutionPlan plan_for(const Graph& graph, std::int64_t batch, Precision precision,
                       bool channels_last = false) {
  auto plan = plan_graph(graph, {{"x", {batch, 3, 19, 17}}},
                         {.precision = precision, .channels_last = channels_last});
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  return std::move(plan).value();
}

std::vector<Tensor> run_cpu(const Graph& graph, const Tensor& x) {
  CpuExecutor cpu(plan_for(graph, x.dim(0), Precision::kFloat32));
  auto out = cpu.run({x});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return std::move(out).value();
}

TEST(CudaExecutor, MatchesTheCpuExecutorInFloat32AndFloat16) {
  FOVEA_REQUIRE_GPU();
  const Graph graph = residual_classifier();
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  for (std::int64_t batch : {1, 5}) {
    const Tensor x = random_tensor(kF32, {batch, 3, 19, 17}, 7);
    const std::vector<Tensor> expected = run_cpu(graph, x);
    for (auto [precision, channels_last] :
         {std::pair{Precision::kFloat32, false}, std::pair{Precision::kFloat16, false},
          std::pair{Precision::kFloat32, true}, std::pair{Precision::kFloat16, true}}) {
      auto executor = CudaExecutor::create(plan_for(graph, batch, precision, channels_last));
      ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
      EXPECT_TRUE((*executor)->uses_cuda_graph());
      auto out = (*executor)->run_host({x}, stream->get());
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      // The graph's interface stays float32 in both precisions.
      ASSERT_EQ((*out)[0].dtype(), kF32);
      const Tolerance tolerance = precision == Precision::kFloat32
                                      ? cuda_tolerance(precision, Accuracy::kAccumulating)
                                      : kModelFloat16Tolerance;
      EXPECT_TRUE(outputs_within((*out)[0], expected[0], tolerance))
          << "batch " << batch << ", " << precision_name(precision) << (channels_last ? ", NHWC" : "");
    }
  }
}

TEST(CudaExecutor, ReplaysWithoutAllocatingAndWithoutTheGraphGivesTheSame) {
  FOVEA_REQUIRE_GPU();
  const Graph graph = residual_classifier();
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const Tensor x = random_tensor(kF32, {3, 3, 19, 17}, 8);
  auto graphed = CudaExecutor::create(plan_for(graph, 3, Precision::kFloat32));
  auto eager = CudaExecutor::create(plan_for(graph, 3, Precision::kFloat32), {.use_cuda_graph = false});
  ASSERT_TRUE(graphed.is_ok() && eager.is_ok());
  EXPECT_FALSE((*eager)->uses_cuda_graph());
  const int allocations = (*graphed)->device_allocations();
  auto first = (*graphed)->run_host({x}, stream->get());
  auto second = (*graphed)->run_host({x}, stream->get());
  auto unrolled = (*eager)->run_host({x}, stream->get());
  ASSERT_TRUE(first.is_ok() && second.is_ok() && unrolled.is_ok());
  EXPECT_EQ((*graphed)->device_allocations(), allocations);
  EXPECT_TRUE(outputs_within((*second)[0], (*first)[0], Tolerance{}));
  EXPECT_TRUE(outputs_within((*unrolled)[0], (*first)[0], Tolerance{}));
}

TEST(CudaExecutor, RejectsInputsThatDoNotMatchThePlan) {
  FOVEA_REQUIRE_GPU();
  auto executor = CudaExecutor::create(plan_for(residual_classifier(), 2, Precision::kFloat32));
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  auto out = (*executor)->run_host({random_tensor(kF32, {3, 3, 19, 17}, 1)}, stream->get());
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("'x'"), std::string::npos) << out.status().to_string();
}

// A strided 1x1 convolution (a ResNet shortcut's) can run as a dense copy of the pixels it reads and
// a stride-1 convolution on it, or a cuBLASLt GEMM on it (conv.cu); a patch convolution (kernel ==
// stride, ViT's patch embedding) as a GEMM on a dense copy of its patches. The search picks the
// fastest form, so each is forced here through the algorithm cache, under the keys the op computes
// (with "|gemm" where cuBLASLt has a plan for the product). Odd sizes, the input's last rows and
// columns outside every patch; 24 channels copy in 16-byte units, 5 in 2-byte ones, patches of
// 2x2 pixels of 8 channels in 16-byte units, of 3 channels in 2-byte ones. The executor's workspace, which
// holds the dense copy and any scratch, is what `workspace` gets: the proof that the forced entry was found.
void run_strided_conv(std::int64_t channels, std::int64_t kernel, const cuda::ConvAlgorithm& forced,
                      std::size_t* workspace) {
  constexpr std::int64_t kBatch = 3, kHeight = 13, kWidth = 127, kOut = 7, kStride = 2;
  const std::int64_t stride = std::max(kernel, kStride);
  const std::int64_t out_h = (kHeight - kernel) / stride + 1, out_w = (kWidth - kernel) / stride + 1;
  ModelBuilder m(17);
  m.input("x", kF32, {-1, channels, kHeight, kWidth}).output("y", kF32, {-1, kOut, out_h, out_w});
  m.initializer("w", random_tensor(kF32, {kOut, channels, kernel, kernel}, 1));
  m.initializer("b", random_tensor(kF32, {kOut}, 2));
  m.attr(m.node("Conv", {"x", "w", "b"}, {"y"}, "shortcut"), "strides",
         std::vector<std::int64_t>{stride, stride});
  auto model = parse_onnx(m.serialize(), "shortcut.onnx", ".");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const InputShapes shapes = {{"x", {kBatch, channels, kHeight, kWidth}}};
  auto plan = plan_graph(model->graph, shapes, device_plan_options(Precision::kFloat16));
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const auto conv = std::find_if(plan->graph.nodes.begin(), plan->graph.nodes.end(),
                                 [](const Node& n) { return n.op_type == "FusedConv"; });
  ASSERT_NE(conv, plan->graph.nodes.end());
  auto limit = cuda::algorithm_workspace_limit();
  ASSERT_TRUE(limit.is_ok());
  const ops::WindowDim h{.in = kHeight, .out = out_h, .kernel = kernel, .stride = stride};
  const ops::WindowDim w{.in = kWidth, .out = out_w, .kernel = kernel, .stride = stride};
  const std::string key =
      cuda::conv_problem_key(*conv, DataType::kFloat16, {kBatch, channels, kHeight, kWidth},
                             {kOut, channels, kernel, kernel}, {h, w}, 1, *limit) +
      "|nhwc";
  cuda::ConvAlgorithmCache::instance().insert(key, forced);
  cuda::ConvAlgorithmCache::instance().insert(key + "|gemm", forced);
  auto executor = CudaExecutor::create(std::move(plan).value());
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  *workspace = (*executor)->memory_use().workspace;
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const Tensor x = random_tensor(kF32, {kBatch, channels, kHeight, kWidth}, 3);
  CpuExecutor cpu(plan_graph(model->graph, shapes, {}).value());
  auto expected = cpu.run({x});
  auto got = (*executor)->run_host({x}, stream->get());
  ASSERT_TRUE(expected.is_ok() && got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(outputs_within((*got)[0], (*expected)[0], kModelFloat16Tolerance))
      << channels << " channels, kernel " << kernel;
}

TEST(CudaExecutor, StridedOneByOneConvolutionRunsOnADenseCopy) {
  FOVEA_REQUIRE_GPU();
  for (std::int64_t channels : {24, 5}) {
    std::size_t workspace = 0;
    // Implicit GEMM needs no scratch: the workspace is the dense copy's.
    run_strided_conv(channels, 1,
                     {.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                      .math_type = CUDNN_DEFAULT_MATH,
                      .subsampled = true},
                     &workspace);
    EXPECT_GE(workspace, static_cast<std::size_t>(3 * 7 * 64 * channels * 2)) << channels << " channels";
  }
}

// The same convolution as a cuBLASLt product on the dense copy, bias in its epilogue.
TEST(CudaExecutor, StridedOneByOneConvolutionRunsAsAProduct) {
  FOVEA_REQUIRE_GPU();
  std::size_t workspace = 0;
  run_strided_conv(24, 1, {.workspace_bytes = cuda::kLtWorkspaceBytes, .subsampled = true, .gemm = true},
                   &workspace);
  EXPECT_GE(workspace, cuda::kLtWorkspaceBytes + 3 * 7 * 64 * 24 * 2);
}

// Patch convolutions (kernel == stride: 4x4 and 3x3 patches of 3 channels, as ViT's and Swin's
// patch embeddings, and 2x2 of 8) as a product on their patches, the copy [N, out_h, out_w, k, k, C].
TEST(CudaExecutor, PatchConvolutionRunsAsAProductOnItsPatches) {
  FOVEA_REQUIRE_GPU();
  for (const auto& [channels, kernel] : {std::pair<std::int64_t, std::int64_t>{3, 4}, {3, 3}, {8, 2}}) {
    std::size_t workspace = 0;
    run_strided_conv(channels, kernel,
                     {.workspace_bytes = cuda::kLtWorkspaceBytes, .subsampled = true, .gemm = true},
                     &workspace);
    const std::int64_t pixels = 3 * ((13 - kernel) / kernel + 1) * ((127 - kernel) / kernel + 1);
    EXPECT_GE(workspace,
              cuda::kLtWorkspaceBytes + static_cast<std::size_t>(pixels * kernel * kernel * channels * 2))
        << channels << " channels, kernel " << kernel;
  }
}

// boxes [1, 40, 4] and scores [1, 3, 40] into NonMaxSuppression (parameters as initializers, so
// the output's bound is [3 * max_per_class, 3]); `reader` adds a Cast node reading the selection.
// `declared_rows`: the selection's rows as the model declares them (-1: unknown).
ExecutionPlan nms_plan(bool reader, std::int64_t declared_rows = -1) {
  ModelBuilder m(17);
  m.input("boxes", kF32, {1, 40, 4}).input("scores", kF32, {1, 3, 40});
  m.initializer("max", int64_tensor({1}, {6})).initializer("iou", float_tensor({1}, {0.3f}));
  m.initializer("threshold", float_tensor({1}, {0.2f}));
  m.node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "threshold"}, {"selected"}, "nms");
  if (reader) {
    m.attr(m.node("Cast", {"selected"}, {"selected_f"}, "cast1"), "to", std::int64_t{1});
    m.output("selected_f", kF32, {-1, 3});
  } else {
    m.output("selected", DataType::kInt64, {declared_rows, 3});
  }
  auto model = parse_onnx(m.serialize(), "nms.onnx", ".");
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  auto plan = plan_graph(model->graph, {{"boxes", {1, 40, 4}}, {"scores", {1, 3, 40}}});
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  return std::move(plan).value();
}

// Boxes of 0.3 on a side at random places in the unit square, so that some overlap.
Tensor nms_boxes(std::uint32_t seed) {
  Tensor boxes = random_tensor(kF32, {1, 40, 4}, seed, 0.0, 0.7);
  for (std::int64_t i = 0; i < 40; ++i) {
    float* b = boxes.data<float>() + i * 4;
    b[2] = b[0] + 0.3f;
    b[3] = b[1] + 0.3f;
  }
  return boxes;
}

TEST(CudaExecutor, RunsDataDependentGraphOutputsInTheGraph) {
  FOVEA_REQUIRE_GPU();
  auto executor = CudaExecutor::create(nms_plan(false));
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  EXPECT_TRUE((*executor)->uses_cuda_graph());
  EXPECT_EQ((*executor)->output(0).shape(), (Shape{18, 3}));  // 3 classes x max_per_class 6
  EXPECT_NE((*executor)->output_rows_device(0), nullptr);
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  CpuExecutor cpu(nms_plan(false));
  const int allocations = (*executor)->device_allocations();
  std::vector<std::int64_t> rows;
  // Scores below the threshold on more and more boxes: fewer rows each run, from the same graph.
  for (double low : {0.19, 0.15, 0.0}) {
    const std::vector<Tensor> inputs = {nms_boxes(static_cast<std::uint32_t>(rows.size() + 1)),
                                        random_tensor(kF32, {1, 3, 40}, 9, low, 0.21)};
    auto expected = cpu.run(inputs);
    auto got = (*executor)->run_host(inputs, stream->get());
    ASSERT_TRUE(expected.is_ok() && got.is_ok()) << got.status().to_string();
    EXPECT_TRUE(outputs_within((*got)[0], (*expected)[0], Tolerance{}));
    rows.push_back((*got)[0].dim(0));
  }
  EXPECT_EQ((*executor)->device_allocations(), allocations);
  EXPECT_GT(rows[0], rows[2]) << "the row count must come from the run, not the plan";
}

// ONNX's test models declare the expected selection's shape; the rows still come from the run.
TEST(CudaExecutor, ADeclaredSelectionShapeStillTakesItsRowsFromTheRun) {
  FOVEA_REQUIRE_GPU();
  auto executor = CudaExecutor::create(nms_plan(false, 2));
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  EXPECT_NE((*executor)->output_rows_device(0), nullptr);
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  CpuExecutor cpu(nms_plan(false));
  const std::vector<Tensor> inputs = {nms_boxes(5), random_tensor(kF32, {1, 3, 40}, 9, 0.0, 0.21)};
  auto expected = cpu.run(inputs);
  auto got = (*executor)->run_host(inputs, stream->get());
  ASSERT_TRUE(expected.is_ok() && got.is_ok()) << got.status().to_string();
  EXPECT_GT((*got)[0].dim(0), 2);
  EXPECT_TRUE(outputs_within((*got)[0], (*expected)[0], Tolerance{}));
}

TEST(CudaExecutor, RefusesDataDependentOutputsThatANodeReads) {
  FOVEA_REQUIRE_GPU();
  auto executor = CudaExecutor::create(nms_plan(true));
  ASSERT_FALSE(executor.is_ok());
  const std::string message = executor.status().message();
  EXPECT_NE(message.find("'nms'"), std::string::npos) << message;
  EXPECT_NE(message.find("'cast1'"), std::string::npos) << message;
  EXPECT_NE(message.find("must be a graph output"), std::string::npos) << message;
}

// TopK with K from a graph input: its shape depends on the data and TopK has no bound.
TEST(CudaExecutor, RefusesDataDependentShapesOfOpsWithoutABound) {
  FOVEA_REQUIRE_GPU();
  ModelBuilder m(17);
  m.input("x", kF32, {2, 30}).input("k", DataType::kInt64, {1});
  m.output("values", kF32, {2, -1}).output("indices", DataType::kInt64, {2, -1});
  m.node("TopK", {"x", "k"}, {"values", "indices"}, "topk");
  auto model = parse_onnx(m.serialize(), "topk.onnx", ".");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto plan = plan_graph(model->graph, {{"x", {2, 30}}, {"k", {1}}});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto executor = CudaExecutor::create(std::move(plan).value());
  ASSERT_FALSE(executor.is_ok());
  EXPECT_NE(executor.status().message().find("'topk'"), std::string::npos) << executor.status().to_string();
  EXPECT_NE(executor.status().message().find("static shapes only"), std::string::npos)
      << executor.status().to_string();
}

}  // namespace
}  // namespace fovea::runtime::testing
