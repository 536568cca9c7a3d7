// Detection postprocess, CUDA vs the CPU reference on random outputs of every layout (odd sizes,
// batch 1 and 5, float32 and float16, NaN and infinities, stretch / letterbox / cropped mappings):
// the same detections in the same order with the same bits (detect_post.h: every operation is
// rounded on its own, exp included). One run is captured in a CUDA graph, which fails on any host
// synchronization (no host round trip).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/check.h"
#include "core/cuda_raii.h"
#include "image/image_test_util.h"
#include "post/detect_post.h"
#include "post/detect_test_util.h"

namespace fovea::post {
namespace {

using testing::DetectResult;
using testing::HostModel;

class DeviceBytes {
 public:
  explicit DeviceBytes(std::size_t bytes) {
    FOVEA_CHECK(cudaMalloc(&data_, std::max<std::size_t>(bytes, 1)) == cudaSuccess);
  }
  DeviceBytes(const void* host, std::size_t bytes) : DeviceBytes(bytes) {
    FOVEA_CHECK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

DetectResult run_gpu(HostModel& model, const DetectPostConfig& config,
                     const std::vector<FrameMapping>& mappings, bool in_graph) {
  DetectResult r;
  auto plan = plan_detect_post(config, model.infos(), DetectDevice::kCuda);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan.is_ok()) return r;
  std::vector<std::unique_ptr<DeviceBytes>> buffers;
  std::vector<TensorView> views;
  for (testing::HostOutput& o : model.outputs) {
    buffers.push_back(std::make_unique<DeviceBytes>(o.data(), o.bytes()));
    views.push_back(testing::view_of(buffers.back()->get(), o.info, MemoryKind::kDevice));
  }
  DetectInputs inputs{views, {}, mappings};
  std::unique_ptr<DeviceBytes> priors;
  if (!model.priors.empty()) {
    priors = std::make_unique<DeviceBytes>(model.priors.data(), model.priors.size() * sizeof(float));
    inputs.priors = contiguous_tensor(priors->get(), DataType::kFloat32, MemoryKind::kDevice,
                                      {static_cast<std::int64_t>(model.priors.size() / 4), 4});
  }
  r.top_k = plan->detections_per_image;
  const std::size_t capacity = static_cast<std::size_t>(plan->layout.batch * r.top_k);
  DeviceBytes workspace(plan->workspace_bytes), detections(capacity * sizeof(Detection)),
      counts(static_cast<std::size_t>(plan->layout.batch) * sizeof(std::int32_t));
  const DetectionList device{static_cast<Detection*>(detections.get()),
                             static_cast<std::int32_t*>(counts.get())};
  auto stream = CudaStream::create();
  EXPECT_TRUE(stream.is_ok());
  const auto run = [&] {
    return run_detect_post_cuda(stream->get(), *plan, inputs, workspace.get(), plan->workspace_bytes, device);
  };
  if (in_graph) {
    auto graph = CudaGraph::capture(stream->get(), run);
    EXPECT_TRUE(graph.is_ok()) << graph.status().to_string();
    if (!graph.is_ok()) return r;
    EXPECT_TRUE(graph->launch(stream->get()).is_ok());
  } else {
    const Status s = run();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  r.detections.resize(capacity);
  r.counts.resize(static_cast<std::size_t>(plan->layout.batch));
  EXPECT_TRUE(copy_detections_to_host(stream->get(), plan->nms_shape, plan->nms_params, device,
                                      {r.detections.data(), r.counts.data()})
                  .is_ok());
  EXPECT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  return r;
}

void expect_same(DetectLayoutKind kind, int batch, DataType dtype, std::uint32_t seed,
                 bool in_graph = false) {
  auto r = testing::random_model(kind, batch, seed, dtype);
  const auto mappings =
      testing::random_mappings(batch, r.config.options.input_width, r.config.options.input_height);
  const DetectResult cpu = testing::run_cpu(r.model, r.config, mappings);
  const DetectResult gpu = run_gpu(r.model, r.config, mappings, in_graph);
  ASSERT_EQ(gpu.counts, cpu.counts) << detect_layout_name(kind);
  int total = 0;
  for (int n = 0; n < batch; ++n) {
    total += cpu.count(n);
    for (int i = 0; i < cpu.count(n); ++i) {
      const Detection &a = cpu.at(n, i), &b = gpu.at(n, i);
      ASSERT_EQ(a.image, b.image);
      ASSERT_EQ(a.class_id, b.class_id) << "frame " << n << " rank " << i;
      ASSERT_EQ(a.box_index, b.box_index) << "frame " << n << " rank " << i;
      ASSERT_EQ(bits(a.score), bits(b.score)) << a.score << " vs " << b.score;
      ASSERT_EQ(std::memcmp(&a.box, &b.box, sizeof(Box)), 0) << "frame " << n << " rank " << i;
    }
  }
  EXPECT_GT(total, 0) << detect_layout_name(kind);
}

TEST(DetectPostGpu, SsdMatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same(DetectLayoutKind::kSsd, 1, DataType::kFloat32, 1);
  expect_same(DetectLayoutKind::kSsd, 5, DataType::kFloat16, 2);
}

TEST(DetectPostGpu, SsdBestClassOnlyMatchesReference) {
  FOVEA_REQUIRE_GPU();
  auto r = testing::random_model(DetectLayoutKind::kSsd, 3, 3);
  r.config.params.best_class_only = true;
  const auto mappings =
      testing::random_mappings(3, r.config.options.input_width, r.config.options.input_height);
  const DetectResult cpu = testing::run_cpu(r.model, r.config, mappings);
  const DetectResult gpu = run_gpu(r.model, r.config, mappings, false);
  ASSERT_EQ(gpu.counts, cpu.counts);
  for (std::size_t i = 0; i < cpu.detections.size(); ++i) {
    EXPECT_EQ(cpu.detections[i].class_id, gpu.detections[i].class_id);
    EXPECT_EQ(bits(cpu.detections[i].score), bits(gpu.detections[i].score));
  }
}

TEST(DetectPostGpu, YoloMatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same(DetectLayoutKind::kYoloAnchorFree, 1, DataType::kFloat32, 4);
  expect_same(DetectLayoutKind::kYoloAnchorFree, 5, DataType::kFloat16, 5);
  expect_same(DetectLayoutKind::kYoloAnchorBased, 1, DataType::kFloat16, 6);
  expect_same(DetectLayoutKind::kYoloAnchorBased, 5, DataType::kFloat32, 7);
}

TEST(DetectPostGpu, DetectNetMatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same(DetectLayoutKind::kDetectNet, 1, DataType::kFloat32, 8);
  expect_same(DetectLayoutKind::kDetectNet, 5, DataType::kFloat16, 9);
}

TEST(DetectPostGpu, BoxesAndNmsOutputsMatchReference) {
  FOVEA_REQUIRE_GPU();
  expect_same(DetectLayoutKind::kBoxes, 1, DataType::kFloat32, 10);
  expect_same(DetectLayoutKind::kBoxes, 5, DataType::kFloat16, 11);
  expect_same(DetectLayoutKind::kNmsOutputs, 1, DataType::kFloat32, 12);
  expect_same(DetectLayoutKind::kNmsOutputs, 5, DataType::kFloat32, 13);
}

TEST(DetectPostGpu, RunsInACudaGraphWithNoHostRoundTrip) {
  FOVEA_REQUIRE_GPU();
  expect_same(DetectLayoutKind::kSsd, 16, DataType::kFloat32, 14, true);
  expect_same(DetectLayoutKind::kYoloAnchorFree, 4, DataType::kFloat16, 15, true);
}

}  // namespace
}  // namespace fovea::post
