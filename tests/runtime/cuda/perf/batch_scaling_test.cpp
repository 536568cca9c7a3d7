// Throughput must not fall as the batch grows (issue 25). The model is a DetectNet_v2-style
// detector, PeopleNet's architecture: torchvision's ResNet-34 trunk to stride 16, then 1x1 coverage
// (sigmoid) and box heads over the 34x60 grid of a 544x960 frame, with seeded weights. Before issue
// 25 the search could hand an algorithm at most 256 MiB of scratch, and from batch 16 on the 7x7
// stem's tensor-core algorithm needed more: it fell to a kernel without tensor cores, and batch 32
// ran at 0.67x batch 8's items/s on an H200.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_raii.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

using cuda::CudaExecutor;
constexpr DataType kF32 = DataType::kFloat32;
constexpr std::int64_t kHeight = 544, kWidth = 960;

// Writes the trunk's nodes into a ModelBuilder, naming each value after the node that makes it.
class TrunkWriter {
 public:
  explicit TrunkWriter(ModelBuilder& model) : model_(model) {}

  // A k x k convolution with bias and "same" pads; He-uniform weights keep the activations' scale
  // through the ReLUs, so float16 neither overflows nor flushes to zero.
  std::string conv(const std::string& x, std::int64_t in, std::int64_t out, std::int64_t k,
                   std::int64_t stride, std::string name = {}) {
    const auto seed = static_cast<std::uint32_t>(++convs_);
    if (name.empty()) name = "conv" + std::to_string(seed);
    const double bound = std::sqrt(6.0 / static_cast<double>(in * k * k));
    model_.initializer(name + ".w", random_tensor(kF32, {out, in, k, k}, seed, -bound, bound));
    model_.initializer(name + ".b", random_tensor(kF32, {out}, 1000 + seed, -0.1, 0.1));
    auto& node = model_.node("Conv", {x, name + ".w", name + ".b"}, {name}, name);
    model_.attr(node, "strides", std::vector<std::int64_t>{stride, stride});
    model_.attr(node, "pads", std::vector<std::int64_t>(4, k / 2));
    return name;
  }

  std::string relu(const std::string& x) {
    model_.node("Relu", {x}, {x + ".relu"}, x + ".relu");
    return x + ".relu";
  }

  // torchvision's BasicBlock: two 3x3 convolutions and the shortcut, a strided 1x1 convolution
  // where the shape changes.
  std::string basic_block(const std::string& x, std::int64_t in, std::int64_t out, std::int64_t stride) {
    const std::string first = relu(conv(x, in, out, 3, stride));
    const std::string second = conv(first, out, out, 3, 1);
    const std::string shortcut = stride == 1 && in == out ? x : conv(x, in, out, 1, stride);
    model_.node("Add", {second, shortcut}, {second + ".sum"}, second + ".sum");
    return relu(second + ".sum");
  }

 private:
  ModelBuilder& model_;
  int convs_ = 0;
};

Graph detectnet_style() {
  ModelBuilder m(17);
  m.input("input", kF32, {-1, 3, kHeight, kWidth});
  m.output("output_cov", kF32, {-1, 3, kHeight / 16, kWidth / 16});
  m.output("output_bbox", kF32, {-1, 12, kHeight / 16, kWidth / 16});
  TrunkWriter trunk(m);
  const std::string stem = trunk.relu(trunk.conv("input", 3, 64, 7, 2));
  auto& pool = m.node("MaxPool", {stem}, {"pool"}, "pool");
  m.attr(pool, "kernel_shape", std::vector<std::int64_t>{3, 3});
  m.attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  m.attr(pool, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  std::string x = "pool";
  std::int64_t channels = 64;
  // ResNet-34's layer1 to layer3: 3, 4 and 6 blocks; layer4 (stride 32) is not DetectNet_v2's.
  for (const auto& [width, blocks] : {std::pair{64, 3}, std::pair{128, 4}, std::pair{256, 6}}) {
    for (int block = 0; block < blocks; ++block) {
      x = trunk.basic_block(x, channels, width, block == 0 && width != channels ? 2 : 1);
      channels = width;
    }
  }
  const std::string coverage = trunk.conv(x, channels, 3, 1, 1, "coverage");
  m.node("Sigmoid", {coverage}, {"output_cov"}, "coverage.sigmoid");
  trunk.conv(x, channels, 12, 1, 1, "output_bbox");
  auto model = parse_onnx(m.serialize(), "detectnet_style.onnx", ".");
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model->graph;
}

// Items per second at `batch` in float16, as `fovea model bench` times them: the plan's CUDA
// graph replayed back to back. The best of three timings of about 800 items each (~0.15 s on an
// H200), so that one slow timing (a clock change, another process) does not decide.
double items_per_second(const Graph& graph, std::int64_t batch, cudaStream_t stream) {
  auto plan =
      plan_graph(graph, {{"input", {batch, 3, kHeight, kWidth}}}, device_plan_options(Precision::kFloat16));
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto executor = CudaExecutor::create(std::move(plan).value());
  EXPECT_TRUE(executor.is_ok()) << executor.status().to_string();
  if (!executor.is_ok()) return 0.0;
  CudaExecutor& e = **executor;
  // The first run copies an input in; the timed ones run on it.
  EXPECT_TRUE(e.run_host({random_tensor(kF32, {batch, 3, kHeight, kWidth}, 7)}, stream).is_ok());
  auto begin = CudaEvent::create(true);
  auto end = CudaEvent::create(true);
  EXPECT_TRUE(begin.is_ok() && end.is_ok());
  const int runs = static_cast<int>(800 / batch);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(e.run(stream).is_ok());  // warm-up
  double best = 0.0;
  for (int timing = 0; timing < 3; ++timing) {
    EXPECT_TRUE(begin->record(stream).is_ok());
    for (int i = 0; i < runs; ++i) EXPECT_TRUE(e.run(stream).is_ok());
    EXPECT_TRUE(end->record(stream).is_ok());
    EXPECT_TRUE(end->synchronize().is_ok());
    auto ms = end->elapsed_ms_since(*begin);
    EXPECT_TRUE(ms.is_ok());
    if (ms.is_ok()) best = std::max(best, static_cast<double>(batch) * runs / (*ms / 1000.0));
  }
  return best;
}

TEST(CudaBatchScaling, DetectNetStyleAtBatch32RunsAtLeast95PercentOfBatch8ItemsPerSecond) {
  FOVEA_REQUIRE_GPU();
  // An algorithm cache of its own: choices cached by another build or cap must not decide.
  ASSERT_EQ(setenv("FOVEA_CACHE_DIR", fovea::testing::test_temp_dir().c_str(), 1), 0);
  const Graph graph = detectnet_style();
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const double at8 = items_per_second(graph, 8, stream->get());
  const double at32 = items_per_second(graph, 32, stream->get());
  std::printf("DetectNet-style 544x960 float16: batch 8 %.0f items/s, batch 32 %.0f items/s (%.3fx)\n", at8,
              at32, at32 / at8);
  EXPECT_GE(at32, 0.95 * at8) << "batch 8: " << at8 << " items/s, batch 32: " << at32 << " items/s";
}

}  // namespace
}  // namespace fovea::runtime::testing
