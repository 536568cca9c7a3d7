// The segmentation flow end to end on the CPU: the demo's synthetic clips and model, two sources,
// a video and a metadata sink. Checks what a user would: every frame comes out once, with its
// timestamp, the subjects sharp and the background blurred; a failing source does not stop the
// others; Ctrl-C drains and finalizes; a slow sink holds the sources back.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "flow_test_util.h"
#include "image/blur.h"
#include "io/io_test_util.h"
#include "io/synthetic_clip.h"
#include "pipeline/flow.h"

namespace fovea::pipeline {
namespace {

using namespace flow_test;

int count_lines(const std::filesystem::path& path) {
  std::ifstream file(path);
  int lines = 0;
  for (std::string line; std::getline(file, line);) ++lines;
  return lines;
}

std::vector<std::int64_t> frame_pts(const std::vector<Frame>& frames) {
  std::vector<std::int64_t> pts;
  for (const Frame& frame : frames) pts.push_back(frame.pts);
  return pts;
}

// Mean absolute luma difference over the pixels where `select` is true.
double mean_abs_diff(const ImageView& a, const ImageView& b, const std::vector<bool>& select) {
  double sum = 0;
  std::int64_t count = 0;
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      if (!select[static_cast<std::size_t>(y) * a.width + x]) continue;
      sum += std::abs(static_cast<int>(a.row(0, y)[x]) - static_cast<int>(b.row(0, y)[x]));
      ++count;
    }
  }
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

// Pixels at least `margin` away from any pixel whose mask value is `far_from` (Chebyshev distance).
std::vector<bool> far_from(const std::vector<std::uint8_t>& mask, int width, int height, std::uint8_t value,
                           int margin) {
  std::vector<bool> out(mask.size(), true);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      if (mask[static_cast<std::size_t>(y) * width + x] != value) continue;
      for (int dy = -margin; dy <= margin; ++dy) {
        for (int dx = -margin; dx <= margin; ++dx) {
          const int yy = y + dy, xx = x + dx;
          if (yy >= 0 && yy < height && xx >= 0 && xx < width)
            out[static_cast<std::size_t>(yy) * width + xx] = false;
        }
      }
    }
  }
  return out;
}

TEST_F(FlowFixture, TwoSourcesComeOutWholeWithTheirTimestampsAndTheBackgroundBlurred) {
  PipelineConfig config = base_config({clip_a(), clip_b()});
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_FALSE(result->partial());
  EXPECT_FALSE(result->interrupted);
  EXPECT_EQ(result->stats.total_frames(), static_cast<std::uint64_t>(kFramesA + kFramesB));
  ASSERT_EQ(result->stats.sources.size(), 2u);
  EXPECT_EQ(result->stats.sources[0].frames, static_cast<std::uint64_t>(kFramesA));
  EXPECT_EQ(result->stats.sources[1].frames, static_cast<std::uint64_t>(kFramesB));
  EXPECT_EQ(result->stats.sources[0].decoder, "cpu");
  EXPECT_EQ(count_lines(dir() / "frames.jsonl"), kFramesA + kFramesB);

  for (const auto& [clip, frames] : {std::pair{clip_a(), kFramesA}, std::pair{clip_b(), kFramesB}}) {
    const std::string output =
        (dir() / "out" / (std::filesystem::path(clip).stem().string() + ".mp4")).string();
    Result<fovea::testing::DecodeOutcome> in = fovea::testing::decode_with_cpu(clip);
    Result<fovea::testing::DecodeOutcome> out = fovea::testing::decode_with_cpu(output);
    ASSERT_TRUE(in.is_ok() && out.is_ok()) << output;
    ASSERT_EQ(out->frames.size(), static_cast<std::size_t>(frames)) << output;
    EXPECT_EQ(frame_pts(out->frames), frame_pts(in->frames)) << output;
  }

  // Frame by frame: inside the subjects the output is the input (up to two lossy encodes); on the
  // background, away from the subjects, it is the input blurred the way the flow was asked to.
  Result<fovea::testing::DecodeOutcome> in = fovea::testing::decode_with_cpu(clip_a());
  Result<fovea::testing::DecodeOutcome> out =
      fovea::testing::decode_with_cpu((dir() / "out" / "a.mp4").string());
  ASSERT_TRUE(in.is_ok() && out.is_ok());
  for (int i = 0; i < kFramesA; ++i) {
    const ImageView& input = in->frames[i].image;
    const ImageView& output = out->frames[i].image;
    const std::vector<std::uint8_t> truth = io::ground_truth_mask(i, kWidth, kHeight);
    // Margins: the demo model's 5x5 smoothing rounds corners by a pixel or two, and a background
    // pixel is fully blurred only beyond the blur's radius from the subject (whose sharp pixels
    // would otherwise enter its blur).
    const std::vector<bool> subject = far_from(truth, kWidth, kHeight, 0, 3);
    const std::vector<bool> background = far_from(truth, kWidth, kHeight, 1, kBlur / 2 + 3);
    Frame blurred = blur_luma(in->frames[i]);
    const double subject_change = mean_abs_diff(input, output, subject);
    const double background_change = mean_abs_diff(input, output, background);
    const double background_vs_blur = mean_abs_diff(blurred.image, output, background);
    EXPECT_LT(subject_change, 4.0) << "frame " << i;
    EXPECT_GT(background_change, 6.0) << "frame " << i << ": the background looks untouched";
    EXPECT_LT(background_vs_blur, background_change / 3) << "frame " << i;
  }

  std::ifstream report_file(dir() / "report.json");
  const nlohmann::json report = nlohmann::json::parse(report_file);
  EXPECT_EQ(report["total"]["frames"], kFramesA + kFramesB);
  EXPECT_EQ(report["outputs"].size(), 2u);
  // The first batch came out after the start and before the end, with at most a batch of frames.
  EXPECT_GT(result->stats.first_output_s, 0.0);
  EXPECT_LT(result->stats.first_output_s, result->stats.elapsed_s);
  EXPECT_GE(result->stats.first_output_frames, 1u);
  EXPECT_LE(result->stats.first_output_frames, static_cast<std::uint64_t>(config.mux.batch_size));
  EXPECT_EQ(report["startup"]["first_output_s"], result->stats.first_output_s);
}

TEST_F(FlowFixture, AFailingSourceIsReportedAndTheOthersComeOutWhole) {
  const std::string missing = (dir() / "missing.mp4").string();
  const std::string garbage = (dir() / "garbage.mp4").string();
  std::ofstream(garbage) << std::string(4096, 'x');
  PipelineConfig config = base_config({missing, clip_a(), garbage});
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->partial());
  EXPECT_EQ(result->stats.failed_sources(), 2u);
  EXPECT_NE(result->stats.sources[0].error.find("missing.mp4"), std::string::npos)
      << result->stats.sources[0].error;
  EXPECT_NE(result->stats.sources[2].error.find("garbage.mp4"), std::string::npos)
      << result->stats.sources[2].error;
  EXPECT_EQ(result->stats.sources[1].frames, static_cast<std::uint64_t>(kFramesA));
  Result<fovea::testing::DecodeOutcome> out =
      fovea::testing::decode_with_cpu((dir() / "out" / "a.mp4").string());
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->frames.size(), static_cast<std::size_t>(kFramesA));
}

// Ctrl-C during an endless (looping) run: the flow drains what is in flight and every frame that
// left the mux is in the finalized output file.
TEST_F(FlowFixture, InterruptDrainsAndFinalizesTheOutputs) {
  PipelineConfig config = base_config({clip_a()});
  config.sources[0].loop = true;
  std::atomic<bool> interrupt{false};
  FlowOptions options{.device = DeviceChoice::kCpu, .interrupt = &interrupt, .progress = nullptr};
  // Triggered by progress, not by a time: once a few frames are through, "press Ctrl-C".
  options.on_progress = [&](const PipelineStats& stats) {
    if (stats.total_frames() >= static_cast<std::uint64_t>(2 * kFramesA)) interrupt = true;
  };
  Result<FlowResult> result = run_flow(config, options);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->interrupted);
  const std::uint64_t frames = result->stats.total_frames();
  EXPECT_GE(frames, static_cast<std::uint64_t>(2 * kFramesA));
  Result<fovea::testing::DecodeOutcome> out =
      fovea::testing::decode_with_cpu((dir() / "out" / "a.mp4").string());
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->frames.size(), frames);
  ASSERT_EQ(result->outputs.size(), 1u);
  EXPECT_EQ(result->outputs[0].frames, static_cast<std::int64_t>(frames));
  // Timestamps keep increasing across the loops.
  for (std::size_t i = 1; i < out->frames.size(); ++i) EXPECT_GT(out->frames[i].pts, out->frames[i - 1].pts);
}

// A slow encoder (x264's slowest preset) bounds the whole flow: whenever the flow is looked at, the
// looping source has decoded at most a fixed number of frames more than the sink has taken (the
// slots bound the batches in flight, the mux's queue the frames waiting), so memory does not grow.
TEST_F(FlowFixture, ASlowSinkHoldsTheSourcesBack) {
  PipelineConfig config = base_config({clip_a()});
  config.sources[0].loop = true;
  config.sinks.video->preset = "placebo";
  std::atomic<bool> interrupt{false};
  std::uint64_t most_ahead = 0;
  int looks = 0;
  FlowOptions options{.device = DeviceChoice::kCpu, .interrupt = &interrupt, .progress = nullptr};
  options.on_progress = [&](const PipelineStats& stats) {
    const std::uint64_t taken = stats.stages.back().latency.count * static_cast<std::uint64_t>(kBatch);
    const std::uint64_t decoded = stats.sources[0].decoded;
    most_ahead = std::max(most_ahead, decoded > taken ? decoded - taken : 0);
    // Enough looks for a free-running source to have raced far ahead.
    if (++looks == 30) interrupt = true;
  };
  Result<FlowResult> result = run_flow(config, options);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  // Six slots of kBatch frames, the mux's four-frame queue, and what the source holds between its
  // decoder and the mux: a packet's frames, up to a whole flush at the end of each loop (the
  // frames a frame-threaded decoder holds, one per thread, plus B-frame reordering). A source
  // running free would be thousands of frames ahead after 30 looks (this clip decodes at
  // thousands of frames per second).
  const std::uint64_t flush = std::max(16u, std::thread::hardware_concurrency() + 4);
  EXPECT_LE(most_ahead, static_cast<std::uint64_t>(6 * kBatch + 4) + flush);
  EXPECT_GT(result->stats.total_frames(), 0u);
  EXPECT_EQ(result->outputs[0].frames, static_cast<std::int64_t>(result->stats.total_frames()));
}

TEST_F(FlowFixture, AModelThatIsNotASegmentationModelIsRefusedByName) {
  PipelineConfig config = base_config({clip_a()});
  config.models[0].path = (dir() / "nope.onnx").string();
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr});
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("nope.onnx"), std::string::npos) << result.status().to_string();
}

TEST(SourceNames, AreFileStemsMadeUnique) {
  EXPECT_EQ(
      source_names({{.uri = "/a/cam.mp4"}, {.uri = "/b/cam.mp4"}, {.uri = "cam_1.mkv"}, {.uri = "x.ts"}}),
      (std::vector<std::string>{"cam", "cam_1", "cam_1_1", "x"}));
}

}  // namespace
}  // namespace fovea::pipeline
