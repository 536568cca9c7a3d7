// Media the pipeline used to refuse or mishandle (issue 18), through the real binary on the CPU:
//   - a faststart mp4 cut short: segment writes every frame the decoder can produce, as transcode
//     does, not only those decoded before the read error;
//   - a resolution change mid-stream (two sizes in one MPEG-TS): segment writes every frame at the
//     mux size, transcode every frame at the first size;
//   - 10-bit sources (H.264 High 10): segment works on them in 8 bits, transcode keeps 10 bits.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/demuxer.h"
#include "io/io_test_util.h"
#include "runtime/demo_model.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kFrames = 10;

class CliMedia : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_temp_dir();
    model_ = dir_ / "demo.onnx";
    ASSERT_TRUE(runtime::write_demo_segmentation_model(model_).is_ok());
  }

  int fovea(const std::vector<std::string>& args) {
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }

  // `segment` on the CPU with the demo model at `size` (WIDTHxHEIGHT), output into dir_/out.
  int segment(const fs::path& clip, const std::string& size) {
    return fovea({"segment", clip.string(), "--model", model_.string(), "--normalize", "none", "--class", "1",
                  "--device", "cpu", "--no-progress", "--frame-size", size, "-o", (dir_ / "out").string()});
  }

  fs::path dir_;
  fs::path model_;
  std::string output_;
};

struct Written {
  std::size_t frames = 0;
  int width = 0;
  int height = 0;
  int bit_depth = 0;
};

Written written(const fs::path& video) {
  Written result;
  Result<std::unique_ptr<io::Demuxer>> demuxer = io::Demuxer::open(video.string());
  EXPECT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  if (!demuxer.is_ok()) return result;
  result.bit_depth = (*demuxer)->info().bit_depth;
  Result<DecodeOutcome> decoded = decode_with_cpu(video.string());
  EXPECT_TRUE(decoded.is_ok() && decoded->status.is_ok());
  if (!decoded.is_ok() || decoded->frames.empty()) return result;
  result.frames = decoded->frames.size();
  result.width = decoded->frames.front().image.width;
  result.height = decoded->frames.front().image.height;
  for (const Frame& frame : decoded->frames) {
    EXPECT_EQ(frame.image.width, result.width);
    EXPECT_EQ(frame.image.height, result.height);
  }
  return result;
}

Result<std::string> resolution_change(const fs::path& dir) {
  return write_resolution_change_ts((dir / "change.ts").string(),
                                    {.width = 64, .height = 48, .frames = kFrames},
                                    {.width = 96, .height = 72, .frames = kFrames});
}

TEST_F(CliMedia, SegmentWritesEveryFrameOfATruncatedFile) {
  const Result<std::string> mp4 = write_clip((dir_ / "clip.mp4").string(), {.width = 128, .height = 96});
  ASSERT_TRUE(mp4.is_ok()) << mp4.status().to_string();
  ASSERT_TRUE(copy_faststart(*mp4, (dir_ / "faststart.mp4").string()).is_ok());
  const fs::path truncated = dir_ / "cut.mp4";
  ASSERT_TRUE(copy_truncated((dir_ / "faststart.mp4").string(), truncated.string(), 0.55).is_ok());
  // Both fail on the read error (exit 1); what counts is the frames they wrote before.
  static_cast<void>(fovea({"transcode", truncated.string(), (dir_ / "t.mp4").string(), "--decoder", "cpu"}));
  const std::size_t transcoded = written(dir_ / "t.mp4").frames;
  ASSERT_GT(transcoded, 0u) << output_;
  segment(truncated, "128x96");
  EXPECT_EQ(written(dir_ / "out" / "cut.mp4").frames, transcoded) << output_;
}

TEST_F(CliMedia, SegmentFollowsAResolutionChangeAtTheMuxSize) {
  const Result<std::string> change = resolution_change(dir_);
  ASSERT_TRUE(change.is_ok()) << change.status().to_string();
  EXPECT_EQ(segment(*change, "64x48"), 0) << output_;
  const Written out = written(dir_ / "out" / "change.mp4");
  EXPECT_EQ(out.frames, static_cast<std::size_t>(2 * kFrames));
  EXPECT_EQ(out.width, 64);
  EXPECT_EQ(out.height, 48);
}

TEST_F(CliMedia, TranscodeScalesFramesAfterAResolutionChangeToTheFirstSize) {
  const Result<std::string> change = resolution_change(dir_);
  ASSERT_TRUE(change.is_ok()) << change.status().to_string();
  const fs::path out = dir_ / "out.mp4";
  EXPECT_EQ(fovea({"transcode", *change, out.string(), "--decoder", "cpu"}), 0) << output_;
  const Written result = written(out);
  EXPECT_EQ(result.frames, static_cast<std::size_t>(2 * kFrames));
  EXPECT_EQ(result.width, 64);
  EXPECT_EQ(result.height, 48);
}

TEST_F(CliMedia, TenBitSourcesWork) {
  const fs::path clip = dir_ / "high10.mp4";
  ASSERT_TRUE(
      write_clip(clip.string(), {.width = 64, .height = 48, .frames = kFrames, .bit_depth = 10}).is_ok());
  const fs::path transcoded = dir_ / "transcoded.mkv";
  EXPECT_EQ(fovea({"transcode", clip.string(), transcoded.string(), "--decoder", "cpu"}), 0) << output_;
  const Written kept = written(transcoded);
  EXPECT_EQ(kept.frames, static_cast<std::size_t>(kFrames));
  EXPECT_EQ(kept.bit_depth, 10);

  EXPECT_EQ(segment(clip, "64x48"), 0) << output_;
  const Written segmented = written(dir_ / "out" / "high10.mp4");
  EXPECT_EQ(segmented.frames, static_cast<std::size_t>(kFrames));
  EXPECT_EQ(segmented.bit_depth, 8);
}

}  // namespace
}  // namespace fovea::testing
