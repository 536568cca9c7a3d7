#include <gtest/gtest.h>

#include <cstring>

#include "io/decoder.h"
#include "io/io_test_util.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

// Compares a decoded YUV420P frame with the synthetic source row by row; returns mismatching
// bytes (0 = identical).
long long count_mismatches(const ImageView& decoded, const ImageView& source) {
  long long mismatches = 0;
  for (int p = 0; p < 3; ++p) {
    const int width = p == 0 ? source.width : (source.width + 1) / 2;
    const int height = p == 0 ? source.height : (source.height + 1) / 2;
    for (int y = 0; y < height; ++y) {
      const std::uint8_t* a = decoded.row(p, y);
      const std::uint8_t* b = source.row(p, y);
      for (int x = 0; x < width; ++x) {
        mismatches += a[x] != b[x] ? 1 : 0;
      }
    }
  }
  return mismatches;
}

std::string lossless_clip(int width, int height, int frames) {
  testing::ClipSpec spec;
  spec.width = width;
  spec.height = height;
  spec.frames = frames;
  spec.qp = 0;  // x264 qp 0: lossless
  const std::string path = testing::test_temp_dir() + "/lossless.mkv";
  Result<std::string> written = testing::write_clip(path, spec);
  EXPECT_TRUE(written.is_ok()) << written.status().to_string();
  return path;
}

TEST(CpuDecoder, LosslessEncodeDecodesToTheSourceFramesExactly) {
  const int width = 250;
  const int height = 142;
  const std::string path = lossless_clip(width, height, 20);
  Result<testing::DecodeOutcome> outcome = testing::decode_with_cpu(path);
  ASSERT_TRUE(outcome.is_ok()) << outcome.status().to_string();
  ASSERT_TRUE(outcome->status.is_ok()) << outcome->status.to_string();
  ASSERT_EQ(outcome->frames.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    const Frame& decoded = outcome->frames[i];
    ASSERT_EQ(decoded.image.format, PixelFormat::kYUV420P);
    ASSERT_EQ(decoded.image.width, width);
    ASSERT_EQ(decoded.image.height, height);
    EXPECT_FALSE(decoded.damaged);
    const Frame source = testing::synthetic_frame(width, height, i);
    EXPECT_EQ(count_mismatches(decoded.image, source.image), 0) << "frame " << i;
  }
  EXPECT_EQ(outcome->stats.frames_decoded, 20);
  EXPECT_EQ(outcome->stats.frames_damaged, 0);
}

TEST(CpuDecoder, Nv12OutputInterleavesTheSameSamples) {
  const std::string path = lossless_clip(64, 48, 5);
  Result<testing::DecodeOutcome> planar = testing::decode_with_cpu(path, PixelFormat::kYUV420P);
  Result<testing::DecodeOutcome> nv12 = testing::decode_with_cpu(path, PixelFormat::kNV12);
  ASSERT_TRUE(planar.is_ok() && nv12.is_ok());
  ASSERT_EQ(planar->frames.size(), nv12->frames.size());
  for (std::size_t i = 0; i < planar->frames.size(); ++i) {
    const ImageView& p = planar->frames[i].image;
    const ImageView& n = nv12->frames[i].image;
    ASSERT_EQ(n.format, PixelFormat::kNV12);
    for (int y = 0; y < 48; ++y) {
      ASSERT_EQ(0, std::memcmp(p.row(0, y), n.row(0, y), 64)) << "luma row " << y;
    }
    for (int y = 0; y < 24; ++y) {
      for (int x = 0; x < 32; ++x) {
        ASSERT_EQ(n.row(1, y)[2 * x], p.row(1, y)[x]);
        ASSERT_EQ(n.row(1, y)[2 * x + 1], p.row(2, y)[x]);
      }
    }
  }
}

TEST(CpuDecoder, TimestampsAreMonotonicWithBFrames) {
  testing::ClipSpec spec;
  spec.frames = 40;
  spec.max_b_frames = 3;
  const std::string path = testing::test_temp_dir() + "/bframes.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  Result<testing::DecodeOutcome> outcome = testing::decode_with_cpu(path);
  ASSERT_TRUE(outcome.is_ok());
  ASSERT_EQ(outcome->frames.size(), 40u);
  for (std::size_t i = 1; i < outcome->frames.size(); ++i) {
    ASSERT_TRUE(outcome->frames[i].has_pts);
    EXPECT_GT(outcome->frames[i].pts, outcome->frames[i - 1].pts) << "frame " << i;
    EXPECT_EQ(outcome->frames[i].index, static_cast<std::int64_t>(i));
  }
}

TEST(CpuDecoder, ThreadCountDoesNotChangeOutput) {
  const std::string path = lossless_clip(96, 64, 12);
  Result<testing::DecodeOutcome> one = testing::decode_with_cpu(path, PixelFormat::kYUV420P, 1);
  Result<testing::DecodeOutcome> many = testing::decode_with_cpu(path, PixelFormat::kYUV420P, 4);
  ASSERT_TRUE(one.is_ok() && many.is_ok());
  ASSERT_EQ(one->frames.size(), many->frames.size());
  for (std::size_t i = 0; i < one->frames.size(); ++i) {
    EXPECT_EQ(count_mismatches(one->frames[i].image, many->frames[i].image), 0);
  }
}

TEST(CpuDecoder, SendReturnsAgainWhenOutputIsFullAndResumes) {
  const std::string path = lossless_clip(64, 48, 30);
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok());
  DecoderOptions options;
  options.threads = 1;
  Result<std::unique_ptr<Decoder>> decoder = open_cpu_decoder((*demuxer)->info(), options);
  ASSERT_TRUE(decoder.is_ok());
  Packet packet;
  bool saw_again = false;
  int frames = 0;
  while ((*demuxer)->read(packet).value()) {
    Result<IoState> sent = (*decoder)->send(packet);
    ASSERT_TRUE(sent.is_ok());
    while (*sent == IoState::kAgain) {
      saw_again = true;
      Frame frame;
      while ((*decoder)->receive(frame).value() == IoState::kOk) {
        ++frames;
      }
      sent = (*decoder)->send(packet);
      ASSERT_TRUE(sent.is_ok());
    }
  }
  ASSERT_TRUE((*decoder)->send_eof().is_ok());
  Frame frame;
  Result<IoState> state = IoState::kOk;
  while ((state = (*decoder)->receive(frame)).value() == IoState::kOk) {
    ++frames;
  }
  EXPECT_EQ(*state, IoState::kEof);
  EXPECT_TRUE(saw_again) << "never filled the decoder's output without receiving";
  EXPECT_EQ(frames, 30) << "decoded " << (*decoder)->stats().frames_decoded << ", packets sent "
                        << (*decoder)->stats().packets_sent << ", rejected "
                        << (*decoder)->stats().packets_rejected;
  EXPECT_FALSE((*decoder)->send(packet).is_ok()) << "a packet after end of stream must be an error";
}

TEST(OpenDecoder, AutoWithoutNvdecFallsBackToCpuAndCounts) {
  testing::ClipSpec spec;
  spec.frames = 3;
  const std::string path = testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok());
  StreamInfo info = (*demuxer)->info();
  info.codec = VideoCodec::kOther;  // no NVDEC on any GPU decodes "other"
  const std::int64_t before = decoder_fallback_count();
  DecoderOptions options;
  options.backend = DecoderBackend::kAuto;
  Result<OpenedDecoder> opened = open_decoder(info, options);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  EXPECT_EQ(opened->decoder->backend(), DecoderBackend::kCpu);
  EXPECT_FALSE(opened->fallback_reason.empty());
  EXPECT_EQ(decoder_fallback_count(), before + 1);
}

}  // namespace
}  // namespace fovea::io
