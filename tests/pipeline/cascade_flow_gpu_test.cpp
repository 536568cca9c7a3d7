// The cascade (detect -> track -> classify -> OSD) on the GPU against the same flow on the CPU: the
// tracker sees the same detections, so the objects, their track ids and predicted flags, and the
// color classifier's labels (its crops through the GPU's fused preprocess, its chunks of its own
// batch) must agree; boxes and scores within the detection flow's float32 tolerances.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "cascade_flow_fixture.h"
#include "core/cuda_raii.h"
#include "pipeline/flow.h"

namespace fovea::pipeline {
namespace {

using namespace detect_test;

class CascadeFlowGpu : public CascadeFlow {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    CascadeFlow::SetUp();
  }

  std::map<std::pair<std::size_t, std::int64_t>, ParsedFrameRecord> run(const PipelineConfig& config,
                                                                        DeviceChoice device) {
    Result<FlowResult> result = run_flow(config, {.device = device, .progress = nullptr});
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    return records();
  }
};

TEST_F(CascadeFlowGpu, TracksAndLabelsMatchTheCpuFlow) {
  PipelineConfig cfg = tracked();
  cfg.models[0].precision = runtime::Precision::kFloat32;
  add_color_model(cfg);
  cfg.models.back().precision = runtime::Precision::kFloat32;
  cfg.osd.enabled = true;
  const auto cpu = run(cfg, DeviceChoice::kCpu);
  const auto gpu = run(cfg, DeviceChoice::kGpu);
  ASSERT_EQ(gpu.size(), cpu.size());
  std::size_t labelled = 0;
  for (const auto& [key, expected] : cpu) {
    const ParsedFrameRecord& got = gpu.at(key);
    ASSERT_EQ(got.objects->size(), expected.objects->size()) << "frame " << key.second;
    for (std::size_t i = 0; i < got.objects->size(); ++i) {
      const ParsedObject& a = (*expected.objects)[i];
      const ParsedObject& b = (*got.objects)[i];
      EXPECT_EQ(a.class_id, b.class_id);
      EXPECT_EQ(a.track_id, b.track_id) << "frame " << key.second;
      EXPECT_EQ(a.predicted, b.predicted);
      EXPECT_NEAR(a.score, b.score, 1e-3);
      for (int c = 0; c < 4; ++c) EXPECT_NEAR(a.box[c], b.box[c], 0.5) << "frame " << key.second;
      ASSERT_EQ(a.secondary.size(), b.secondary.size());
      for (std::size_t k = 0; k < a.secondary.size(); ++k) {
        EXPECT_EQ(a.secondary[k].class_id, b.secondary[k].class_id);
        EXPECT_NEAR(a.secondary[k].score, b.secondary[k].score, 1e-2);
        ++labelled;
      }
    }
  }
  EXPECT_GT(labelled, 0u);
}

// What each classify stage counted, by counter name.
std::map<std::string, std::uint64_t> classify_counters(const FlowResult& result) {
  std::map<std::string, std::uint64_t> counted;
  for (const StageStats& stage : result.stats.stages) {
    if (stage.name.rfind("classify", 0) != 0) continue;
    for (const StageCounter& counter : stage.counters)
      counted[stage.name + ": " + counter.name] = counter.value;
  }
  return counted;
}

// reinfer_interval on the GPU path, whose batches run ahead of their labels' write-back: a track is
// classified exactly as often as on the CPU, where each batch's labels are written before the next
// batch is selected: a track whose classification is still on the GPU takes its labels when they
// are written, not a second classification.
TEST_F(CascadeFlowGpu, ReinferIntervalClassifiesAsOftenAsOnTheCpu) {
  PipelineConfig cfg = tracked({"long.mp4", "long.mp4", "long.mp4"});
  cfg.mux.batch_size = 2;  // more batches in flight than sources' frames per batch
  cfg.models[0].precision = runtime::Precision::kFloat32;
  add_color_model(cfg, {.model = "color", .reinfer_interval = 10});
  cfg.models.back().precision = runtime::Precision::kFloat32;
  Result<FlowResult> cpu = run_flow(cfg, {.device = DeviceChoice::kCpu, .progress = nullptr});
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  const auto cpu_records = records();
  Result<FlowResult> gpu = run_flow(cfg, {.device = DeviceChoice::kGpu, .progress = nullptr});
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  const auto gpu_records = records();
  const std::map<std::string, std::uint64_t> want = classify_counters(*cpu);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(classify_counters(*gpu), want);
  for (const auto& [key, expected] : cpu_records) {
    const ParsedFrameRecord& got = gpu_records.at(key);
    ASSERT_EQ(got.objects->size(), expected.objects->size()) << "frame " << key.second;
    for (std::size_t i = 0; i < got.objects->size(); ++i) {
      const auto& a = (*expected.objects)[i].secondary;
      const auto& b = (*got.objects)[i].secondary;
      ASSERT_EQ(a.size(), b.size()) << "frame " << key.second;
      for (std::size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].class_id, b[k].class_id);
    }
  }
}

}  // namespace
}  // namespace fovea::pipeline
