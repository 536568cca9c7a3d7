// Video sources on the CPU path: tiny synthetic clips through VideoSources into a StreamMux with
// batches of one, taken in the test's thread. Frame content is compared through a hash of the
// NV12 samples against a plain run of the same clip, so start, duration and loops are checked
// frame by frame.
#include "pipeline/video_source.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/decoder.h"
#include "io/demuxer.h"
#include "io/synthetic_clip.h"
#include "support/test_media.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {
namespace {

constexpr int kWidth = 64;
constexpr int kHeight = 48;
constexpr int kFrames = 12;
constexpr double kFrameUs = 1'000'000.0 / 30;  // the clip's 30 fps

// FNV-1a over the NV12 samples (not the pitch padding), read from host memory.
std::uint64_t hash_nv12(const ImageView& image) {
  std::uint64_t hash = 1469598103934665603ull;
  for (int p = 0; p < 2; ++p) {
    for (int y = 0; y < (p == 0 ? image.height : image.height / 2); ++y) {
      const std::uint8_t* row = image.row(p, y);
      for (int x = 0; x < image.width; ++x) hash = (hash ^ row[x]) * 1099511628211ull;
    }
  }
  return hash;
}

// What the test keeps of a frame: its metadata and a hash of its samples (the frame itself goes
// back to its pool at once, as a pipeline's would).
struct Received {
  std::size_t source = 0;
  std::int64_t pts_us = 0;
  std::int64_t pts = 0;
  Rational time_base;
  PixelFormat format = PixelFormat::kNV12;
  int width = 0;
  int height = 0;
  MemoryKind memory = MemoryKind::kHost;
  bool has_ready = false;
  std::uint64_t hash = 0;
  std::vector<std::uint8_t> luma;  // width x height, unpadded
};

std::vector<std::uint8_t> copy_luma(const ImageView& image) {
  std::vector<std::uint8_t> luma;
  for (int y = 0; y < image.height; ++y)
    luma.insert(luma.end(), image.row(0, y), image.row(0, y) + image.width);
  return luma;
}

struct RunResult {
  std::vector<Received> frames;
  std::vector<SourceStats> stats;
  std::vector<SourceReport> reports;
  std::vector<Received> of(std::size_t source) const {
    std::vector<Received> out;
    for (const Received& frame : frames)
      if (frame.source == source) out.push_back(frame);
    return out;
  }
};

// Every frame the cpu decoder can produce from `path`: read to the end or to the first read error,
// then drained. `before_error` counts those received before that error, which is all a consumer
// that stops at the error gets.
struct Decodable {
  std::size_t total = 0;
  std::size_t before_error = 0;
  bool read_failed = false;
};

Decodable count_decodable(const std::string& path) {
  Decodable decodable;
  Result<std::unique_ptr<io::Demuxer>> demuxer = io::Demuxer::open(path);
  EXPECT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  if (!demuxer.is_ok()) return decodable;
  Result<std::unique_ptr<io::Decoder>> decoder = io::open_cpu_decoder((*demuxer)->info(), {});
  EXPECT_TRUE(decoder.is_ok()) << decoder.status().to_string();
  if (!decoder.is_ok()) return decodable;
  const auto count = [&decodable](Frame&&) { ++decodable.total; };
  io::Packet packet;
  while (true) {
    const Result<bool> got = (*demuxer)->read(packet);
    if (!got.is_ok() || !*got) {
      decodable.read_failed = !got.is_ok();
      decodable.before_error = decodable.total;
      EXPECT_TRUE(io::finish_and_receive(**decoder, count).is_ok());
      return decodable;
    }
    EXPECT_TRUE(io::send_and_receive(**decoder, packet, count).is_ok());
  }
}

VideoSourceOptions cpu_options(int width = kWidth, int height = kHeight) {
  return {.width = width, .height = height, .gpu = false};
}

// Runs `configs` to their end, or asks the mux to stop once `stop_after` frames arrived (what is
// queued then still arrives).
RunResult run_sources(const std::vector<SourceConfig>& configs, const VideoSourceOptions& options,
                      std::optional<std::size_t> stop_after = std::nullopt) {
  std::vector<std::string> names;
  for (const SourceConfig& config : configs) names.push_back(config.uri);
  StreamMux<SourceFrame> mux({.batch_size = 1}, names);
  VideoSources sources(configs, names, options, mux);
  sources.start();
  RunResult result;
  while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) {
    for (const MuxFrame<SourceFrame>& frame : batch->frames) {
      const Frame& f = frame.payload.frame;
      EXPECT_EQ(frame.pts_us, frame.payload.pts_us);
      result.frames.push_back(
          {.source = frame.source,
           .pts_us = frame.payload.pts_us,
           .pts = f.pts,
           .time_base = frame.payload.time_base,
           .format = f.image.format,
           .width = f.image.width,
           .height = f.image.height,
           .memory = f.image.memory,
           .has_ready = frame.payload.ready != nullptr,
           .hash = f.image.memory == MemoryKind::kHost ? hash_nv12(f.image) : 0,
           .luma = f.image.memory == MemoryKind::kHost ? copy_luma(f.image) : std::vector<std::uint8_t>()});
    }
    if (stop_after && result.frames.size() == *stop_after) mux.request_stop();
  }
  sources.join();
  result.stats = mux.source_stats();
  for (const std::optional<SourceReport>& report : sources.reports())
    result.reports.push_back(report.value());
  return result;
}

class VideoSourcesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::test_temp_dir());
    clip_ = new std::string(*dir_ + "/clip.mp4");
    const Status written =
        io::write_synthetic_clip(*clip_, {.width = kWidth, .height = kHeight, .frames = kFrames});
    ASSERT_TRUE(written.is_ok()) << written.to_string();
    reference_ = new std::vector<Received>(run_sources({{.uri = *clip_}}, cpu_options()).frames);
    ASSERT_EQ(reference_->size(), static_cast<std::size_t>(kFrames));
    // Bad inputs: half an mkv (which, unlike an mp4 with its index at the end, opens) and an mp4
    // with bits flipped past its header.
    const std::string mkv = *dir_ + "/clip.mkv";
    ASSERT_TRUE(
        io::write_synthetic_clip(mkv, {.width = kWidth, .height = kHeight, .frames = kFrames}).is_ok());
    ASSERT_TRUE(testing::copy_truncated(mkv, truncated_mkv(), 0.6).is_ok());
    ASSERT_TRUE(testing::copy_bit_flipped(*clip_, bit_flipped_mp4(), 40, 64, 7).is_ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete reference_;
    delete clip_;
    delete dir_;
  }

  static const std::string& clip() { return *clip_; }
  static std::uint64_t reference(std::size_t frame) { return reference_->at(frame).hash; }
  static const std::vector<std::uint8_t>& reference_luma(std::size_t frame) {
    return reference_->at(frame).luma;
  }
  static std::string truncated_mkv() { return *dir_ + "/truncated.mkv"; }
  static std::string bit_flipped_mp4() { return *dir_ + "/bit_flipped.mp4"; }
  static std::string write_file(const std::string& name, const std::string& bytes) {
    const std::string path = *dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // The first frame at `first_us` (within `first_tolerance_us`), the others one frame duration
  // apart each (pts_us is rounded to 1 us), and frame.pts in time_base units the same time as pts_us.
  static void expect_steady_timeline(const std::vector<Received>& frames, double first_us,
                                     double first_tolerance_us = 1.0) {
    ASSERT_FALSE(frames.empty());
    EXPECT_NEAR(static_cast<double>(frames[0].pts_us), first_us, first_tolerance_us);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_NEAR(static_cast<double>(frames[i].pts_us - frames[0].pts_us), static_cast<double>(i) * kFrameUs,
                  1.0)
          << "frame " << i;
      const Rational tb = frames[i].time_base;
      ASSERT_GT(tb.num, 0);
      ASSERT_GT(tb.den, 0);
      EXPECT_NEAR(static_cast<double>(frames[i].pts) * tb.num / tb.den * 1e6,
                  static_cast<double>(frames[i].pts_us), 1.0)
          << "frame " << i;
    }
  }

  // One tick of the clip's time base in microseconds: `start` is rounded to a tick.
  static double tick_us(const Received& frame) { return 1e6 * frame.time_base.num / frame.time_base.den; }

 private:
  static inline std::string* dir_ = nullptr;
  static inline std::string* clip_ = nullptr;
  static inline std::vector<Received>* reference_ = nullptr;  // every frame of a plain run
};

TEST_F(VideoSourcesTest, DeliversEveryFrameAsHostNv12AtTheMuxSize) {
  const RunResult run = run_sources({{.uri = clip()}}, cpu_options());
  ASSERT_EQ(run.frames.size(), static_cast<std::size_t>(kFrames));
  for (const Received& frame : run.frames) {
    EXPECT_EQ(frame.format, PixelFormat::kNV12);
    EXPECT_EQ(frame.width, kWidth);
    EXPECT_EQ(frame.height, kHeight);
    EXPECT_EQ(frame.memory, MemoryKind::kHost);
    EXPECT_FALSE(frame.has_ready);
  }
  expect_steady_timeline(run.frames, 0.0);
  ASSERT_EQ(run.stats.size(), 1u);
  EXPECT_TRUE(run.stats[0].ended);
  EXPECT_FALSE(run.stats[0].failed) << run.stats[0].error;
  EXPECT_EQ(run.stats[0].frames, static_cast<std::uint64_t>(kFrames));
  ASSERT_EQ(run.reports.size(), 1u);
  const SourceReport& report = run.reports[0];
  EXPECT_EQ(report.uri, clip());
  EXPECT_EQ(report.backend, io::DecoderBackend::kCpu);
  EXPECT_EQ(report.fallback_reason, "");
  EXPECT_EQ(report.frame_rate.num, 30);
  EXPECT_EQ(report.frame_rate.den, 1);
  EXPECT_EQ(report.loops, 1);
  EXPECT_EQ(report.frames_decoded, kFrames);
  EXPECT_EQ(report.frames_damaged, 0);
}

TEST_F(VideoSourcesTest, ScalesFramesToTheMuxSize) {
  for (const auto& [width, height] : {std::pair{32, 24}, std::pair{96, 72}}) {
    const RunResult run = run_sources({{.uri = clip()}}, cpu_options(width, height));
    ASSERT_EQ(run.frames.size(), static_cast<std::size_t>(kFrames)) << width << "x" << height;
    for (const Received& frame : run.frames) {
      EXPECT_EQ(frame.format, PixelFormat::kNV12);
      EXPECT_EQ(frame.width, width);
      EXPECT_EQ(frame.height, height);
    }
    expect_steady_timeline(run.frames, 0.0);
  }
}

TEST_F(VideoSourcesTest, StartAndDurationSelectTheFrames) {
  // Frames sit at k/30 s: start 0.09 s keeps frame 3 (0.1 s) on, and the end at 0.24 s keeps
  // frames up to 7 (0.233 s). Neither bound falls on a frame, so rounding cannot move them.
  const RunResult run = run_sources({{.uri = clip(), .start = 0.09, .duration = 0.15}}, cpu_options());
  ASSERT_EQ(run.frames.size(), 5u);
  for (std::size_t i = 0; i < run.frames.size(); ++i) {
    EXPECT_EQ(run.frames[i].hash, reference(3 + i)) << "frame " << i;
  }
  // The timeline starts at `start` (rounded to the time base): frame 3 is 0.1 - 0.09 s after it.
  expect_steady_timeline(run.frames, 3 * kFrameUs - 90'000, tick_us(run.frames[0]));
  EXPECT_FALSE(run.stats[0].failed) << run.stats[0].error;
  EXPECT_EQ(run.reports[0].loops, 1);
}

// An MPEG-TS starts past 0 (its muxer's delay: 1.4 s from ffmpeg's command line, two frames of
// B-frame delay here): start and duration count from the stream's first timestamp (before, they
// counted from 0 and kept two frames too early; with ffmpeg's 1.4 s, every frame or none), and
// its coarse seek cannot land past the start (its one keyframe: before, the frames after the seek
// were decoded without it, green).
TEST_F(VideoSourcesTest, StartAndDurationCountFromAStreamsFirstTimestamp) {
  const std::string ts = testing::test_temp_dir() + "/clip.ts";
  ASSERT_TRUE(io::write_synthetic_clip(ts, {.width = kWidth, .height = kHeight, .frames = kFrames}).is_ok());
  Result<std::unique_ptr<io::Demuxer>> demuxer = io::Demuxer::open(ts);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  ASSERT_GT((*demuxer)->info().start_s, 0.05) << "the TS muxer's delay is the case under test";
  const RunResult whole = run_sources({{.uri = ts}}, cpu_options());
  ASSERT_EQ(whole.frames.size(), static_cast<std::size_t>(kFrames));
  const RunResult run = run_sources({{.uri = ts, .start = 0.09, .duration = 0.15}}, cpu_options());
  ASSERT_EQ(run.frames.size(), 5u);
  for (std::size_t i = 0; i < run.frames.size(); ++i) {
    EXPECT_EQ(run.frames[i].hash, whole.frames[3 + i].hash) << "frame " << i;
  }
  EXPECT_FALSE(run.stats[0].failed) << run.stats[0].error;
}

TEST_F(VideoSourcesTest, LoopingKeepsTimestampsIncreasing) {
  // Two whole passes and a few frames of the third, then a stop.
  const std::size_t wanted = 2 * kFrames + 3;
  const RunResult run = run_sources({{.uri = clip(), .loop = true}}, cpu_options(), wanted);
  ASSERT_GE(run.frames.size(), wanted);
  for (std::size_t i = 0; i < run.frames.size(); ++i) {
    EXPECT_EQ(run.frames[i].hash, reference(i % kFrames)) << "frame " << i;
  }
  // One frame duration between the last frame of a pass and the first of the next.
  expect_steady_timeline(run.frames, 0.0);
  EXPECT_TRUE(run.stats[0].ended);
  EXPECT_FALSE(run.stats[0].failed) << run.stats[0].error;
  EXPECT_GE(run.reports[0].loops, 2);
  EXPECT_GE(run.reports[0].frames_decoded, static_cast<std::int64_t>(wanted));
}

TEST_F(VideoSourcesTest, LoopingWithinStartAndDuration) {
  // start 0.05 s and duration 0.14 s: frames 2..5 (0.067 to 0.167 s), three passes of them.
  const std::size_t wanted = 3 * 4;
  const RunResult run =
      run_sources({{.uri = clip(), .loop = true, .start = 0.05, .duration = 0.14}}, cpu_options(), wanted);
  ASSERT_GE(run.frames.size(), wanted);
  for (std::size_t i = 0; i < run.frames.size(); ++i) {
    EXPECT_EQ(run.frames[i].hash, reference(2 + i % 4)) << "frame " << i;
  }
  expect_steady_timeline(run.frames, 2 * kFrameUs - 50'000, tick_us(run.frames[0]));
  EXPECT_GE(run.reports[0].loops, 2);
}

TEST_F(VideoSourcesTest, StartPastTheEndFailsTheSourceNamingIt) {
  const RunResult run = run_sources({{.uri = clip(), .loop = true, .start = 5.0}}, cpu_options());
  EXPECT_TRUE(run.frames.empty());
  ASSERT_TRUE(run.stats[0].failed);
  EXPECT_NE(run.stats[0].error.find(clip()), std::string::npos) << run.stats[0].error;
  EXPECT_NE(run.stats[0].error.find("start"), std::string::npos) << run.stats[0].error;
}

TEST_F(VideoSourcesTest, BadSourcesFailAloneWhileAGoodOneDeliversEverything) {
  const std::string missing = clip() + ".missing.mp4";
  const std::string garbage = write_file("garbage.mp4", std::string(4096, '\x5a'));
  const std::string empty = write_file("empty.mp4", "");
  const std::string truncated = clip() + ".truncated.mp4";
  ASSERT_TRUE(testing::copy_truncated(clip(), truncated, 0.5).is_ok());
  const std::vector<std::string> uris = {missing,   garbage,         clip(),           empty,
                                         truncated, truncated_mkv(), bit_flipped_mp4()};
  std::vector<SourceConfig> configs;
  for (const std::string& uri : uris) configs.push_back({.uri = uri});
  const RunResult run = run_sources(configs, cpu_options());

  EXPECT_EQ(run.of(2).size(), static_cast<std::size_t>(kFrames));
  EXPECT_FALSE(run.stats[2].failed) << run.stats[2].error;
  // These cannot be opened (the truncated mp4 lost its index at the end).
  for (const std::size_t bad : {0u, 1u, 3u, 4u}) {
    ASSERT_TRUE(run.stats[bad].failed) << uris[bad];
    // Named once, as the other errors are.
    const std::string& error = run.stats[bad].error;
    EXPECT_NE(error.find(uris[bad]), std::string::npos) << error;
    EXPECT_EQ(error.find(uris[bad]), error.rfind(uris[bad])) << error;
    EXPECT_TRUE(run.of(bad).empty());
  }
  // Damaged but readable: they deliver what they can, at the mux size, and end or fail naming
  // themselves.
  for (const std::size_t damaged : {5u, 6u}) {
    EXPECT_TRUE(run.stats[damaged].ended) << uris[damaged];
    EXPECT_LE(run.of(damaged).size(), static_cast<std::size_t>(kFrames)) << uris[damaged];
    for (const Received& frame : run.of(damaged)) {
      EXPECT_EQ(frame.width, kWidth);
      EXPECT_EQ(frame.height, kHeight);
    }
    if (run.stats[damaged].failed) {
      EXPECT_NE(run.stats[damaged].error.find(uris[damaged]), std::string::npos) << run.stats[damaged].error;
    }
  }
  EXPECT_FALSE(run.of(5).empty()) << "the first half of the mkv decodes";
}

// A faststart mp4 cut short opens (its index comes first) and fails to read where its data ends
// (FFmpeg: "partial file"). The frames the decoder held then are delivered before the source fails
// (issue 18: segment wrote 62 of the 67 frames FFmpeg decodes).
TEST_F(VideoSourcesTest, TruncatedFileDeliversEveryFrameTheDecoderHeld) {
  const std::string dir = testing::test_temp_dir();
  testing::ClipSpec spec;
  spec.width = 128;
  spec.height = 96;
  const Result<std::string> mp4 = testing::write_clip(dir + "/clip.mp4", spec);
  ASSERT_TRUE(mp4.is_ok()) << mp4.status().to_string();
  ASSERT_TRUE(testing::copy_faststart(*mp4, dir + "/faststart.mp4").is_ok());
  const std::string truncated = dir + "/truncated.mp4";
  ASSERT_TRUE(testing::copy_truncated(dir + "/faststart.mp4", truncated, 0.55).is_ok());
  const Decodable decodable = count_decodable(truncated);
  ASSERT_TRUE(decodable.read_failed) << "the cut must fail a read, not end the stream";
  ASSERT_GT(decodable.total, decodable.before_error) << "the decoder must hold frames at the error";

  const RunResult run = run_sources({{.uri = truncated}}, cpu_options(128, 96));
  EXPECT_EQ(run.frames.size(), decodable.total);
  ASSERT_TRUE(run.stats[0].failed);
  EXPECT_NE(run.stats[0].error.find(truncated), std::string::npos) << run.stats[0].error;
}

// Two segments of different sizes in one MPEG-TS, as cameras and re-streamers produce (issue 18):
// every frame arrives at the mux size, the segment already at it unscaled.
TEST_F(VideoSourcesTest, ResolutionChangeMidStreamKeepsTheMuxSize) {
  const std::string dir = testing::test_temp_dir();
  // Without B-frames: the TS muxer shifts each file's timestamps by its own B-frame delay, which
  // would move the second segment back over the end of the first.
  testing::ClipSpec first{.width = kWidth, .height = kHeight, .frames = kFrames, .max_b_frames = 0};
  testing::ClipSpec second{.width = 96, .height = 72, .frames = kFrames, .max_b_frames = 0};
  const Result<std::string> change = testing::write_resolution_change_ts(dir + "/change.ts", first, second);
  ASSERT_TRUE(change.is_ok()) << change.status().to_string();
  // The first segment alone: the same bytes (x264 may not encode the same frames twice the same).
  const RunResult unchanged = run_sources({{.uri = *change + ".first.ts"}}, cpu_options());
  ASSERT_EQ(unchanged.frames.size(), static_cast<std::size_t>(kFrames));

  for (const auto& [width, height] : {std::pair{kWidth, kHeight}, std::pair{96, 72}}) {
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height));
    const RunResult run = run_sources({{.uri = *change}}, cpu_options(width, height));
    EXPECT_FALSE(run.stats[0].failed) << run.stats[0].error;
    ASSERT_EQ(run.frames.size(), static_cast<std::size_t>(2 * kFrames));
    for (std::size_t i = 0; i < run.frames.size(); ++i) {
      EXPECT_EQ(run.frames[i].format, PixelFormat::kNV12) << "frame " << i;
      EXPECT_EQ(run.frames[i].width, width) << "frame " << i;
      EXPECT_EQ(run.frames[i].height, height) << "frame " << i;
      if (width == kWidth && i < static_cast<std::size_t>(kFrames)) {
        EXPECT_EQ(run.frames[i].hash, unchanged.frames[i].hash) << "frame " << i;
      }
    }
    expect_steady_timeline(run.frames, static_cast<double>(run.frames[0].pts_us));
  }
}

// 10-bit sources (H.264 High 10; HEVC Main 10 where FFmpeg has libx265) work like 8-bit ones
// (issue 18): NV12 at the mux size, scaled or not.
TEST_F(VideoSourcesTest, TenBitSourcesDeliverNv12AtTheMuxSize) {
  const std::string dir = testing::test_temp_dir();
  std::vector<io::EncoderCodec> codecs = {io::EncoderCodec::kH264};
  if (testing::has_ffmpeg_encoder("libx265")) codecs.push_back(io::EncoderCodec::kHevc);
  for (const io::EncoderCodec codec : codecs) {
    const testing::ClipSpec spec{
        .width = kWidth, .height = kHeight, .frames = kFrames, .codec = codec, .bit_depth = 10};
    const Result<std::string> path =
        testing::write_clip(dir + (codec == io::EncoderCodec::kH264 ? "/h264.mp4" : "/hevc.mp4"), spec);
    ASSERT_TRUE(path.is_ok()) << path.status().to_string();
    for (const auto& [width, height] : {std::pair{kWidth, kHeight}, std::pair{32, 24}}) {
      SCOPED_TRACE(*path + " at " + std::to_string(width) + "x" + std::to_string(height));
      const RunResult run = run_sources({{.uri = *path}}, cpu_options(width, height));
      EXPECT_FALSE(run.stats[0].failed) << run.stats[0].error;
      ASSERT_EQ(run.frames.size(), static_cast<std::size_t>(kFrames));
      for (const Received& frame : run.frames) {
        EXPECT_EQ(frame.format, PixelFormat::kNV12);
        EXPECT_EQ(frame.width, width);
        EXPECT_EQ(frame.height, height);
      }
      expect_steady_timeline(run.frames, 0.0);
    }
  }
}

TEST_F(VideoSourcesTest, BadOptionsFailEverySourceNamingTheOption) {
  const RunResult run = run_sources({{.uri = clip()}, {.uri = clip()}}, cpu_options(33, 24));
  EXPECT_TRUE(run.frames.empty());
  for (const SourceStats& stats : run.stats) {
    ASSERT_TRUE(stats.failed);
    EXPECT_NE(stats.error.find("width"), std::string::npos) << stats.error;
  }
}

TEST_F(VideoSourcesTest, NvdecAskedOnTheCpuPathDecodesOnTheCpu) {
  const RunResult run = run_sources({{.uri = clip(), .decoder = io::DecoderBackend::kNvdec}}, cpu_options());
  EXPECT_EQ(run.frames.size(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(run.reports[0].backend, io::DecoderBackend::kCpu);
  EXPECT_NE(run.reports[0].fallback_reason.find("GPU"), std::string::npos) << run.reports[0].fallback_reason;
}

// Ctrl-C with endless sources: the mux's stop reaches every source at its next frame. Triggered
// by a frame count; the time bound only catches a source that never notices (a hang).
TEST_F(VideoSourcesTest, RequestStopEndsLoopingSourcesPromptly) {
  std::vector<SourceConfig> configs = {{.uri = clip(), .loop = true}, {.uri = clip(), .loop = true}};
  StreamMux<SourceFrame> mux({.batch_size = 1}, {"a", "b"});
  VideoSources sources(configs, {"a", "b"}, cpu_options(), mux);
  sources.start();
  std::size_t taken = 0;
  std::optional<std::chrono::steady_clock::time_point> stopped_at;
  while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) {
    // reports() while the threads run (thread-safety under the sanitizers).
    EXPECT_EQ(sources.reports().size(), 2u);
    if (++taken == 3 * kFrames) {
      stopped_at = std::chrono::steady_clock::now();
      mux.request_stop();
    }
  }
  sources.join();
  ASSERT_TRUE(stopped_at.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - *stopped_at, std::chrono::seconds(10));
  for (const SourceStats& stats : mux.source_stats()) {
    EXPECT_TRUE(stats.ended);
    EXPECT_FALSE(stats.failed) << stats.error;
  }
  for (const std::optional<SourceReport>& report : sources.reports()) EXPECT_GE(report.value().loops, 1);
}

// Destroying the sources while they are blocked on a mux nobody drains ends them (no hang).
TEST_F(VideoSourcesTest, DestructionStopsSourcesBlockedOnTheMux) {
  StreamMux<SourceFrame> mux({.batch_size = 1}, {"a"});
  {
    VideoSources sources({{.uri = clip(), .loop = true}}, {"a"}, cpu_options(), mux);
    sources.start();
    ASSERT_TRUE(mux.next_batch().has_value());
  }
  EXPECT_TRUE(mux.source_stats()[0].ended);
}

#if defined(FOVEA_HAVE_CUDA)
// The GPU path against the CPU path: device NV12 frames with a ready event on the same timeline.
// The cpu decoder's frames, uploaded, are the CPU path's exactly; NVDEC (auto) takes the mux size
// through its scaler, so its luma is only compared on average (within 2 levels).
TEST_F(VideoSourcesTest, GpuPathDeliversDeviceFramesWithReadyEvents) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const io::DecoderBackend backend : {io::DecoderBackend::kCpu, io::DecoderBackend::kAuto}) {
    SCOPED_TRACE(std::string(io::decoder_backend_name(backend)));
    StreamMux<SourceFrame> mux({.batch_size = 1}, {"a"});
    VideoSources sources({{.uri = clip(), .decoder = backend}}, {"a"},
                         {.width = kWidth, .height = kHeight, .gpu = true, .max_frames_in_flight = 8}, mux);
    sources.start();
    std::vector<Received> frames;
    std::vector<std::uint8_t> host(static_cast<std::size_t>(kWidth) * kHeight * 3 / 2);
    while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) {
      const SourceFrame& payload = batch->frames[0].payload;
      ASSERT_NE(payload.ready, nullptr);
      ASSERT_EQ(payload.frame.image.memory, MemoryKind::kDevice);
      ASSERT_EQ(cudaEventSynchronize(payload.ready), cudaSuccess);
      const ImageView& image = payload.frame.image;
      ImageView copy = image;
      copy.memory = MemoryKind::kHost;
      copy.planes[0] = {host.data(), static_cast<std::size_t>(kWidth)};
      copy.planes[1] = {host.data() + kWidth * kHeight, static_cast<std::size_t>(kWidth)};
      for (int p = 0; p < 2; ++p) {
        ASSERT_EQ(cudaMemcpy2D(copy.planes[p].data, copy.planes[p].pitch, image.planes[p].data,
                               image.planes[p].pitch, kWidth, p == 0 ? kHeight : kHeight / 2,
                               cudaMemcpyDeviceToHost),
                  cudaSuccess);
      }
      frames.push_back({.pts_us = payload.pts_us,
                        .pts = payload.frame.pts,
                        .time_base = payload.time_base,
                        .width = image.width,
                        .height = image.height,
                        .hash = hash_nv12(copy),
                        .luma = copy_luma(copy)});
    }
    sources.join();
    ASSERT_FALSE(mux.source_stats()[0].failed) << mux.source_stats()[0].error;
    const SourceReport report = sources.reports()[0].value();
    ASSERT_EQ(frames.size(), static_cast<std::size_t>(kFrames));
    expect_steady_timeline(frames, 0.0);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(frames[i].width, kWidth);
      EXPECT_EQ(frames[i].height, kHeight);
      if (report.backend == io::DecoderBackend::kCpu) {
        EXPECT_EQ(frames[i].hash, reference(i)) << "frame " << i;
      } else {
        double total = 0.0;
        for (std::size_t k = 0; k < frames[i].luma.size(); ++k) {
          total += std::abs(static_cast<int>(frames[i].luma[k]) - static_cast<int>(reference_luma(i)[k]));
        }
        EXPECT_LT(total / static_cast<double>(frames[i].luma.size()), 2.0) << "frame " << i;
      }
    }
  }
}

// The GPU path with NVDEC (auto) on the media of issue 18: a resolution change mid-stream and 10-bit
// sources arrive whole, as device NV12 at the mux size. NVDEC narrows HEVC Main 10 in hardware
// where the GPU can; H.264 High 10, which NVDEC does not decode, falls back to the cpu decoder.
// HEVC's sizes stay above NVDEC's minimum (144x144 on recent GPUs).
TEST_F(VideoSourcesTest, GpuPathFollowsResolutionChangesAndTenBitSources) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string dir = testing::test_temp_dir();
  constexpr int kW = 192;
  constexpr int kH = 144;
  std::vector<std::string> paths;
  const Result<std::string> change =
      testing::write_resolution_change_ts(dir + "/change.ts", {.width = kW, .height = kH, .frames = kFrames},
                                          {.width = 256, .height = 192, .frames = kFrames});
  ASSERT_TRUE(change.is_ok()) << change.status().to_string();
  paths.push_back(*change);
  const Result<std::string> high10 = testing::write_clip(
      dir + "/high10.mp4", {.width = kW, .height = kH, .frames = kFrames, .bit_depth = 10});
  ASSERT_TRUE(high10.is_ok()) << high10.status().to_string();
  paths.push_back(*high10);
  if (testing::has_ffmpeg_encoder("libx265")) {
    const Result<std::string> main10 = testing::write_clip(
        dir + "/main10.mp4",
        {.width = kW, .height = kH, .frames = kFrames, .codec = io::EncoderCodec::kHevc, .bit_depth = 10});
    ASSERT_TRUE(main10.is_ok()) << main10.status().to_string();
    paths.push_back(*main10);
  }
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    StreamMux<SourceFrame> mux({.batch_size = 1}, {"a"});
    VideoSources sources({{.uri = path, .decoder = io::DecoderBackend::kAuto}}, {"a"},
                         {.width = kW, .height = kH, .gpu = true, .max_frames_in_flight = 8}, mux);
    sources.start();
    std::size_t frames = 0;
    while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) {
      const Frame& frame = batch->frames[0].payload.frame;
      EXPECT_EQ(frame.image.memory, MemoryKind::kDevice);
      EXPECT_EQ(frame.image.format, PixelFormat::kNV12);
      EXPECT_EQ(frame.image.width, kW);
      EXPECT_EQ(frame.image.height, kH);
      ASSERT_EQ(cudaEventSynchronize(batch->frames[0].payload.ready), cudaSuccess);
      ++frames;
    }
    sources.join();
    EXPECT_FALSE(mux.source_stats()[0].failed) << mux.source_stats()[0].error;
    const SourceReport report = sources.reports()[0].value();
    EXPECT_EQ(frames, static_cast<std::size_t>(path == *change ? 2 * kFrames : kFrames));
    std::printf("%s: decoded by %s%s\n", path.c_str(),
                std::string(io::decoder_backend_name(report.backend)).c_str(),
                report.fallback_reason.empty() ? "" : (" (" + report.fallback_reason + ")").c_str());
  }
}
#endif

}  // namespace
}  // namespace fovea::pipeline
