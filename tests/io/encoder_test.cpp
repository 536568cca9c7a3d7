// io::Encoder, checked by reading its files back with libavformat/libavcodec directly, so the
// checks do not depend on fovea's own demuxer and decoders.
#include "io/encoder.h"

#include "io/av_handles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_media.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace fovea::io {
namespace {

using ::testing::HasSubstr;

// What libavformat sees in a file written by the encoder.
struct ProbedClip {
  std::string codec;
  int width = 0;
  int height = 0;
  std::vector<std::int64_t> pts;  // one per packet, in the time base asked of probe_clip
  std::int64_t bytes = 0;
};

struct OpenedInput {
  InputFormatPtr format;
  AVStream* stream = nullptr;
};

OpenedInput open_input(const std::string& path) {
  OpenedInput input;
  AVFormatContext* raw = nullptr;
  const int opened = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);
  EXPECT_GE(opened, 0) << "avformat_open_input(" << path << ") failed";
  if (opened < 0) {
    return input;
  }
  input.format.reset(raw);
  EXPECT_GE(avformat_find_stream_info(raw, nullptr), 0) << path;
  const int index = av_find_best_stream(raw, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  EXPECT_GE(index, 0) << path << " has no video stream";
  if (index >= 0) {
    input.stream = raw->streams[index];
  }
  return input;
}

ProbedClip probe_clip(const std::string& path, AVRational time_base) {
  ProbedClip clip;
  OpenedInput input = open_input(path);
  if (input.stream == nullptr) {
    return clip;
  }
  clip.codec = avcodec_get_name(input.stream->codecpar->codec_id);
  clip.width = input.stream->codecpar->width;
  clip.height = input.stream->codecpar->height;
  AvPtr<AVPacket> packet(av_packet_alloc());
  while (av_read_frame(input.format.get(), packet.get()) >= 0) {
    if (packet->stream_index == input.stream->index) {
      EXPECT_NE(packet->pts, AV_NOPTS_VALUE) << path;
      clip.pts.push_back(av_rescale_q(packet->pts, input.stream->time_base, time_base));
      clip.bytes += packet->size;
    }
    av_packet_unref(packet.get());
  }
  return clip;
}

// Decodes every frame of `path` with libavcodec, in display order.
void for_each_decoded_frame(const std::string& path, const std::function<void(const AVFrame&, int)>& visit) {
  OpenedInput input = open_input(path);
  ASSERT_NE(input.stream, nullptr);
  const AVCodec* codec = avcodec_find_decoder(input.stream->codecpar->codec_id);
  ASSERT_NE(codec, nullptr);
  AvPtr<AVCodecContext> decoder(avcodec_alloc_context3(codec));
  ASSERT_GE(avcodec_parameters_to_context(decoder.get(), input.stream->codecpar), 0);
  ASSERT_GE(avcodec_open2(decoder.get(), codec, nullptr), 0);
  AvPtr<AVPacket> packet(av_packet_alloc());
  AvPtr<AVFrame> frame(av_frame_alloc());
  int index = 0;
  auto drain = [&] {
    while (avcodec_receive_frame(decoder.get(), frame.get()) >= 0) {
      visit(*frame, index++);
      av_frame_unref(frame.get());
    }
  };
  while (av_read_frame(input.format.get(), packet.get()) >= 0) {
    if (packet->stream_index == input.stream->index) {
      ASSERT_GE(avcodec_send_packet(decoder.get(), packet.get()), 0);
      drain();
    }
    av_packet_unref(packet.get());
  }
  ASSERT_GE(avcodec_send_packet(decoder.get(), nullptr), 0);
  drain();
}

std::vector<std::int64_t> iota_pts(int count, std::int64_t step = 1) {
  std::vector<std::int64_t> pts(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    pts[static_cast<std::size_t>(i)] = i * step;
  }
  return pts;
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

EncoderOptions cpu_options(int width, int height) {
  EncoderOptions options;
  options.backend = EncoderBackend::kCpu;
  options.width = width;
  options.height = height;
  options.time_base = {1, 30};
  options.frame_rate = {30, 1};
  options.preset = "veryfast";
  return options;
}

std::unique_ptr<Encoder> open_or_fail(const std::string& path, const EncoderOptions& options) {
  Result<std::unique_ptr<Encoder>> encoder = Encoder::open(path, options);
  EXPECT_TRUE(encoder.is_ok()) << encoder.status().to_string();
  return encoder.is_ok() ? std::move(encoder).value() : nullptr;
}

// The same picture as `source` (YUV420P), laid out as host NV12 with a padded pitch.
Frame to_nv12(const Frame& source) {
  const ImageView& in = source.image;
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kNV12, in.width, in.height, 3, 128);
  auto storage = std::make_shared<std::vector<std::uint8_t>>(allocation->total_bytes);
  Frame frame = source;
  frame.image =
      image_view_in(storage->data(), *allocation, PixelFormat::kNV12, in.width, in.height, MemoryKind::kHost);
  frame.owner = storage;
  for (int y = 0; y < in.height; ++y) {
    std::copy_n(in.row(0, y), in.width, frame.image.row(0, y));
  }
  for (int y = 0; y < (in.height + 1) / 2; ++y) {
    for (int x = 0; x < (in.width + 1) / 2; ++x) {
      frame.image.row(1, y)[2 * x] = in.row(1, y)[x];
      frame.image.row(1, y)[2 * x + 1] = in.row(2, y)[x];
    }
  }
  return frame;
}

// Counts pixels of `decoded` that differ from `expected` (YUV420P) over all three planes.
std::int64_t count_differences(const AVFrame& decoded, const ImageView& expected) {
  std::int64_t differences = 0;
  for (int plane = 0; plane < 3; ++plane) {
    const int w = plane == 0 ? expected.width : (expected.width + 1) / 2;
    const int h = plane == 0 ? expected.height : (expected.height + 1) / 2;
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* got =
          decoded.data[plane] + static_cast<std::ptrdiff_t>(y) * decoded.linesize[plane];
      const std::uint8_t* want = expected.row(plane, y);
      for (int x = 0; x < w; ++x) {
        differences += got[x] != want[x] ? 1 : 0;
      }
    }
  }
  return differences;
}

// Plain tests over a list rather than value-parameterized ones: CTest's test discovery cannot
// parse the parameter values GoogleTest prints for them on every CMake version.
constexpr const char* kContainers[] = {"mp4", "mov", "mkv", "ts"};

void expect_valid_clip_with_every_frame(const std::string& container) {
  SCOPED_TRACE(container);
  const std::string path = fovea::testing::test_temp_dir() + "/clip." + container;
  fovea::testing::ClipSpec spec;
  spec.width = 320;
  spec.height = 240;
  spec.frames = 30;
  ASSERT_TRUE(fovea::testing::write_clip(path, spec).is_ok());

  const ProbedClip clip = probe_clip(path, {1, 30});
  EXPECT_EQ(clip.codec, "h264");
  EXPECT_EQ(clip.width, 320);
  EXPECT_EQ(clip.height, 240);
  EXPECT_EQ(clip.pts.size(), 30u);
}

void expect_timestamps_kept(const std::string& container) {
  SCOPED_TRACE(container);
  const std::string path = fovea::testing::test_temp_dir() + "/pts." + container;
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
  ASSERT_NE(encoder, nullptr);
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(encoder->encode(fovea::testing::synthetic_frame(160, 120, i)).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());

  const std::vector<std::int64_t> pts = sorted(probe_clip(path, {1, 30}).pts);
  ASSERT_EQ(pts.size(), 30u);
  if (container == "ts") {
    // MPEG-TS cannot store the negative dts of B-frame reordering, so libavformat shifts the
    // whole stream later by the reorder delay; the spacing is what survives.
    std::vector<std::int64_t> relative(pts.size());
    std::transform(pts.begin(), pts.end(), relative.begin(), [&](std::int64_t p) { return p - pts[0]; });
    EXPECT_EQ(relative, iota_pts(30));
  } else {
    EXPECT_EQ(pts, iota_pts(30));
  }
}

TEST(EncoderContainers, WriteAValidClipWithEveryFrame) {
  for (const char* container : kContainers) {
    expect_valid_clip_with_every_frame(container);
  }
}

TEST(EncoderContainers, KeepTimestamps) {
  for (const char* container : kContainers) {
    expect_timestamps_kept(container);
  }
}

TEST(EncoderTest, KeepsTimestampsInAFineTimeBase) {
  // A transcode passes the source's time base through, e.g. MPEG-TS's 1/90000.
  const std::string path = fovea::testing::test_temp_dir() + "/fine.mp4";
  EncoderOptions options = cpu_options(160, 120);
  options.time_base = {1, 90000};
  std::unique_ptr<Encoder> encoder = open_or_fail(path, options);
  ASSERT_NE(encoder, nullptr);
  for (int i = 0; i < 20; ++i) {
    Frame frame = fovea::testing::synthetic_frame(160, 120, i);
    frame.pts = 3000 * i;
    ASSERT_TRUE(encoder->encode(frame).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());

  EXPECT_EQ(sorted(probe_clip(path, {1, 90000}).pts), iota_pts(20, 3000));
}

TEST(EncoderTest, NumbersFramesWithoutTimestamps) {
  const std::string path = fovea::testing::test_temp_dir() + "/nopts.mkv";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
  ASSERT_NE(encoder, nullptr);
  for (int i = 0; i < 10; ++i) {
    Frame frame = fovea::testing::synthetic_frame(160, 120, i);
    frame.has_pts = false;
    frame.pts = 0;
    ASSERT_TRUE(encoder->encode(frame).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());

  EXPECT_EQ(sorted(probe_clip(path, {1, 30}).pts), iota_pts(10));
}

TEST(EncoderTest, MovesRepeatedTimestampsForward) {
  // Damaged sources repeat pts; the muxer would refuse them, so the encoder keeps them increasing.
  const std::string path = fovea::testing::test_temp_dir() + "/repeat.mp4";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
  ASSERT_NE(encoder, nullptr);
  for (const std::int64_t pts : {0, 1, 1, 2}) {
    Frame frame = fovea::testing::synthetic_frame(160, 120, static_cast<int>(pts));
    frame.pts = pts;
    ASSERT_TRUE(encoder->encode(frame).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());

  EXPECT_EQ(sorted(probe_clip(path, {1, 30}).pts), iota_pts(4));
}

TEST(EncoderTest, CountsFramesPacketsAndBytes) {
  const std::string path = fovea::testing::test_temp_dir() + "/stats.mp4";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
  ASSERT_NE(encoder, nullptr);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(encoder->encode(fovea::testing::synthetic_frame(160, 120, i)).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());

  const EncoderStats stats = encoder->stats();
  EXPECT_EQ(stats.frames_in, 12);
  EXPECT_EQ(stats.packets_out, 12);
  // mp4 stores the encoder's packets with 4-byte lengths in place of 3- or 4-byte start codes.
  const std::int64_t stored = probe_clip(path, {1, 30}).bytes;
  EXPECT_NEAR(static_cast<double>(stats.bytes_out), static_cast<double>(stored),
              0.01 * static_cast<double>(stored));
}

TEST(EncoderTest, LosslessRoundTripIsExact) {
  const std::string path = fovea::testing::test_temp_dir() + "/lossless.mkv";
  fovea::testing::ClipSpec spec;
  spec.width = 176;
  spec.height = 144;
  spec.frames = 8;
  spec.qp = 0;
  ASSERT_TRUE(fovea::testing::write_clip(path, spec).is_ok());

  int decoded = 0;
  for_each_decoded_frame(path, [&](const AVFrame& frame, int index) {
    ASSERT_EQ(frame.format, AV_PIX_FMT_YUV420P);
    const Frame expected = fovea::testing::synthetic_frame(spec.width, spec.height, index);
    EXPECT_EQ(count_differences(frame, expected.image), 0) << "frame " << index;
    ++decoded;
  });
  EXPECT_EQ(decoded, spec.frames);
}

// x264 at qp 0 is lossless in 10 bits too: the decoded samples are the P016 frames' top 10 bits,
// low bits included (synthetic_frame_p016 sets them), so a path through 8 bits would show.
TEST(EncoderTest, EncodesP016InTenBitsLosslessly) {
  const std::string path = fovea::testing::test_temp_dir() + "/ten_bit.mkv";
  fovea::testing::ClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 5;
  spec.qp = 0;
  spec.bit_depth = 10;
  const Result<std::string> written = fovea::testing::write_clip(path, spec);
  ASSERT_TRUE(written.is_ok()) << written.status().to_string();

  int decoded = 0;
  for_each_decoded_frame(path, [&](const AVFrame& frame, int index) {
    ASSERT_EQ(frame.format, AV_PIX_FMT_YUV420P10LE);
    const Frame expected = fovea::testing::synthetic_frame_p016(spec.width, spec.height, index);
    long long differences = 0;
    for (int y = 0; y < spec.height; ++y) {
      const auto* row = reinterpret_cast<const std::uint16_t*>(frame.data[0] + y * frame.linesize[0]);
      for (int x = 0; x < spec.width; ++x) {
        differences += row[x] != expected.image.row<std::uint16_t>(0, y)[x] >> 6 ? 1 : 0;
      }
    }
    for (int y = 0; y < spec.height / 2; ++y) {
      const auto* u = reinterpret_cast<const std::uint16_t*>(frame.data[1] + y * frame.linesize[1]);
      const auto* v = reinterpret_cast<const std::uint16_t*>(frame.data[2] + y * frame.linesize[2]);
      for (int x = 0; x < spec.width / 2; ++x) {
        differences += u[x] != expected.image.row<std::uint16_t>(1, y)[2 * x] >> 6 ? 1 : 0;
        differences += v[x] != expected.image.row<std::uint16_t>(1, y)[2 * x + 1] >> 6 ? 1 : 0;
      }
    }
    EXPECT_EQ(differences, 0) << "frame " << index;
    ++decoded;
  });
  EXPECT_EQ(decoded, spec.frames);
}

TEST(EncoderTest, TenBitsTakeP016Only) {
  const std::string path = fovea::testing::test_temp_dir() + "/ten_bit.mp4";
  EncoderOptions options = cpu_options(64, 48);
  options.bit_depth = 10;
  std::unique_ptr<Encoder> encoder = open_or_fail(path, options);
  ASSERT_NE(encoder, nullptr);
  const Status status = encoder->encode(fovea::testing::synthetic_frame(64, 48, 0));
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(), HasSubstr("10 bits"));
  options.bit_depth = 12;
  const Result<std::unique_ptr<Encoder>> twelve = Encoder::open(path, options);
  EXPECT_EQ(twelve.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(twelve.status().message(), HasSubstr("bit depth 12"));
}

TEST(EncoderTest, AcceptsHostNv12) {
  const std::string path = fovea::testing::test_temp_dir() + "/nv12.mkv";
  EncoderOptions options = cpu_options(176, 144);
  options.qp = 0;
  std::unique_ptr<Encoder> encoder = open_or_fail(path, options);
  ASSERT_NE(encoder, nullptr);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(encoder->encode(to_nv12(fovea::testing::synthetic_frame(176, 144, i))).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());

  int decoded = 0;
  for_each_decoded_frame(path, [&](const AVFrame& frame, int index) {
    const Frame expected = fovea::testing::synthetic_frame(176, 144, index);
    EXPECT_EQ(count_differences(frame, expected.image), 0) << "frame " << index;
    ++decoded;
  });
  EXPECT_EQ(decoded, 5);
}

TEST(EncoderTest, RejectsAFrameOfAnotherSize) {
  const std::string path = fovea::testing::test_temp_dir() + "/size.mp4";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(320, 240));
  ASSERT_NE(encoder, nullptr);
  const Status status = encoder->encode(fovea::testing::synthetic_frame(160, 120, 0));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("160x120"));
  EXPECT_THAT(status.message(), HasSubstr("320x240"));
  EXPECT_THAT(status.message(), HasSubstr(path));
}

TEST(EncoderTest, RejectsAnUnsupportedPixelFormat) {
  const std::string path = fovea::testing::test_temp_dir() + "/gray.mp4";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(16, 16));
  ASSERT_NE(encoder, nullptr);
  std::vector<std::uint8_t> pixels(16 * 16, 128);
  Frame frame;
  frame.image.format = PixelFormat::kGRAY8;
  frame.image.width = 16;
  frame.image.height = 16;
  frame.image.num_planes = 1;
  frame.image.planes[0] = {pixels.data(), 16};
  const Status status = encoder->encode(frame);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(), HasSubstr("gray8"));
}

TEST(EncoderTest, RejectsOddSizes) {
  const std::string path = fovea::testing::test_temp_dir() + "/odd.mp4";
  const Result<std::unique_ptr<Encoder>> encoder = Encoder::open(path, cpu_options(321, 240));
  ASSERT_FALSE(encoder.is_ok());
  EXPECT_EQ(encoder.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(encoder.status().message(), HasSubstr("321x240"));
}

TEST(EncoderTest, UnwritablePathNamesThePath) {
  const std::string path = "/nonexistent/dir/x.mp4";
  const Result<std::unique_ptr<Encoder>> encoder = Encoder::open(path, cpu_options(160, 120));
  ASSERT_FALSE(encoder.is_ok());
  EXPECT_THAT(encoder.status().message(), HasSubstr(path));
  EXPECT_THAT(encoder.status().message(), HasSubstr("No such file or directory"));
}

TEST(EncoderTest, UnknownExtensionIsAnInvalidArgument) {
  const std::string path = fovea::testing::test_temp_dir() + "/clip.notacontainer";
  const Result<std::unique_ptr<Encoder>> encoder = Encoder::open(path, cpu_options(160, 120));
  ASSERT_FALSE(encoder.is_ok());
  EXPECT_EQ(encoder.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(encoder.status().message(), HasSubstr(path));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(EncoderTest, DestructorFinalizesTheFile) {
  const std::string path = fovea::testing::test_temp_dir() + "/unfinished.mp4";
  {
    std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
    ASSERT_NE(encoder, nullptr);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(encoder->encode(fovea::testing::synthetic_frame(160, 120, i)).is_ok());
    }
  }
  const ProbedClip clip = probe_clip(path, {1, 30});
  EXPECT_EQ(clip.width, 160);
  EXPECT_EQ(sorted(clip.pts), iota_pts(20));
}

TEST(EncoderTest, FinishIsIdempotentAndEndsEncoding) {
  const std::string path = fovea::testing::test_temp_dir() + "/twice.mkv";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
  ASSERT_NE(encoder, nullptr);
  ASSERT_TRUE(encoder->encode(fovea::testing::synthetic_frame(160, 120, 0)).is_ok());
  EXPECT_TRUE(encoder->finish().is_ok());
  EXPECT_TRUE(encoder->finish().is_ok());
  const Status late = encoder->encode(fovea::testing::synthetic_frame(160, 120, 1));
  EXPECT_EQ(late.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(probe_clip(path, {1, 30}).pts.size(), 1u);
}

TEST(EncoderTest, EncodesHevcWithLibx265) {
  if (!fovea::testing::has_ffmpeg_encoder("libx265")) {
    GTEST_SKIP() << "this FFmpeg build has no libx265";
  }
  const std::string path = fovea::testing::test_temp_dir() + "/hevc.mkv";
  fovea::testing::ClipSpec spec;
  spec.width = 192;
  spec.height = 108;
  spec.frames = 10;
  spec.codec = EncoderCodec::kHevc;
  spec.preset = "ultrafast";
  ASSERT_TRUE(fovea::testing::write_clip(path, spec).is_ok());

  const ProbedClip clip = probe_clip(path, {1, 30});
  EXPECT_EQ(clip.codec, "hevc");
  EXPECT_EQ(clip.width, 192);
  EXPECT_EQ(clip.height, 108);
  EXPECT_EQ(sorted(clip.pts), iota_pts(10));
}

TEST(EncoderTest, NvencRequestFallsBackToLibx264WithAReason) {
  const std::string path = fovea::testing::test_temp_dir() + "/nvenc.mp4";
  EncoderOptions options = cpu_options(160, 120);
  options.backend = EncoderBackend::kNvenc;
  std::unique_ptr<Encoder> encoder = open_or_fail(path, options);
  ASSERT_NE(encoder, nullptr);
  if (encoder->encoder_name() == "h264_nvenc") {
    EXPECT_EQ(encoder->fallback_reason(), "");
  } else {
    EXPECT_EQ(encoder->encoder_name(), "libx264");
    EXPECT_THAT(encoder->fallback_reason(), HasSubstr("h264_nvenc"));
  }
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(encoder->encode(fovea::testing::synthetic_frame(160, 120, i)).is_ok());
  }
  ASSERT_TRUE(encoder->finish().is_ok());
  EXPECT_EQ(probe_clip(path, {1, 30}).pts.size(), 5u);
}

TEST(EncoderTest, CpuBackendHasNoFallback) {
  const std::string path = fovea::testing::test_temp_dir() + "/cpu.mp4";
  std::unique_ptr<Encoder> encoder = open_or_fail(path, cpu_options(160, 120));
  ASSERT_NE(encoder, nullptr);
  EXPECT_EQ(encoder->encoder_name(), "libx264");
  EXPECT_EQ(encoder->fallback_reason(), "");
}

TEST(EncoderTest, ParsesCodecNames) {
  EncoderCodec codec = EncoderCodec::kH264;
  EXPECT_TRUE(parse_encoder_codec("hevc", &codec));
  EXPECT_EQ(codec, EncoderCodec::kHevc);
  EXPECT_TRUE(parse_encoder_codec("h264", &codec));
  EXPECT_EQ(codec, EncoderCodec::kH264);
  EXPECT_FALSE(parse_encoder_codec("vp9", &codec));
}

}  // namespace
}  // namespace fovea::io
