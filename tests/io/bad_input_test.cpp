// Bad input on the cpu path: each case gets a clear error naming the file and the reason, or
// decodes what it can and reports the damage; never a crash, hang or leak (ASan preset).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "io/decoder.h"
#include "io/io_test_util.h"
#include "support/loopback_servers.h"
#include "support/test_media.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace fovea::io {
namespace {

using Clock = std::chrono::steady_clock;

void expect_error_names(const Status& status, StatusCode code, const std::string& path,
                        const std::string& reason) {
  EXPECT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_NE(status.message().find(path), std::string::npos) << status.to_string();
  EXPECT_NE(status.message().find(reason), std::string::npos) << status.to_string();
}

std::string write_text_file(const std::string& name, const std::string& text) {
  const std::string path = testing::test_temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string make_clip(const std::string& name, int frames = 60) {
  testing::ClipSpec spec;
  spec.frames = frames;
  spec.gop = 15;  // several keyframes, so a decoder can recover after damage
  const std::string path = testing::test_temp_dir() + "/" + name;
  Result<std::string> written = testing::write_clip(path, spec);
  EXPECT_TRUE(written.is_ok()) << written.status().to_string();
  return path;
}

TEST(BadInput, MissingFile) {
  const std::string path = testing::test_temp_dir() + "/does-not-exist.mp4";
  expect_error_names(Demuxer::open(path).status(), StatusCode::kNotFound, path, "no such file");
}

TEST(BadInput, EmptyFile) {
  const std::string path = write_text_file("empty.mp4", "");
  expect_error_names(Demuxer::open(path).status(), StatusCode::kCorruptData, path, "empty");
}

TEST(BadInput, NonMediaFile) {
  const std::string path = write_text_file("notes.mp4", "these are meeting notes, not a video\n");
  expect_error_names(Demuxer::open(path).status(), StatusCode::kCorruptData, path, "not a media file");
}

TEST(BadInput, Directory) {
  const std::string path = testing::test_temp_dir();
  expect_error_names(Demuxer::open(path).status(), StatusCode::kInvalidArgument, path, "directory");
}

TEST(BadInput, Mp4TruncatedAtHalfIsRejectedWithTheReason) {
  const std::string clip = make_clip("clip.mp4");
  const std::string truncated = testing::test_temp_dir() + "/truncated.mp4";
  ASSERT_TRUE(testing::copy_truncated(clip, truncated, 0.5).is_ok());
  // The index (moov) of a plain mp4 is written last, so half a file has no index at all.
  Status status = Demuxer::open(truncated).status();
  expect_error_names(status, StatusCode::kCorruptData, truncated, "moov atom not found");
}

// Streams without a trailing index decode what is there and end cleanly.
void expect_truncated_stream_decodes_partially(const std::string& extension) {
  SCOPED_TRACE(extension);
  const std::string clip = make_clip("clip" + extension);
  const std::string truncated = testing::test_temp_dir() + "/truncated" + extension;
  ASSERT_TRUE(testing::copy_truncated(clip, truncated, 0.5).is_ok());
  Result<testing::DecodeOutcome> outcome = testing::decode_with_cpu(truncated);
  ASSERT_TRUE(outcome.is_ok()) << outcome.status().to_string();
  EXPECT_TRUE(outcome->status.is_ok()) << outcome->status.to_string();
  EXPECT_GT(outcome->frames.size(), 5u);
  EXPECT_LT(outcome->frames.size(), 60u);
}

TEST(BadInput, MkvTruncatedAtHalfDecodesWhatIsThere) {
  expect_truncated_stream_decodes_partially(".mkv");
}
TEST(BadInput, MpegTsTruncatedAtHalfDecodesWhatIsThere) {
  expect_truncated_stream_decodes_partially(".ts");
}
TEST(BadInput, RawH264TruncatedAtHalfDecodesWhatIsThere) {
  expect_truncated_stream_decodes_partially(".h264");
}

TEST(BadInput, BitFlippedStreamDecodesToTheEndAndReportsDamage) {
  const std::string clip = make_clip("clip.h264");
  const std::string flipped = testing::test_temp_dir() + "/flipped.h264";
  // Past the first kilobyte (parameter sets and most of the first keyframe's header).
  ASSERT_TRUE(testing::copy_bit_flipped(clip, flipped, 40, 1024, 7).is_ok());
  Result<testing::DecodeOutcome> outcome = testing::decode_with_cpu(flipped);
  ASSERT_TRUE(outcome.is_ok()) << outcome.status().to_string();
  EXPECT_TRUE(outcome->status.is_ok()) << outcome->status.to_string();
  EXPECT_GT(outcome->stats.frames_damaged + outcome->stats.packets_rejected, 0);
  // Recovery: frames keep coming after the damage, up to the end of the stream.
  EXPECT_GT(outcome->frames.size(), 30u);
}

// A video codec FFmpeg knows by name but cannot decode: looked up rather than hard-coded, since
// which decoders exist depends on the FFmpeg build.
AVCodecID codec_without_decoder() {
  for (const AVCodecDescriptor* d = avcodec_descriptor_next(nullptr); d; d = avcodec_descriptor_next(d)) {
    if (d->type == AVMEDIA_TYPE_VIDEO && !avcodec_find_decoder(d->id)) {
      return d->id;
    }
  }
  return AV_CODEC_ID_NONE;
}

TEST(BadInput, CodecWithoutAnyDecoderIsAClearError) {
  const AVCodecID codec = codec_without_decoder();
  if (codec == AV_CODEC_ID_NONE) {
    GTEST_SKIP() << "this FFmpeg build has a decoder for every video codec it knows";
  }
  const std::string clip = make_clip("clip.mp4", 3);
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(clip);
  ASSERT_TRUE(demuxer.is_ok());
  StreamInfo info = (*demuxer)->info();
  auto* parameters = avcodec_parameters_alloc();
  ASSERT_GE(
      avcodec_parameters_copy(parameters, static_cast<const AVCodecParameters*>(info.codec_parameters.get())),
      0);
  parameters->codec_id = codec;
  info.codec_parameters = std::shared_ptr<AVCodecParameters>(
      parameters, [](AVCodecParameters* p) { avcodec_parameters_free(&p); });
  info.codec = VideoCodec::kOther;
  info.codec_name = avcodec_get_name(codec);
  Result<OpenedDecoder> opened = open_decoder(info, DecoderOptions{});
  expect_error_names(opened.status(), StatusCode::kUnsupported, clip,
                     "no CPU decoder for codec '" + info.codec_name);
}

// Writes a Matroska header that claims a 20000x20000 MJPEG stream, with one tiny packet.
std::string write_absurd_dimensions_file() {
  const std::string path = testing::test_temp_dir() + "/absurd.mkv";
  AVFormatContext* format = nullptr;
  EXPECT_GE(avformat_alloc_output_context2(&format, nullptr, "matroska", path.c_str()), 0);
  AVStream* stream = avformat_new_stream(format, nullptr);
  stream->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
  stream->codecpar->codec_id = AV_CODEC_ID_MJPEG;
  stream->codecpar->format = AV_PIX_FMT_YUVJ420P;
  stream->codecpar->width = 20000;
  stream->codecpar->height = 20000;
  stream->time_base = {1, 25};
  EXPECT_GE(avio_open(&format->pb, path.c_str(), AVIO_FLAG_WRITE), 0);
  EXPECT_GE(avformat_write_header(format, nullptr), 0);
  AVPacket* packet = av_packet_alloc();
  EXPECT_GE(av_new_packet(packet, 64), 0);
  packet->stream_index = 0;
  packet->pts = packet->dts = 0;
  EXPECT_GE(av_write_frame(format, packet), 0);
  av_packet_free(&packet);
  av_write_trailer(format);
  avio_closep(&format->pb);
  avformat_free_context(format);
  return path;
}

TEST(BadInput, AbsurdDimensions) {
  const std::string path = write_absurd_dimensions_file();
  expect_error_names(Demuxer::open(path).status(), StatusCode::kCorruptData, path,
                     "absurd video dimensions 20000x20000");
}

TEST(BadInput, RtspThatNeverAnswersFailsWithinTheTimeout) {
  const testing::SilentTcpServer server;
  const std::string url = server.rtsp_url();
  DemuxOptions options;
  options.timeout_ms = 1000;
  const auto start = Clock::now();
  Status status = Demuxer::open(url, options).status();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(url), std::string::npos) << status.to_string();
  EXPECT_TRUE(status.code() == StatusCode::kTimeout || status.code() == StatusCode::kIoError)
      << status.to_string();
  EXPECT_LT(seconds, 4.0) << "the 1 s timeout was not honoured";
}

TEST(BadInput, RtspWithNothingListeningFailsFast) {
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(testing::unused_loopback_port()) + "/cam";
  DemuxOptions options;
  options.timeout_ms = 2000;
  const auto start = Clock::now();
  Status status = Demuxer::open(url, options).status();
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(url), std::string::npos) << status.to_string();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 3.0);
}

}  // namespace
}  // namespace fovea::io
