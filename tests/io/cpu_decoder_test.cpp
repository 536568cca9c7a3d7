#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

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

// Sends the first `count` packets of the demuxer's stream, dropping any frame that comes out.
void send_some_packets(Demuxer& demuxer, Decoder& decoder, int count) {
  Packet packet;
  for (int i = 0; i < count && demuxer.read(packet).value(); ++i) {
    ASSERT_TRUE(send_and_receive(decoder, packet, [](Frame&&) {}).is_ok());
  }
}

// A looping source decodes its file again after the end (a restart after the drain), and a seek
// restarts in mid-stream: either way the next pass gives exactly the file's frames, nothing stale.
TEST(CpuDecoder, RestartDecodesTheStreamAgainWithNothingStale) {
  testing::ClipSpec spec;
  spec.width = 96;
  spec.height = 64;
  spec.frames = 12;
  spec.qp = 0;
  spec.max_b_frames = 2;
  const std::string path = testing::test_temp_dir() + "/restart.mp4";
  ASSERT_TRUE(testing::write_clip(path, spec).is_ok());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  DecoderOptions options;
  options.backend = DecoderBackend::kCpu;
  Result<std::unique_ptr<Decoder>> decoder = open_cpu_decoder((*demuxer)->info(), options);
  ASSERT_TRUE(decoder.is_ok()) << decoder.status().to_string();
  const auto expect_whole_file = [&](const char* pass) {
    const testing::DecodeOutcome outcome = testing::decode_file(**demuxer, **decoder);
    ASSERT_TRUE(outcome.status.is_ok()) << pass << ": " << outcome.status.to_string();
    ASSERT_EQ(outcome.frames.size(), 12u) << pass;
    for (int i = 0; i < 12; ++i) {
      const Frame source = testing::synthetic_frame(spec.width, spec.height, i);
      EXPECT_EQ(count_mismatches(outcome.frames[i].image, source.image), 0) << pass << ", frame " << i;
    }
  };
  expect_whole_file("first pass");
  ASSERT_TRUE((*decoder)->restart().is_ok());
  ASSERT_TRUE((*demuxer)->seek(0.0).is_ok());
  expect_whole_file("after the end");
  // A seek 7 packets in: the frames the decoder holds then are dropped.
  ASSERT_TRUE((*decoder)->restart().is_ok());
  ASSERT_TRUE((*demuxer)->seek(0.0).is_ok());
  send_some_packets(**demuxer, **decoder, 7);
  ASSERT_TRUE((*decoder)->restart().is_ok());
  ASSERT_TRUE((*demuxer)->seek(0.0).is_ok());
  expect_whole_file("after a restart in mid-stream");
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

// One channel of a decoded plane: `step` bytes between samples (2 for NV12's interleaved chroma),
// `channel` the byte within a sample.
struct Channel {
  const ImageView* image;
  int plane;
  int channel;
  int step;
  int width;  // in samples
  int height;
  double at(int x, int y) const {
    x = std::clamp(x, 0, width - 1);
    y = std::clamp(y, 0, height - 1);
    return image->row(plane, y)[x * step + channel];
  }
};

// Luma and the two chroma channels of an NV12 or YUV420P image.
std::vector<Channel> channels_of(const ImageView& image) {
  const int cw = (image.width + 1) / 2;
  const int ch = (image.height + 1) / 2;
  if (image.format == PixelFormat::kNV12) {
    return {
        {&image, 0, 0, 1, image.width, image.height}, {&image, 1, 0, 2, cw, ch}, {&image, 1, 1, 2, cw, ch}};
  }
  return {{&image, 0, 0, 1, image.width, image.height}, {&image, 1, 0, 1, cw, ch}, {&image, 2, 0, 1, cw, ch}};
}

// Mean absolute difference between `scaled` and a plain bilinear resampling of `source` to the
// same size, pixel centers at half-integers (so a 2x shrink is exactly the 2x2 box average).
double mean_abs_diff_to_resampled(const Channel& scaled, const Channel& source) {
  const double sx = static_cast<double>(source.width) / scaled.width;
  const double sy = static_cast<double>(source.height) / scaled.height;
  double total = 0.0;
  for (int y = 0; y < scaled.height; ++y) {
    const double fy = (y + 0.5) * sy - 0.5;
    const int y0 = static_cast<int>(std::floor(fy));
    const double wy = fy - y0;
    for (int x = 0; x < scaled.width; ++x) {
      const double fx = (x + 0.5) * sx - 0.5;
      const int x0 = static_cast<int>(std::floor(fx));
      const double wx = fx - x0;
      const double top = source.at(x0, y0) * (1 - wx) + source.at(x0 + 1, y0) * wx;
      const double bottom = source.at(x0, y0 + 1) * (1 - wx) + source.at(x0 + 1, y0 + 1) * wx;
      total += std::abs(scaled.at(x, y) - (top * (1 - wy) + bottom * wy));
    }
  }
  return total / (scaled.width * scaled.height);
}

testing::DecodeOutcome decode_scaled(const std::string& path, PixelFormat output, int width, int height) {
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  EXPECT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  DecoderOptions options;
  options.cpu_output = output;
  options.output_width = width;
  options.output_height = height;
  Result<std::unique_ptr<Decoder>> decoder = open_cpu_decoder((*demuxer)->info(), options);
  EXPECT_TRUE(decoder.is_ok()) << decoder.status().to_string();
  return testing::decode_file(**demuxer, **decoder);
}

// Shrinks (32x24) and enlarges (96x72) a 64x48 clip in both 8-bit outputs; each frame must be the
// unscaled decode resampled. libswscale's bilinear filter is not the reference's: when it shrinks
// it widens to the scale factor ([1 3 3 1]/8 taps for 2x instead of the box's [1 1]/2), which
// differs on the clip's pixel-level texture. Bounds are the measured worst case (FFmpeg 5.1, all
// frames, luma and chroma) with headroom for other FFmpeg versions:
//   32x24: measured 4.9 levels, bound 6;  96x72: measured 0.3, bound 1.
// A wrong frame measures 9 to 29 levels, so the test also checks that another frame of the clip is
// at least twice as far as the right one: the bound alone could not tell them apart in chroma.
TEST(CpuDecoder, ScalesToTheOutputSize) {
  const struct {
    int width, height;
    double max_mean_abs_diff;
  } sizes[] = {{32, 24, 6.0}, {96, 72, 1.0}};
  const std::string path = lossless_clip(64, 48, 6);
  for (const PixelFormat format : {PixelFormat::kNV12, PixelFormat::kYUV420P}) {
    Result<testing::DecodeOutcome> unscaled = testing::decode_with_cpu(path, format);
    ASSERT_TRUE(unscaled.is_ok() && unscaled->status.is_ok());
    for (const auto& size : sizes) {
      SCOPED_TRACE(std::string(pixel_format_name(format)) + " " + std::to_string(size.width) + "x" +
                   std::to_string(size.height));
      const testing::DecodeOutcome scaled = decode_scaled(path, format, size.width, size.height);
      ASSERT_TRUE(scaled.status.is_ok()) << scaled.status.to_string();
      ASSERT_EQ(scaled.frames.size(), unscaled->frames.size());
      for (std::size_t i = 0; i < scaled.frames.size(); ++i) {
        const Frame& frame = scaled.frames[i];
        ASSERT_EQ(frame.image.format, format);
        ASSERT_EQ(frame.image.width, size.width);
        ASSERT_EQ(frame.image.height, size.height);
        EXPECT_EQ(frame.image.memory, MemoryKind::kHost);
        EXPECT_EQ(frame.pts, unscaled->frames[i].pts);
        EXPECT_EQ(frame.bit_depth, 8);
        const std::vector<Channel> ours = channels_of(frame.image);
        const std::vector<Channel> same = channels_of(unscaled->frames[i].image);
        const std::vector<Channel> other =
            channels_of(unscaled->frames[(i + 3) % unscaled->frames.size()].image);
        for (std::size_t c = 0; c < ours.size(); ++c) {
          const double to_same = mean_abs_diff_to_resampled(ours[c], same[c]);
          EXPECT_LT(to_same, size.max_mean_abs_diff) << "frame " << i << " channel " << c;
          EXPECT_GT(mean_abs_diff_to_resampled(ours[c], other[c]), 2 * to_same)
              << "frame " << i << " channel " << c;
        }
      }
    }
  }
}

TEST(CpuDecoder, OutputSizeOfTheSourceIsTheUnscaledDecode) {
  const std::string path = lossless_clip(64, 48, 3);
  Result<testing::DecodeOutcome> unscaled = testing::decode_with_cpu(path);
  ASSERT_TRUE(unscaled.is_ok() && unscaled->status.is_ok());
  const testing::DecodeOutcome same = decode_scaled(path, PixelFormat::kYUV420P, 64, 48);
  ASSERT_TRUE(same.status.is_ok());
  ASSERT_EQ(same.frames.size(), unscaled->frames.size());
  for (std::size_t i = 0; i < same.frames.size(); ++i) {
    EXPECT_EQ(count_mismatches(same.frames[i].image, unscaled->frames[i].image), 0) << "frame " << i;
  }
}

// Two segments of different sizes in one MPEG-TS (issue 18): every frame comes out, each at its
// own size; with an output size, every frame at that size, those already at it unscaled.
TEST(CpuDecoder, FollowsAResolutionChangeMidStream) {
  testing::ClipSpec first;
  first.width = 64;
  first.height = 48;
  first.frames = 10;
  testing::ClipSpec second = first;
  second.width = 96;
  second.height = 72;
  const Result<std::string> path =
      testing::write_resolution_change_ts(testing::test_temp_dir() + "/change.ts", first, second);
  ASSERT_TRUE(path.is_ok()) << path.status().to_string();
  Result<testing::DecodeOutcome> own = testing::decode_with_cpu(*path);
  ASSERT_TRUE(own.is_ok() && own->status.is_ok());
  ASSERT_EQ(own->frames.size(), 20u);
  for (std::size_t i = 0; i < own->frames.size(); ++i) {
    EXPECT_EQ(own->frames[i].image.width, i < 10 ? 64 : 96) << "frame " << i;
    EXPECT_EQ(own->frames[i].image.height, i < 10 ? 48 : 72) << "frame " << i;
  }
  const testing::DecodeOutcome fixed = decode_scaled(*path, PixelFormat::kYUV420P, 64, 48);
  ASSERT_TRUE(fixed.status.is_ok()) << fixed.status.to_string();
  ASSERT_EQ(fixed.frames.size(), 20u);
  for (std::size_t i = 0; i < fixed.frames.size(); ++i) {
    EXPECT_EQ(fixed.frames[i].image.width, 64) << "frame " << i;
    EXPECT_EQ(fixed.frames[i].image.height, 48) << "frame " << i;
    if (i < 10) {
      EXPECT_EQ(count_mismatches(fixed.frames[i].image, own->frames[i].image), 0) << "frame " << i;
    }
  }
}

// A 10-bit source gives P016 by default and, with eight_bit_output, 8-bit frames whose samples are
// the P016 samples' top byte within a level (libswscale dithers the dropped bits), scaled or not.
TEST(CpuDecoder, NarrowsTenBitSourcesToEightBitsWhenAsked) {
  testing::ClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 4;
  spec.bit_depth = 10;
  const Result<std::string> path = testing::write_clip(testing::test_temp_dir() + "/ten_bit.mkv", spec);
  ASSERT_TRUE(path.is_ok()) << path.status().to_string();
  Result<testing::DecodeOutcome> wide = testing::decode_with_cpu(*path, PixelFormat::kNV12);
  ASSERT_TRUE(wide.is_ok() && wide->status.is_ok());
  ASSERT_EQ(wide->frames.size(), 4u);
  for (const int width : {64, 32}) {
    SCOPED_TRACE("width " + std::to_string(width));
    Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(*path);
    ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
    EXPECT_EQ((*demuxer)->info().bit_depth, 10);
    DecoderOptions options;
    options.cpu_output = PixelFormat::kNV12;
    options.eight_bit_output = true;
    options.output_width = width;
    options.output_height = width * 3 / 4;
    Result<std::unique_ptr<Decoder>> decoder = open_cpu_decoder((*demuxer)->info(), options);
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().to_string();
    const testing::DecodeOutcome narrow = testing::decode_file(**demuxer, **decoder);
    ASSERT_TRUE(narrow.status.is_ok()) << narrow.status.to_string();
    ASSERT_EQ(narrow.frames.size(), 4u);
    for (std::size_t i = 0; i < narrow.frames.size(); ++i) {
      const Frame& frame = narrow.frames[i];
      ASSERT_EQ(frame.image.format, PixelFormat::kNV12);
      ASSERT_EQ(frame.image.width, width);
      EXPECT_EQ(frame.bit_depth, 8);
      if (width != 64) {
        continue;
      }
      const Frame& reference = wide->frames[i];
      ASSERT_EQ(reference.image.format, PixelFormat::kP016);
      EXPECT_EQ(reference.bit_depth, 10);
      int worst = 0;
      for (int y = 0; y < 48; ++y) {
        for (int x = 0; x < 64; ++x) {
          const int top_byte = reference.image.row<std::uint16_t>(0, y)[x] >> 8;
          worst = std::max(worst, std::abs(frame.image.row(0, y)[x] - top_byte));
        }
      }
      EXPECT_LE(worst, 1) << "frame " << i;
    }
  }
}

TEST(CpuDecoder, RejectsBadOutputSizesNamingTheOption) {
  const std::string path = lossless_clip(64, 48, 1);
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok());
  const struct {
    int width, height;
    std::string option;
  } cases[] = {{32, 0, "output_height"},
               {0, 24, "output_width"},
               {33, 24, "output_width"},
               {32, 25, "output_height"},
               {-32, 24, "output_width"},
               {32, -24, "output_height"},
               {kMaxVideoSide + 2, 24, "output_width"}};
  for (const auto& c : cases) {
    DecoderOptions options;
    options.output_width = c.width;
    options.output_height = c.height;
    Result<std::unique_ptr<Decoder>> decoder = open_cpu_decoder((*demuxer)->info(), options);
    ASSERT_FALSE(decoder.is_ok()) << c.width << "x" << c.height;
    EXPECT_EQ(decoder.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(decoder.status().message().find(c.option), std::string::npos) << decoder.status().message();
  }
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
