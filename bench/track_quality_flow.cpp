// The trackers' quality through the detection flow (pipeline/track_quality.h), for docs/perf.md:
// the demo detector (runtime/demo_detector.h) on a synthetic clip, each tracker at detector
// intervals 0, 1, 2 and 4, scored with IDF1, MOTA and HOTA from the flow's metadata against the
// clip's ground truth. Prints a Markdown table; tests/pipeline/track_quality_flow_test.cpp checks
// the same report on a shorter clip.
//
//   track_quality_flow [--frames 300] [--width 640] [--height 360] [--device auto|cpu|gpu]
//
// The clip, the detector and the metadata go to a temporary folder, removed at the end.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "pipeline/track_quality.h"
#include "runtime/demo_detector.h"

namespace {

using namespace fovea;

// The detection flow of the demo detector over `clip`, its metadata to dir/objects.jsonl.
pipeline::PipelineConfig demo_flow(const std::filesystem::path& dir, const std::string& clip) {
  pipeline::PipelineConfig config;
  config.flow = pipeline::FlowKind::kDetection;
  config.sources.push_back({.uri = clip});
  pipeline::ModelConfig model{.name = "detector", .path = (dir / "detector.onnx").string()};
  model.mean = runtime::kDemoDetectorMean;
  model.std = runtime::kDemoDetectorStd;
  model.input_width = runtime::kDemoDetectorInputWidth;
  model.input_height = runtime::kDemoDetectorInputHeight;
  model.parser = post::DetectParser::kBoxes;
  model.labels = (dir / "labels.txt").string();
  config.models = {model};
  config.detect.confidence = 0.5f;
  config.sinks.metadata = pipeline::MetadataSinkConfig{.path = (dir / "objects.jsonl").string()};
  config.stats.progress = false;
  return config;
}

Status run(int frames, int width, int height, pipeline::DeviceChoice device,
           const std::filesystem::path& dir) {
  const std::string clip = (dir / "clip.mp4").string();
  FOVEA_TRY(io::write_synthetic_clip(clip, {.width = width, .height = height, .frames = frames}));
  FOVEA_TRY(runtime::write_demo_detection_model(dir / "detector.onnx"));
  std::ofstream(dir / "labels.txt") << "background\nred\ngreen\nblue\n";
  constexpr std::array kTrackers{track::TrackerKind::kIou, track::TrackerKind::kSort,
                                 track::TrackerKind::kByteTrack};
  constexpr std::array kIntervals{0, 1, 2, 4};
  FOVEA_ASSIGN_OR_RETURN(const std::vector<track::QualityRow> rows,
                         pipeline::flow_quality_report(
                             demo_flow(dir, clip), pipeline::synthetic_clip_truth(frames, width, height),
                             kTrackers, kIntervals, {.device = device, .progress = nullptr}));
  fmt::print("Demo detector through the detection flow, synthetic clip of {} frames at {}x{}:\n\n{}", frames,
             width, height, pipeline::format_flow_quality_table(rows));
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The trackers' quality through the detection flow (MOTA, IDF1, HOTA)"};
  int frames = 300;
  int width = 640;
  int height = 360;
  pipeline::DeviceChoice device = pipeline::DeviceChoice::kAuto;
  const std::map<std::string, pipeline::DeviceChoice> devices{{"auto", pipeline::DeviceChoice::kAuto},
                                                              {"cpu", pipeline::DeviceChoice::kCpu},
                                                              {"gpu", pipeline::DeviceChoice::kGpu}};
  app.add_option("--frames", frames, "clip length")->check(CLI::PositiveNumber);
  app.add_option("--width", width, "clip width (even)");
  app.add_option("--height", height, "clip height (even)");
  app.add_option("--device", device, "where the flow runs")->transform(CLI::CheckedTransformer(devices));
  CLI11_PARSE(app, argc, argv);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("fovea_track_quality_{}", ::getpid());
  std::filesystem::create_directories(dir);
  const Status status = run(frames, width, height, device, dir);
  std::filesystem::remove_all(dir);
  if (!status.is_ok()) {
    std::fprintf(stderr, "track_quality_flow: %s\n", status.to_string().c_str());
    return 1;
  }
  return 0;
}
