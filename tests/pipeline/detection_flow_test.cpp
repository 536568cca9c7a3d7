// The detection flow end to end on the CPU: synthetic clips whose objects are known
// (io::ground_truth_boxes) through the detector fovea writes itself (runtime/demo_detector.h), the
// `boxes` parser, NMS, the OSD, per-source and mosaic video, and the metadata. Checks what a user
// would: every object found with its class and a box within a few pixels, nothing else; the
// detector skips the frames an interval says; a model or label file that does not fit is refused
// before anything runs, naming what is wrong; a failing source does not stop the others.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "detection_flow_fixture.h"
#include "io/io_test_util.h"
#include "pipeline/flow.h"
#include "runtime/demo_model.h"

namespace fovea::pipeline {
namespace {

using namespace detect_test;

Result<FlowResult> run_on_cpu(const PipelineConfig& config) {
  return run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr});
}

TEST_F(DetectionFlow, EveryObjectIsFoundWithItsClassLabelAndBox) {
  Result<FlowResult> result = run_on_cpu(config({"a.mp4", "b.mp4"}));
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_FALSE(result->partial());
  const auto lines = records();
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kFramesA + kFramesB));
  io::SyntheticMatch total;
  for (const auto& [key, record] : lines) {
    EXPECT_TRUE(record.inferred);
    ASSERT_TRUE(record.objects.has_value());
    for (const ParsedObject& object : *record.objects) {
      const char* names[] = {"background", "red", "green", "blue"};
      ASSERT_GE(object.class_id, 1);
      ASSERT_LE(object.class_id, 3);
      EXPECT_EQ(object.label, std::string(names[object.class_id]));
      EXPECT_GT(object.score, 0.5f);
    }
    total += io::match_ground_truth(static_cast<int>(record.frame), kWidth, kHeight, detections(record),
                                    kCornerTolerance);
  }
  EXPECT_GT(total.objects, 0);
  EXPECT_EQ(total.matched, total.objects);
  EXPECT_EQ(total.false_positives, 0);
  EXPECT_LE(total.worst_corner_error, kCornerTolerance);
}

TEST_F(DetectionFlow, TheIntervalSkipsFramesPerSource) {
  PipelineConfig cfg = config({"a.mp4", "b.mp4"});
  cfg.detect.interval = 2;
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  for (const auto& [key, record] : records()) {
    const bool inferred = record.frame % 3 == 0;
    EXPECT_EQ(record.inferred, inferred) << "source " << key.first << " frame " << key.second;
    if (!inferred) {
      EXPECT_TRUE(record.objects->empty());
    } else {
      EXPECT_EQ(io::match_ground_truth(static_cast<int>(record.frame), kWidth, kHeight, detections(record),
                                       kCornerTolerance)
                    .false_positives,
                0);
    }
  }
}

TEST_F(DetectionFlow, ZeroAndTooManyDetectionsAreHandled) {
  PipelineConfig none = config({"a.mp4"});
  none.detect.confidence = 0.999999f;
  none.detect.classes = {1};  // red only, and no cell is that sure
  none.detect.top_k = 1;
  Result<FlowResult> result = run_on_cpu(none);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  for (const auto& [key, record] : records()) EXPECT_LE(record.objects->size(), 1u);

  // Every cell of every class proposes a box at confidence 0: thousands per frame, top_k kept, in
  // score order.
  PipelineConfig many = config({"a.mp4"});
  many.detect.confidence = 0.0f;
  many.detect.iou = 1.0f;
  many.detect.top_k = 7;
  result = run_on_cpu(many);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  for (const auto& [key, record] : records()) {
    ASSERT_EQ(record.objects->size(), 7u);
    for (std::size_t i = 1; i < record.objects->size(); ++i) {
      EXPECT_GE((*record.objects)[i - 1].score, (*record.objects)[i].score);
    }
  }
}

TEST_F(DetectionFlow, OsdAndMosaicWriteTheirVideos) {
  PipelineConfig cfg = config({"a.mp4", "b.mp4"});
  cfg.osd.enabled = true;
  cfg.osd.blur_classes = {2};
  cfg.sinks.video = VideoSinkConfig{.output_dir = path("out"), .preset = "ultrafast"};
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  for (const auto& [clip, frames] : {std::pair{"a", kFramesA}, std::pair{"b", kFramesB}}) {
    Result<fovea::testing::DecodeOutcome> out =
        fovea::testing::decode_with_cpu(path(std::string("out/") + clip + ".mp4"));
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(out->frames.size(), static_cast<std::size_t>(frames));
  }

  cfg.sinks.video = VideoSinkConfig{.output_dir = path("mosaic"), .preset = "ultrafast"};
  cfg.sinks.video->mosaic = MosaicConfig{.width = 320, .height = 96};
  result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  ASSERT_EQ(result->outputs.size(), 1u);
  Result<fovea::testing::DecodeOutcome> out = fovea::testing::decode_with_cpu(path("mosaic/mosaic.mp4"));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_FALSE(out->frames.empty());
  EXPECT_EQ(out->frames[0].image.width, 320);
  EXPECT_EQ(out->frames[0].image.height, 96);
  // A picture per round of each batch (each source's next frame): none of either clip's frames is
  // skipped, however many of one source a batch holds (before: one picture per batch, which dropped
  // frames whenever the batch held more than one frame of a source).
  EXPECT_GE(out->frames.size(), static_cast<std::size_t>(std::max(kFramesA, kFramesB)));
  EXPECT_LE(out->frames.size(), static_cast<std::size_t>(kFramesA + kFramesB));
}

TEST_F(DetectionFlow, AModelWhoseOutputsDoNotFitTheParserIsRefusedBeforeTheRun) {
  ASSERT_TRUE(runtime::write_demo_segmentation_model(path("segmenter.onnx")).is_ok());
  PipelineConfig cfg = config({"a.mp4"});
  cfg.models[0].path = path("segmenter.onnx");
  cfg.models[0].labels.reset();
  cfg.models[0].parser = post::DetectParser::kYolo;
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("segmenter.onnx"), std::string::npos) << message;
  EXPECT_NE(message.find("'out'"), std::string::npos) << message;  // the output, by name
  EXPECT_FALSE(std::filesystem::exists(path("detections.jsonl")));
}

TEST_F(DetectionFlow, ALabelFileWithTheWrongCountIsRefusedNamingBothCounts) {
  std::ofstream(path("labels.txt")) << "red\ngreen\nblue\n";
  Result<FlowResult> result = run_on_cpu(config({"a.mp4"}));
  ASSERT_FALSE(result.is_ok());
  const std::string& message = result.status().message();
  EXPECT_NE(message.find('3'), std::string::npos) << message;
  EXPECT_NE(message.find('4'), std::string::npos) << message;
  EXPECT_NE(message.find("labels.txt"), std::string::npos) << message;
}

TEST_F(DetectionFlow, AFailingSourceDoesNotStopTheOthers) {
  std::ofstream(path("garbage.mp4")) << std::string(4096, 'x');
  Result<FlowResult> result = run_on_cpu(config({"garbage.mp4", "a.mp4"}));
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->partial());
  EXPECT_EQ(result->stats.sources[1].frames, static_cast<std::uint64_t>(kFramesA));
  EXPECT_EQ(records().size(), static_cast<std::size_t>(kFramesA));
}

}  // namespace
}  // namespace fovea::pipeline
