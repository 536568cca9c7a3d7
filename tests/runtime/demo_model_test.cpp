// The demo segmentation model: fovea writes it, loads and plans it like any model, and on a
// rendered synthetic frame its argmax mask matches the frame's exact subject mask.
#include "runtime/demo_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <vector>

#include "io/synthetic_clip.h"
#include "runtime/cpu_executor.h"
#include "runtime/onnx_loader.h"
#include "runtime/planner.h"
#include "support/test_media.h"

namespace fovea::runtime {
namespace {

// The clip and the model are two halves of one contract (see both headers).
static_assert(io::kSyntheticSubjectMinColorfulness == kDemoSubjectMinColorfulness);
static_assert(io::kSyntheticSubjectMaxColorfulness == kDemoSubjectMaxColorfulness);
static_assert(io::kSyntheticBackgroundMaxColorfulness == kDemoBackgroundMaxColorfulness);

constexpr int kWidth = 320;
constexpr int kHeight = 180;
constexpr std::uint32_t kSeed = 11;

// A kRGB8 frame as the model's input: [1, 3, H, W], RGB scaled to [0, 1] (mean 0, std 1).
Tensor input_tensor(const Frame& frame) {
  const int w = frame.image.width;
  const int h = frame.image.height;
  Tensor tensor = Tensor::allocate(DataType::kFloat32, {1, 3, h, w});
  float* out = tensor.data<float>();
  const std::size_t plane = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
  for (int y = 0; y < h; ++y) {
    const std::uint8_t* row = frame.image.row(0, y);
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        out[c * plane + static_cast<std::size_t>(y) * w + x] =
            (row[3 * x + c] / 255.0f - kDemoModelMean[c]) / kDemoModelStd[c];
      }
    }
  }
  return tensor;
}

Result<CpuExecutor*> make_executor(std::unique_ptr<CpuExecutor>& holder, int width, int height) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, demo_segmentation_model());
  FOVEA_ASSIGN_OR_RETURN(Model model, parse_onnx(bytes, "demo.onnx", {}));
  FOVEA_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_graph(model.graph, {{"input", {1, 3, height, width}}}));
  holder = std::make_unique<CpuExecutor>(std::move(plan));
  return holder.get();
}

// argmax over the two logits: 1 where the subject logit is larger.
std::vector<std::uint8_t> argmax_mask(const Tensor& logits) {
  const std::int64_t plane = logits.dim(2) * logits.dim(3);
  const float* background = logits.data<float>();
  const float* subject = background + plane;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(plane));
  for (std::int64_t i = 0; i < plane; ++i) mask[static_cast<std::size_t>(i)] = subject[i] > background[i];
  return mask;
}

double iou(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  std::int64_t both = 0;
  std::int64_t either = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    both += a[i] && b[i];
    either += a[i] || b[i];
  }
  return either == 0 ? 1.0 : static_cast<double>(both) / static_cast<double>(either);
}

TEST(DemoModel, LoadsWithSymbolicDimsAndPlans) {
  const std::filesystem::path path = std::filesystem::path(fovea::testing::test_temp_dir()) / "demo.onnx";
  ASSERT_TRUE(write_demo_segmentation_model(path).is_ok());
  Result<Model> model = load_onnx(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Graph& graph = model->graph;
  ASSERT_EQ(graph.inputs.size(), 1u);
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.value(graph.inputs[0]).name, "input");
  EXPECT_EQ(dims_string(*graph.value(graph.inputs[0]).type.dims), "[N, 3, H, W]");
  EXPECT_EQ(graph.value(graph.outputs[0]).name, "out");
  std::int64_t parameters = 0;
  for (const Value& value : graph.values) parameters += value.constant ? value.constant->numel() : 0;
  EXPECT_LT(parameters, 100);
  Result<ExecutionPlan> plan = plan_graph(graph, {{"input", {2, 3, 36, 64}}});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
}

TEST(DemoModel, SegmentsTheSyntheticSubjects) {
  std::unique_ptr<CpuExecutor> holder;
  Result<CpuExecutor*> executor = make_executor(holder, kWidth, kHeight);
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  for (int index : {0, 29, 74}) {
    Result<std::vector<Tensor>> outputs =
        (*executor)->run({input_tensor(io::render_synthetic_rgb(index, kWidth, kHeight, kSeed))});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    ASSERT_EQ((*outputs)[0].shape(), (Shape{1, 2, kHeight, kWidth}));
    const double score = iou(argmax_mask((*outputs)[0]), io::ground_truth_mask(index, kWidth, kHeight));
    std::cout << "frame " << index << ": IoU " << score << "\n";
    EXPECT_GE(score, 0.9) << "frame " << index;
  }
}

TEST(DemoModel, RejectsBadOptions) {
  DemoModelOptions even;
  even.smoothing_kernel = 4;
  Result<std::string> bytes = demo_segmentation_model(even);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_NE(bytes.status().message().find("smoothing_kernel 4"), std::string::npos);
  DemoModelOptions threshold;
  threshold.colorfulness_threshold = 1.5f;
  EXPECT_FALSE(demo_segmentation_model(threshold).is_ok());
  DemoModelOptions scale;
  scale.logit_scale = 0.0f;
  EXPECT_FALSE(demo_segmentation_model(scale).is_ok());
  EXPECT_EQ(write_demo_segmentation_model("/nonexistent-dir/demo.onnx").code(), StatusCode::kIoError);
}

// Times one 1080p frame on the CPU executor, for the record (printed, not asserted).
TEST(DemoModel, Times1080pOnTheCpu) {
  std::unique_ptr<CpuExecutor> holder;
  Result<CpuExecutor*> executor = make_executor(holder, 1920, 1080);
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  const Tensor input = input_tensor(io::render_synthetic_rgb(40, 1920, 1080, kSeed));
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<Tensor>> outputs = (*executor)->run({input});
  const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  const double score = iou(argmax_mask((*outputs)[0]), io::ground_truth_mask(40, 1920, 1080));
  std::cout << "1080p CPU run: " << elapsed.count() << " ms, IoU " << score << "\n";
  RecordProperty("cpu_ms_1080p", static_cast<int>(elapsed.count()));
  EXPECT_GE(score, 0.9);
}

}  // namespace
}  // namespace fovea::runtime
