#include "io/demuxer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

bool has_start_code(const std::vector<std::uint8_t>& data) {
  return data.size() >= 4 && data[0] == 0 && data[1] == 0 && (data[2] == 1 || (data[2] == 0 && data[3] == 1));
}

// Loops rather than value-parameterized tests: CTest's test discovery cannot parse the parameter
// values GoogleTest prints for them on every CMake version.
void expect_stream_info_and_annex_b_packets(const std::string& extension) {
  SCOPED_TRACE(extension);
  testing::ClipSpec spec;
  spec.width = 322;
  spec.height = 242;
  spec.frames = 24;
  const std::string path = testing::test_temp_dir() + "/clip" + extension;
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());

  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  const StreamInfo& info = (*demuxer)->info();
  EXPECT_EQ(info.url, path);
  EXPECT_EQ(info.codec, VideoCodec::kH264);
  EXPECT_EQ(info.codec_name, "h264");
  EXPECT_EQ(info.width, 322);
  EXPECT_EQ(info.height, 242);
  EXPECT_EQ(info.bit_depth, 8);
  EXPECT_EQ(info.chroma_format, 1);
  EXPECT_NEAR(info.frame_rate.to_double(), 30.0, 0.01);
  EXPECT_FALSE(info.profile.empty());
  EXPECT_TRUE(info.annex_b);
  EXPECT_EQ(info.rotation_deg, 0);

  Packet packet;
  int packets = 0;
  int keyframes = 0;
  while (true) {
    Result<bool> got = (*demuxer)->read(packet);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    if (!*got) {
      break;
    }
    EXPECT_TRUE(has_start_code(packet.data)) << "packet " << packets;
    keyframes += packet.keyframe ? 1 : 0;
    if (packets == 0) {
      EXPECT_TRUE(packet.keyframe);
    }
    ++packets;
  }
  EXPECT_EQ(packets, 24);
  EXPECT_GE(keyframes, 1);
}

TEST(Demuxer, Mp4StreamInfoAndAnnexBPackets) {
  expect_stream_info_and_annex_b_packets(".mp4");
}
TEST(Demuxer, MkvStreamInfoAndAnnexBPackets) {
  expect_stream_info_and_annex_b_packets(".mkv");
}
TEST(Demuxer, MpegTsStreamInfoAndAnnexBPackets) {
  expect_stream_info_and_annex_b_packets(".ts");
}
TEST(Demuxer, RawH264StreamInfoAndAnnexBPackets) {
  expect_stream_info_and_annex_b_packets(".h264");
}

TEST(Demuxer, Mp4ReportsDurationAndFrameCount) {
  testing::ClipSpec spec;
  spec.frames = 45;
  const std::string path = testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  EXPECT_EQ((*demuxer)->info().frame_count, 45);
  EXPECT_NEAR((*demuxer)->info().duration_s, 1.5, 0.05);
  EXPECT_NE((*demuxer)->info().container.find("mp4"), std::string::npos);
  // mp4 stores parameter sets in avcC; after conversion they are Annex B extradata.
  EXPECT_TRUE(has_start_code((*demuxer)->info().extradata));
}

// A packet whose NAL length prefix runs past its end (a damaged MP4) is skipped, not the end of the
// file: the packets after it still come (before, the Annex B conversion's error ended the source).
TEST(Demuxer, ADamagedPacketIsSkippedAndTheRestReadOn) {
  testing::ClipSpec spec;
  spec.frames = 24;
  const std::string path = testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  // Packet 10's last NAL in the file: its Annex B payload (after the start code) stands there
  // behind a 4-byte length, which the damage makes far longer than the packet.
  std::vector<std::uint8_t> payload;
  {
    Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
    ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
    Packet packet;
    for (int i = 0; i <= 10; ++i) ASSERT_TRUE((*demuxer)->read(packet).value());
    const std::vector<std::uint8_t> start = {0, 0, 1};
    const auto last_start = std::find_end(packet.data.begin(), packet.data.end(), start.begin(), start.end());
    ASSERT_NE(last_start, packet.data.end());
    payload.assign(last_start + 3, packet.data.end());
  }
  std::string file = testing::read_text(path);
  const std::size_t at = file.find(std::string(payload.begin(), payload.end()));
  ASSERT_NE(at, std::string::npos);
  ASSERT_GE(at, 4u);
  file.replace(at - 4, 4, std::string("\x00\x00\xff\xff", 4));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;

  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  Packet packet;
  int packets = 0;
  while (true) {
    Result<bool> got = (*demuxer)->read(packet);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    if (!*got) break;
    ++packets;
  }
  EXPECT_EQ(packets, 23);  // all but the damaged one
}

TEST(Demuxer, SeekToStartReadsAgain) {
  testing::ClipSpec spec;
  spec.frames = 20;
  spec.gop = 10;
  const std::string path = testing::test_temp_dir() + "/clip.mkv";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok());
  auto count_packets = [&demuxer] {
    Packet packet;
    int n = 0;
    while ((*demuxer)->read(packet).value()) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count_packets(), 20);
  ASSERT_TRUE((*demuxer)->seek(0.0).is_ok());
  EXPECT_EQ(count_packets(), 20);
}

// file:// and file: name local files (FFmpeg's file protocol), checked as the plain path is: both
// open, and a missing one is "no such file".
TEST(Demuxer, FileUrlsAreLocalFiles) {
  testing::ClipSpec spec;
  spec.frames = 3;
  const std::string path = testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  for (const std::string& url : {"file://" + path, "file:" + path}) {
    Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(url);
    ASSERT_TRUE(demuxer.is_ok()) << url << ": " << demuxer.status().to_string();
    EXPECT_FALSE((*demuxer)->info().live) << url;
  }
  const Result<std::unique_ptr<Demuxer>> missing = Demuxer::open("file://" + path + ".missing");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().to_string();
}

// A stream tagged full range is known as such (transcode tags its output from it); an untagged
// one is not. The encoder writes the tag, the demuxer reads it back.
TEST(Demuxer, FullRangeIsReadFromTheStream) {
  for (const bool full : {false, true}) {
    testing::ClipSpec spec;
    spec.frames = 3;
    spec.full_range = full;
    const std::string path = testing::test_temp_dir() + (full ? "/full.mp4" : "/limited.mp4");
    ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
    Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
    ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
    EXPECT_EQ((*demuxer)->info().full_range, full);
  }
}

TEST(Demuxer, CancelFlagStopsOpen) {
  testing::ClipSpec spec;
  const std::string path = testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  std::atomic<bool> cancel{true};
  DemuxOptions options;
  options.cancel = &cancel;
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path, options);
  ASSERT_FALSE(demuxer.is_ok());
  EXPECT_EQ(demuxer.status().code(), StatusCode::kCancelled);
}

// A stop that lands while FFmpeg reads the file cuts the read short; the bytes it had must not come
// back as a packet (FFmpeg flags them corrupt and a decoder loses frames on them), only as the stop.
TEST(Demuxer, ACancelDuringReadsNeverReturnsAPartialPacket) {
  testing::ClipSpec spec;
  spec.frames = 60;  // packets of a few kB, many times FFmpeg's read buffer in all
  const std::string path = testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  std::atomic<bool> cancel{false};
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path, {.cancel = &cancel});
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  std::vector<std::vector<std::uint8_t>> packets;
  Packet packet;
  while ((*demuxer)->read(packet).value()) {
    packets.push_back(packet.data);
  }
  ASSERT_EQ(packets.size(), 60u);
  ASSERT_TRUE((*demuxer)->seek(0.0).is_ok());
  // A few packets first, so the read buffer holds the start of a packet when the stop comes.
  std::size_t next = 0;
  for (; next < 3; ++next) {
    ASSERT_TRUE((*demuxer)->read(packet).value());
  }
  cancel = true;
  Result<bool> read = (*demuxer)->read(packet);
  for (; read.is_ok() && read.value(); read = (*demuxer)->read(packet), ++next) {
    ASSERT_LT(next, packets.size());
    EXPECT_EQ(packet.data, packets[next]) << "packet " << next;
  }
  ASSERT_FALSE(read.is_ok()) << "the stop was not reported; " << next << " packets came after it";
  EXPECT_EQ(read.status().code(), StatusCode::kCancelled) << read.status().to_string();
}

}  // namespace
}  // namespace fovea::io
