// Rotation comes from the stream's display matrix (phone videos): remux a clip with one and check
// that the demuxer reports it clockwise, as players apply it.
extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/display.h>
}

#include <gtest/gtest.h>

#include "io/demuxer.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

// Copies `input`'s first stream into `output`, with a display matrix rotating the picture by
// `clockwise` degrees. Returns false (with a gtest failure) when FFmpeg refuses.
bool remux_with_rotation(const std::string& input, const std::string& output, int clockwise) {
  AVFormatContext* in = nullptr;
  if (avformat_open_input(&in, input.c_str(), nullptr, nullptr) < 0 ||
      avformat_find_stream_info(in, nullptr) < 0) {
    ADD_FAILURE() << "cannot open " << input;
    return false;
  }
  AVFormatContext* out = nullptr;
  avformat_alloc_output_context2(&out, nullptr, nullptr, output.c_str());
  AVStream* stream = avformat_new_stream(out, nullptr);
  avcodec_parameters_copy(stream->codecpar, in->streams[0]->codecpar);
  stream->codecpar->codec_tag = 0;
  stream->time_base = in->streams[0]->time_base;
  auto* matrix =
      reinterpret_cast<int32_t*>(av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * 4));
  // av_display_rotation_set takes a clockwise angle; av_display_rotation_get (the demuxer's side)
  // returns the counter-clockwise one, and FFmpeg's own autorotate turns the picture by -get().
  av_display_rotation_set(matrix, clockwise);
  bool ok =
      avio_open(&out->pb, output.c_str(), AVIO_FLAG_WRITE) >= 0 && avformat_write_header(out, nullptr) >= 0;
  AVPacket* packet = av_packet_alloc();
  while (ok && av_read_frame(in, packet) >= 0) {
    av_packet_rescale_ts(packet, in->streams[0]->time_base, stream->time_base);
    packet->stream_index = 0;
    ok = av_interleaved_write_frame(out, packet) >= 0;
    av_packet_unref(packet);
  }
  ok = ok && av_write_trailer(out) >= 0;
  av_packet_free(&packet);
  avio_closep(&out->pb);
  avformat_free_context(out);
  avformat_close_input(&in);
  EXPECT_TRUE(ok) << "remuxing " << input << " failed";
  return ok;
}

TEST(DemuxerRotation, ReportsTheDisplayMatrixClockwise) {
  const std::string dir = test_temp_dir();
  auto clip = write_clip(dir + "/upright.mp4", ClipSpec{});
  ASSERT_TRUE(clip.is_ok()) << clip.status().to_string();
  auto upright = io::Demuxer::open(*clip);
  ASSERT_TRUE(upright.is_ok());
  EXPECT_EQ((*upright)->info().rotation_deg, 0);
  for (int clockwise : {90, 180, 270}) {
    const std::string rotated = dir + "/rotated_" + std::to_string(clockwise) + ".mp4";
    ASSERT_TRUE(remux_with_rotation(*clip, rotated, clockwise));
    auto demuxer = io::Demuxer::open(rotated);
    ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
    EXPECT_EQ((*demuxer)->info().rotation_deg, clockwise);
    EXPECT_EQ((*demuxer)->info().width, 320);  // coded size; rotation is applied on display
  }
}

}  // namespace
}  // namespace fovea::testing
