// The detection flow on the GPU against the same flow on the CPU: NVDEC, the fused preprocess, the
// CUDA executor, the box decode and NMS on the GPU, the OSD and the mosaic. The demo detector's
// boxes are pooled pixel coordinates and its scores shares of a cell's 16 x 16 pixels. In float32
// both runs must report the same objects with the same classes, boxes within half a frame pixel
// and scores within 1e-3. In float16 a pixel whose hue margin lies at the threshold may flip (the
// input tensor itself is rounded to float16), which moves a box edge by one network pixel and a
// score by 1/256 per pixel: boxes within one network pixel in frame units, scores within 2/256.
// Both runs must find every object of the clip.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/cuda_raii.h"
#include "detection_flow_fixture.h"
#include "io/io_test_util.h"
#include "pipeline/flow.h"

namespace fovea::pipeline {
namespace {

using namespace detect_test;

class DetectionFlowGpu : public DetectionFlow {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    DetectionFlow::SetUp();
  }

  std::map<std::pair<std::size_t, std::int64_t>, ParsedFrameRecord> run(PipelineConfig config,
                                                                        DeviceChoice device,
                                                                        const std::string& name) {
    config.sinks.metadata->path = path(name + ".jsonl");
    Result<FlowResult> result = run_flow(config, {.device = device, .progress = nullptr});
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    std::filesystem::rename(path(name + ".jsonl"), path("detections.jsonl"));
    return records();
  }
};

TEST_F(DetectionFlowGpu, MatchesTheCpuFlowObjectForObject) {
  for (const runtime::Precision precision : {runtime::Precision::kFloat32, runtime::Precision::kFloat16}) {
    const bool half = precision == runtime::Precision::kFloat16;
    const double box_tolerance =
        half ? static_cast<double>(kWidth) / runtime::kDemoDetectorInputWidth + 1e-3 : 0.5;
    const double score_tolerance = half ? 2.0 / 256 : 1e-3;
    PipelineConfig cfg = config({"a.mp4", "b.mp4"});
    cfg.models[0].precision = precision;
    cfg.detect.interval = 1;
    const auto cpu = run(cfg, DeviceChoice::kCpu, "cpu");
    const auto gpu = run(cfg, DeviceChoice::kGpu, "gpu");
    ASSERT_EQ(gpu.size(), cpu.size());
    io::SyntheticMatch total;
    for (const auto& [key, expected] : cpu) {
      const ParsedFrameRecord& got = gpu.at(key);
      EXPECT_EQ(got.inferred, expected.inferred);
      ASSERT_EQ(got.objects->size(), expected.objects->size()) << "frame " << key.second;
      for (std::size_t i = 0; i < got.objects->size(); ++i) {
        const ParsedObject& a = (*expected.objects)[i];
        const ParsedObject& b = (*got.objects)[i];
        EXPECT_EQ(a.class_id, b.class_id);
        EXPECT_NEAR(a.score, b.score, score_tolerance);
        for (int c = 0; c < 4; ++c) EXPECT_NEAR(a.box[c], b.box[c], box_tolerance) << "frame " << key.second;
      }
      if (got.inferred) {
        total += io::match_ground_truth(static_cast<int>(got.frame), kWidth, kHeight, detections(got),
                                        kCornerTolerance);
      }
    }
    EXPECT_EQ(total.matched, total.objects);
    EXPECT_EQ(total.false_positives, 0);
  }
}

TEST_F(DetectionFlowGpu, OsdAndMosaicRunOnTheGpu) {
  PipelineConfig cfg = config({"a.mp4", "b.mp4"});
  cfg.osd.enabled = true;
  cfg.osd.blur_classes = {2};
  cfg.sinks.video = VideoSinkConfig{.output_dir = path("mosaic"), .preset = "ultrafast"};
  cfg.sinks.video->mosaic = MosaicConfig{.width = 320, .height = 96};
  Result<FlowResult> result = run_flow(cfg, {.device = DeviceChoice::kGpu, .progress = nullptr});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  Result<fovea::testing::DecodeOutcome> out = fovea::testing::decode_with_cpu(path("mosaic/mosaic.mp4"));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // A picture per round of each batch: no frame of either clip skipped (as on the CPU).
  EXPECT_GE(out->frames.size(), static_cast<std::size_t>(std::max(kFramesA, kFramesB)));
  EXPECT_LE(out->frames.size(), static_cast<std::size_t>(kFramesA + kFramesB));
  // Every stage but the mux and the sink ran on the GPU and was timed there.
  for (const StageStats& stage : result->stats.stages) EXPECT_GT(stage.latency.count, 0u) << stage.name;
}

}  // namespace
}  // namespace fovea::pipeline
