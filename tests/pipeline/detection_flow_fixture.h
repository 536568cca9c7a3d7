// The detection flow tests' shared set-up: a temporary folder with two small synthetic clips whose
// objects are known (io::ground_truth_boxes), the detector fovea writes itself
// (runtime/demo_detector.h) and its label file, and a configuration that runs them through the
// detection flow with a metadata sink.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "pipeline/frame_record.h"
#include "runtime/demo_detector.h"

namespace fovea::pipeline::detect_test {

constexpr int kWidth = 320;
constexpr int kHeight = 180;
constexpr int kFramesA = 8;
constexpr int kFramesB = 5;
// Network pixels are 320/480 of a frame pixel here, and the detector's boxes are exact to about
// one network pixel (demo_detector.h), so two frame pixels bound a corner's error.
constexpr double kCornerTolerance = 2.0;

class DetectionFlow : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("fovea_detect_") + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(
        io::write_synthetic_clip(path("a.mp4"), {.width = kWidth, .height = kHeight, .frames = kFramesA})
            .is_ok());
    ASSERT_TRUE(io::write_synthetic_clip(path("b.mp4"),
                                         {.width = kWidth, .height = kHeight, .frames = kFramesB, .seed = 2})
                    .is_ok());
    ASSERT_TRUE(runtime::write_demo_detection_model(path("detector.onnx")).is_ok());
    std::ofstream(path("labels.txt")) << "background\nred\ngreen\nblue\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  PipelineConfig config(const std::vector<std::string>& clips) const {
    PipelineConfig config;
    config.flow = FlowKind::kDetection;
    for (const std::string& clip : clips) config.sources.push_back({.uri = path(clip)});
    config.mux.batch_size = 3;
    ModelConfig model{.name = "detector", .path = path("detector.onnx")};
    model.mean = runtime::kDemoDetectorMean;
    model.std = runtime::kDemoDetectorStd;
    model.input_width = runtime::kDemoDetectorInputWidth;
    model.input_height = runtime::kDemoDetectorInputHeight;
    model.parser = post::DetectParser::kBoxes;
    model.labels = path("labels.txt");
    config.models = {model};
    config.detect.confidence = 0.5f;
    config.sinks.metadata = MetadataSinkConfig{.path = path("detections.jsonl")};
    config.stats.progress = false;
    return config;
  }

  // Every line of the metadata, by (source, frame).
  std::map<std::pair<std::size_t, std::int64_t>, ParsedFrameRecord> records() const {
    std::map<std::pair<std::size_t, std::int64_t>, ParsedFrameRecord> out;
    std::ifstream file(path("detections.jsonl"));
    for (std::string line; std::getline(file, line);) {
      Result<ParsedFrameRecord> record = parse_frame_record(line);
      EXPECT_TRUE(record.is_ok()) << record.status().to_string() << "\n" << line;
      if (!record.is_ok()) continue;
      const auto key = std::pair{record->source_id, record->frame};
      EXPECT_EQ(out.count(key), 0u) << "frame written twice";
      out.emplace(key, std::move(*record));
    }
    return out;
  }

  static std::vector<io::SyntheticObject> detections(const ParsedFrameRecord& record) {
    std::vector<io::SyntheticObject> found;
    for (const ParsedObject& object : record.objects.value_or(std::vector<ParsedObject>{})) {
      found.push_back({object.class_id, Box{object.box[0], object.box[1], object.box[2], object.box[3]}});
    }
    return found;
  }

  std::filesystem::path dir_;
};

}  // namespace fovea::pipeline::detect_test
