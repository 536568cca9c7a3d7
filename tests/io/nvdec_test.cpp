// NVDEC decoder tests (label gpu). libavcodec (the cpu backend, NV12 output) is the reference: NVDEC
// must match it bit for bit on untouched frames. Without a GPU, or without the driver's nvcuvid,
// every test reports itself as skipped.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "io/decoder.h"
#include "io/demuxer.h"
#include "io/io_test_util.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

using ::testing::HasSubstr;

constexpr int kClipFrames = 60;
// Mean luma of a scaled or cropped frame against the CPU frame's (same region): resampling keeps
// the mean of the synthetic content (gradient plus texture) within a couple of levels, while a
// wrong region or a broken copy is off by tens.
constexpr double kMeanLumaTolerance = 3.0;

// ---------------------------------------------------------------------------------------------
// Decoding helpers.

Result<std::vector<Frame>> decode_all(Decoder& decoder, Demuxer& demuxer) {
  std::vector<Frame> frames;
  FOVEA_TRY(testing::for_each_frame(demuxer, decoder,
                                    [&frames](Frame&& frame) { frames.push_back(std::move(frame)); }));
  return frames;
}

Result<std::unique_ptr<Decoder>> open_backend(const StreamInfo& stream, const DecoderOptions& options) {
  return options.backend == DecoderBackend::kCpu ? open_cpu_decoder(stream, options)
                                                 : open_nvdec_decoder(stream, options);
}

struct Decoded {
  std::vector<Frame> frames;
  DecoderStats stats;
};

Result<Decoded> decode_file(const std::string& path, const DecoderOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<Demuxer> demuxer, Demuxer::open(path));
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, open_backend(demuxer->info(), options));
  Decoded decoded;
  FOVEA_ASSIGN_OR_RETURN(decoded.frames, decode_all(*decoder, *demuxer));
  decoded.stats = decoder->stats();
  return decoded;
}

// Counts frames while releasing each at once, as a streaming consumer does.
Result<Decoded> count_frames(const std::string& path, const DecoderOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<Demuxer> demuxer, Demuxer::open(path));
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, open_nvdec_decoder(demuxer->info(), options));
  std::int64_t count = 0;
  FOVEA_TRY(testing::for_each_frame(*demuxer, *decoder, [&count](Frame&&) { ++count; }));
  Decoded decoded;
  decoded.stats = decoder->stats();
  EXPECT_EQ(count, decoded.stats.frames_decoded);
  return decoded;
}

DecoderOptions cpu_options() {
  DecoderOptions options;
  options.backend = DecoderBackend::kCpu;
  options.cpu_output = PixelFormat::kNV12;
  return options;
}

// ---------------------------------------------------------------------------------------------
// Host copies of device frames and comparisons.

// A two-plane frame (NV12, or P016 from a >8-bit source) copied to the host with packed rows.
struct HostImage {
  PixelFormat format = PixelFormat::kNV12;
  int width = 0;
  int height = 0;
  FormatLayout layout;
  std::vector<std::uint8_t> planes[2];

  const std::uint8_t* row(int plane, int y) const {
    return planes[plane].data() + static_cast<std::size_t>(y) * layout.planes[plane].width_bytes;
  }
};

Result<HostImage> download_nv12(const Frame& frame, cudaStream_t stream) {
  const ImageView& image = frame.image;
  if (image.memory != MemoryKind::kDevice || image.num_planes != 2) {
    return make_error(StatusCode::kInvalidArgument, "expected a two-plane device frame");
  }
  HostImage host;
  host.format = image.format;
  host.width = image.width;
  host.height = image.height;
  FOVEA_ASSIGN_OR_RETURN(host.layout, format_layout(image.format, image.width, image.height));
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  for (int p = 0; p < 2; ++p) {
    const auto row_bytes = static_cast<std::size_t>(host.layout.planes[p].width_bytes);
    const auto rows = static_cast<std::size_t>(host.layout.planes[p].height);
    host.planes[p].resize(row_bytes * rows);
    FOVEA_CUDA_TRY(cudaMemcpy2D(host.planes[p].data(), row_bytes, image.planes[p].data, image.planes[p].pitch,
                                row_bytes, rows, cudaMemcpyDeviceToHost));
  }
  return host;
}

// Every row of both planes must match; reports the first differing byte of each plane.
void expect_same_image(const Frame& cpu, const HostImage& gpu, std::size_t index) {
  ASSERT_EQ(cpu.image.format, gpu.format) << "frame " << index;
  ASSERT_EQ(cpu.image.width, gpu.width) << "frame " << index;
  ASSERT_EQ(cpu.image.height, gpu.height) << "frame " << index;
  for (int p = 0; p < 2; ++p) {
    const PlaneShape shape = gpu.layout.planes[p];
    int differing_rows = 0;
    for (int y = 0; y < shape.height; ++y) {
      const std::uint8_t* expected = cpu.image.row(p, y);
      const std::uint8_t* actual = gpu.row(p, y);
      if (std::memcmp(expected, actual, static_cast<std::size_t>(shape.width_bytes)) == 0) {
        continue;
      }
      if (differing_rows++ == 0) {
        int x = 0;
        while (expected[x] == actual[x]) {
          ++x;
        }
        ADD_FAILURE() << "frame " << index << " plane " << p << " row " << y << " byte " << x << ": cpu "
                      << int{expected[x]} << ", nvdec " << int{actual[x]};
      }
    }
    EXPECT_EQ(differing_rows, 0) << "frame " << index << " plane " << p << " of " << shape.height << " rows";
  }
}

struct Region {
  int left = 0, top = 0, right = 0, bottom = 0;
};

double mean_luma(const ImageView& image, const Region& region) {
  double sum = 0.0;
  for (int y = region.top; y < region.bottom; ++y) {
    const std::uint8_t* row = image.row(0, y);
    for (int x = region.left; x < region.right; ++x) {
      sum += row[x];
    }
  }
  return sum / (static_cast<double>(region.right - region.left) * (region.bottom - region.top));
}

double mean_luma(const HostImage& image) {
  double sum = 0.0;
  for (std::uint8_t value : image.planes[0]) {
    sum += value;
  }
  return sum / static_cast<double>(image.planes[0].size());
}

// ---------------------------------------------------------------------------------------------
// Fixture: skips without a GPU or without nvcuvid; gives each test a stream and a media folder.

class NvdecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device";
    }
    // A stream description is enough to find out whether the driver's nvcuvid is there.
    StreamInfo probe;
    probe.codec = VideoCodec::kH264;
    probe.codec_name = "h264";
    probe.width = 352;
    probe.height = 288;
    probe.annex_b = true;
    Result<std::unique_ptr<Decoder>> decoder = open_nvdec_decoder(probe, DecoderOptions{});
    if (!decoder.is_ok() && decoder.status().code() == StatusCode::kUnsupported &&
        decoder.status().message().starts_with("NVDEC unavailable")) {
      GTEST_SKIP() << decoder.status().message();
    }
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().to_string();
    Result<CudaStream> stream = CudaStream::create();
    ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
    stream_ = std::move(*stream);
    dir_ = testing::test_temp_dir();
  }

  std::string clip(const std::string& name, const testing::ClipSpec& spec) {
    Result<std::string> path = testing::write_clip(dir_ + "/" + name, spec);
    EXPECT_TRUE(path.is_ok()) << path.status().to_string();
    return path.is_ok() ? *path : std::string();
  }

  static testing::ClipSpec clip_spec(int width, int height) {
    testing::ClipSpec spec;
    spec.width = width;
    spec.height = height;
    spec.frames = kClipFrames;
    spec.max_b_frames = 2;  // reordering, so display order differs from decode order
    return spec;
  }

  DecoderOptions nvdec_options() const {
    DecoderOptions options;
    options.backend = DecoderBackend::kNvdec;
    options.stream = stream_.get();
    // The comparison tests keep every frame of a clip at once.
    options.max_frames_in_flight = kClipFrames + 4;
    return options;
  }

  // Decodes `path` on both backends and compares every frame, in order, bit for bit.
  void expect_nvdec_matches_cpu(const std::string& path) {
    Result<Decoded> cpu = decode_file(path, cpu_options());
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
    Result<Decoded> gpu = decode_file(path, nvdec_options());
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
    EXPECT_EQ(gpu->stats.frames_damaged, 0);
    EXPECT_EQ(gpu->stats.packets_rejected, 0);
    ASSERT_FALSE(gpu->frames.empty());
    EXPECT_EQ(gpu->frames.front().index, 0);
    expect_frames_match(gpu->frames, cpu->frames);
  }

  // NVDEC's frames against libavcodec's, in order, bit for bit, numbered consecutively.
  void expect_frames_match(const std::vector<Frame>& gpu, const std::vector<Frame>& cpu) {
    ASSERT_EQ(gpu.size(), cpu.size());
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      const Frame& frame = gpu[i];
      EXPECT_EQ(frame.pts, cpu[i].pts) << "frame " << i;
      EXPECT_EQ(frame.index - gpu.front().index, static_cast<std::int64_t>(i));
      EXPECT_EQ(frame.image.memory, MemoryKind::kDevice);
      Result<HostImage> host = download_nv12(frame, stream_.get());
      ASSERT_TRUE(host.is_ok()) << host.status().to_string();
      expect_same_image(cpu[i], *host, i);
      if (HasFatalFailure()) {
        return;
      }
    }
  }

  CudaStream stream_;
  std::string dir_;
};

// ---------------------------------------------------------------------------------------------
// a. Bit-exact H.264, at a macroblock-aligned size and at one whose height NVDEC must crop.

// Plain tests rather than value-parameterized ones: CTest's test discovery cannot parse the
// parameter values GoogleTest prints for them on every CMake version.
TEST_F(NvdecTest, H264MatchesLibavcodecBitForBitAt352x288) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  expect_nvdec_matches_cpu(path);
}

TEST_F(NvdecTest, H264MatchesLibavcodecBitForBitAt200x120) {
  const std::string path = clip("h264.mp4", clip_spec(200, 120));
  ASSERT_FALSE(path.empty());
  expect_nvdec_matches_cpu(path);
}

// ---------------------------------------------------------------------------------------------
// b. Bit-exact HEVC.

TEST_F(NvdecTest, HevcMatchesLibavcodecBitForBit) {
  std::string path;
  if (testing::has_ffmpeg_encoder("libx265")) {
    testing::ClipSpec spec = clip_spec(352, 288);
    spec.codec = EncoderCodec::kHevc;
    path = clip("hevc.mp4", spec);
    ASSERT_FALSE(path.empty());
  } else if (const char* env = std::getenv("FOVEA_TEST_HEVC_CLIP"); env != nullptr && *env != '\0') {
    path = env;
  } else {
    GTEST_SKIP() << "this FFmpeg has no libx265 and FOVEA_TEST_HEVC_CLIP names no HEVC clip";
  }
  expect_nvdec_matches_cpu(path);
}

// ---------------------------------------------------------------------------------------------
// c. Concurrent sessions, each with its own parser, decoder, lock and stream.

TEST_F(NvdecTest, EightConcurrentSessionsEachDecodeTheWholeClip) {
  constexpr int kSessions = 8;
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  std::vector<Status> statuses(kSessions);
  std::vector<std::int64_t> counts(kSessions, 0);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      Result<CudaStream> stream = CudaStream::create();
      if (!stream.is_ok()) {
        statuses[s] = stream.status();
        return;
      }
      DecoderOptions options = nvdec_options();
      options.stream = stream->get();
      Result<Decoded> decoded = count_frames(path, options);
      statuses[s] = decoded.status();
      counts[s] = decoded.is_ok() ? decoded->stats.frames_decoded : 0;
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int s = 0; s < kSessions; ++s) {
    EXPECT_TRUE(statuses[s].is_ok()) << "session " << s << ": " << statuses[s].to_string();
    EXPECT_EQ(counts[s], kClipFrames) << "session " << s;
  }
}

// A looping source decodes its file again with the same hardware decoder (a restart after the
// end), and a seek restarts in mid-stream, dropping the pictures the decoder held.
TEST_F(NvdecTest, RestartDecodesTheClipAgainBitForBitWithNothingStale) {
  const std::string path = clip("restart.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  Result<Decoded> cpu = decode_file(path, cpu_options());
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  Result<std::unique_ptr<Decoder>> decoder = open_nvdec_decoder((*demuxer)->info(), nvdec_options());
  ASSERT_TRUE(decoder.is_ok()) << decoder.status().to_string();
  const auto expect_whole_clip = [&](const char* pass) {
    SCOPED_TRACE(pass);
    Result<std::vector<Frame>> frames = decode_all(**decoder, **demuxer);
    ASSERT_TRUE(frames.is_ok()) << frames.status().to_string();
    expect_frames_match(*frames, cpu->frames);
  };
  const auto restart = [&] {
    ASSERT_TRUE((*decoder)->restart().is_ok());
    ASSERT_TRUE((*demuxer)->seek(0.0).is_ok());
  };
  expect_whole_clip("first pass");
  restart();
  expect_whole_clip("after the end");
  restart();
  Packet packet;
  for (int i = 0; i < 10 && (*demuxer)->read(packet).value(); ++i) {
    ASSERT_TRUE(send_and_receive(**decoder, packet, [](Frame&&) {}).is_ok());
  }
  restart();
  expect_whole_clip("after a restart in mid-stream");
  EXPECT_EQ((*decoder)->stats().frames_damaged, 0);
}

// ---------------------------------------------------------------------------------------------
// d. Hardware scaling and cropping.

TEST_F(NvdecTest, ScalesToHalfSizeInHardware) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  Result<Decoded> cpu = decode_file(path, cpu_options());
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  DecoderOptions options = nvdec_options();
  options.output_width = 176;
  options.output_height = 144;
  Result<Decoded> gpu = decode_file(path, options);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  ASSERT_EQ(gpu->frames.size(), cpu->frames.size());
  for (std::size_t i = 0; i < gpu->frames.size(); ++i) {
    EXPECT_EQ(gpu->frames[i].image.width, 176);
    EXPECT_EQ(gpu->frames[i].image.height, 144);
    Result<HostImage> host = download_nv12(gpu->frames[i], stream_.get());
    ASSERT_TRUE(host.is_ok()) << host.status().to_string();
    const double expected = mean_luma(cpu->frames[i].image, {0, 0, 352, 288});
    EXPECT_NEAR(mean_luma(*host), expected, kMeanLumaTolerance) << "frame " << i;
  }
}

TEST_F(NvdecTest, CropsInHardware) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  Result<Decoded> cpu = decode_file(path, cpu_options());
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  DecoderOptions options = nvdec_options();
  options.crop = {32, 16, 32 + 160, 16 + 128};
  Result<Decoded> gpu = decode_file(path, options);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  ASSERT_EQ(gpu->frames.size(), cpu->frames.size());
  for (std::size_t i = 0; i < gpu->frames.size(); ++i) {
    EXPECT_EQ(gpu->frames[i].image.width, 160);
    EXPECT_EQ(gpu->frames[i].image.height, 128);
    Result<HostImage> host = download_nv12(gpu->frames[i], stream_.get());
    ASSERT_TRUE(host.is_ok()) << host.status().to_string();
    const double expected = mean_luma(cpu->frames[i].image, {32, 16, 32 + 160, 16 + 128});
    EXPECT_NEAR(mean_luma(*host), expected, kMeanLumaTolerance) << "frame " << i;
  }
}

TEST_F(NvdecTest, RejectsCropOutsideThePicture) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  DecoderOptions options = nvdec_options();
  options.crop = {0, 0, 400, 100};
  Result<std::unique_ptr<Decoder>> decoder = open_nvdec_decoder((*demuxer)->info(), options);
  EXPECT_EQ(decoder.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(decoder.status().message(), HasSubstr("352x288"));
}

// ---------------------------------------------------------------------------------------------
// e. Bad input, on raw H.264 as in the cpu backend's bad-input tests: a cut or damaged elementary
// stream stays demuxable (an mp4 would lose its index, which sits at the end).

TEST_F(NvdecTest, TruncatedClipDecodesWhatItCanAndEnds) {
  const std::string path = clip("h264.h264", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  const std::string truncated = dir_ + "/truncated.h264";
  ASSERT_TRUE(testing::copy_truncated(path, truncated, 0.5).is_ok());
  Result<Decoded> gpu = decode_file(truncated, nvdec_options());
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  EXPECT_GT(gpu->frames.size(), 0u);
  EXPECT_LT(gpu->frames.size(), static_cast<std::size_t>(kClipFrames));
}

TEST_F(NvdecTest, BitFlippedClipDecodesToTheEndAndReportsDamage) {
  testing::ClipSpec spec = clip_spec(352, 288);
  spec.gop = 15;  // keyframes to recover at
  const std::string path = clip("h264.h264", spec);
  ASSERT_FALSE(path.empty());
  const std::string flipped = dir_ + "/flipped.h264";
  ASSERT_TRUE(testing::copy_bit_flipped(path, flipped, 40, 1024, 7).is_ok());
  Result<Decoded> gpu = decode_file(flipped, nvdec_options());
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  // Recovery: frames keep coming after the damage, up to the end of the stream.
  EXPECT_GT(gpu->frames.size(), static_cast<std::size_t>(kClipFrames / 2));
  EXPECT_GT(gpu->stats.frames_damaged + gpu->stats.packets_rejected, 0)
      << "frames " << gpu->stats.frames_decoded << ", damaged " << gpu->stats.frames_damaged << ", rejected "
      << gpu->stats.packets_rejected;
}

TEST_F(NvdecTest, CodecWithoutNvdecDecoderIsUnsupported) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  StreamInfo other = (*demuxer)->info();
  other.codec = VideoCodec::kOther;
  other.codec_name = "theora";
  Result<std::unique_ptr<Decoder>> decoder = open_nvdec_decoder(other, nvdec_options());
  EXPECT_EQ(decoder.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(decoder.status().message(), HasSubstr("NVDEC has no decoder for codec theora"));
}

// ---------------------------------------------------------------------------------------------
// f. The output pool is bounded by max_frames_in_flight.

TEST_F(NvdecTest, StreamingConsumerNeedsOnlyAFewFramesInFlight) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  DecoderOptions options = nvdec_options();
  options.max_frames_in_flight = 1;
  Result<Decoded> decoded = count_frames(path, options);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  EXPECT_EQ(decoded->stats.frames_decoded, kClipFrames);
}

TEST_F(NvdecTest, HoldingMoreFramesThanAllowedFailsLoudly) {
  const std::string path = clip("h264.mp4", clip_spec(352, 288));
  ASSERT_FALSE(path.empty());
  DecoderOptions options = nvdec_options();
  options.max_frames_in_flight = 2;
  Result<Decoded> decoded = decode_file(path, options);
  EXPECT_EQ(decoded.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(decoded.status().message(), HasSubstr("max_frames_in_flight"));
}

// ---------------------------------------------------------------------------------------------
// Issue 18: a resolution change mid-stream and 10-bit sources.

// Two segments of different sizes in one MPEG-TS: NVDEC makes a new decoder at the second sequence
// and delivers every frame at its own size, bit for bit libavcodec's. With an output size, every
// frame is at that size: the first segment's unscaled (bit for bit), the second's scaled.
TEST_F(NvdecTest, FollowsAResolutionChangeMidStream) {
  const Result<std::string> path =
      testing::write_resolution_change_ts(dir_ + "/change.ts", clip_spec(352, 288), clip_spec(176, 144));
  ASSERT_TRUE(path.is_ok()) << path.status().to_string();
  Result<Decoded> cpu = decode_file(*path, cpu_options());
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  ASSERT_EQ(cpu->frames.size(), static_cast<std::size_t>(2 * kClipFrames));
  DecoderOptions options = nvdec_options();
  options.max_frames_in_flight = 2 * kClipFrames + 4;
  Result<Decoded> own = decode_file(*path, options);
  ASSERT_TRUE(own.is_ok()) << own.status().to_string();
  expect_frames_match(own->frames, cpu->frames);

  options.output_width = 352;
  options.output_height = 288;
  Result<Decoded> fixed = decode_file(*path, options);
  ASSERT_TRUE(fixed.is_ok()) << fixed.status().to_string();
  ASSERT_EQ(fixed->frames.size(), cpu->frames.size());
  for (std::size_t i = 0; i < fixed->frames.size(); ++i) {
    ASSERT_EQ(fixed->frames[i].image.width, 352) << "frame " << i;
    ASSERT_EQ(fixed->frames[i].image.height, 288) << "frame " << i;
    Result<HostImage> host = download_nv12(fixed->frames[i], stream_.get());
    ASSERT_TRUE(host.is_ok()) << host.status().to_string();
    if (i < static_cast<std::size_t>(kClipFrames)) {
      expect_same_image(cpu->frames[i], *host, i);
    } else {
      EXPECT_NEAR(mean_luma(*host), mean_luma(cpu->frames[i].image, {0, 0, 176, 144}), kMeanLumaTolerance)
          << "frame " << i;
    }
  }
}

// HEVC Main 10: P016 frames bit for bit libavcodec's by default; with eight_bit_output, NV12 frames
// of 8 bits within the luma tolerance of the cpu decoder's narrowed ones, unless this GPU cannot
// narrow (kUnsupported naming nv12, and open_decoder falls back to the cpu). H.264 High 10 is not
// NVDEC's: kUnsupported.
TEST_F(NvdecTest, TenBitSourcesGiveP016OrEightBitsWhenAsked) {
  testing::ClipSpec high10 = clip_spec(352, 288);
  high10.bit_depth = 10;
  const std::string h264 = clip("high10.mp4", high10);
  ASSERT_FALSE(h264.empty());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(h264);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  EXPECT_EQ(open_nvdec_decoder((*demuxer)->info(), nvdec_options()).status().code(),
            StatusCode::kUnsupported);

  // The GPU machine's FFmpeg has no libx265: a clip made elsewhere comes through the environment.
  std::string path;
  if (testing::has_ffmpeg_encoder("libx265")) {
    testing::ClipSpec main10 = high10;
    main10.codec = EncoderCodec::kHevc;
    path = clip("main10.mp4", main10);
    ASSERT_FALSE(path.empty());
  } else if (const char* env = std::getenv("FOVEA_TEST_HEVC10_CLIP"); env != nullptr && *env != '\0') {
    path = env;
  } else {
    GTEST_SKIP() << "this FFmpeg has no libx265 and FOVEA_TEST_HEVC10_CLIP names no HEVC Main 10 clip";
  }
  expect_nvdec_matches_cpu(path);

  DecoderOptions narrow_cpu = cpu_options();
  narrow_cpu.eight_bit_output = true;
  Result<Decoded> cpu = decode_file(path, narrow_cpu);
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  DecoderOptions narrow_gpu = nvdec_options();
  narrow_gpu.eight_bit_output = true;
  Result<Decoded> gpu = decode_file(path, narrow_gpu);
  if (!gpu.is_ok() && gpu.status().code() == StatusCode::kUnsupported) {
    EXPECT_THAT(gpu.status().message(), HasSubstr("nv12"));
    GTEST_SKIP() << "this GPU cannot narrow to 8 bits: " << gpu.status().message();
  }
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  ASSERT_EQ(gpu->frames.size(), cpu->frames.size());
  for (std::size_t i = 0; i < gpu->frames.size(); ++i) {
    EXPECT_EQ(gpu->frames[i].image.format, PixelFormat::kNV12);
    EXPECT_EQ(gpu->frames[i].bit_depth, 8);
    Result<HostImage> host = download_nv12(gpu->frames[i], stream_.get());
    ASSERT_TRUE(host.is_ok()) << host.status().to_string();
    EXPECT_NEAR(mean_luma(*host), mean_luma(cpu->frames[i].image, {0, 0, 352, 288}), 1.0) << "frame " << i;
  }
}

}  // namespace
}  // namespace fovea::io
