// Live video out (sinks.stream, issue 24) in a CPU detection flow, against real readers: the HLS
// playlist is read back with libavformat (every frame, #EXT-X-ENDLIST at the end, also after an
// interrupt; playlist_size bounds the segment files on disk), and the RTSP push goes to FFmpeg's
// RTSP demuxer in listen mode (it takes ANNOUNCE/RECORD), which the test stops mid-run and starts
// again: the flow goes on, the drops are counted, the push connects again and frames arrive again,
// while the HLS output beside it loses nothing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "detection_flow_fixture.h"
#include "pipeline/flow.h"
#include "pipeline/sinks.h"
#include "pipeline/stats.h"
#include "support/loopback_servers.h"

extern "C" {
#include <libavformat/avformat.h>
}

namespace fovea::pipeline {
namespace {

using namespace detect_test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kClipFrames = 150;  // 5 s at 30 fps: five 1 s segments
constexpr const char* kClip = "long.mp4";
constexpr const char* kStream = "long";  // the source's name: the clip's

// The video packets a playlist or an RTSP session holds, read with libavformat; -1 when it does not
// open. `stop` (may be null) makes blocking calls return.
std::int64_t count_video_packets(const std::string& url, AVDictionary** options,
                                 const std::atomic<bool>* stop = nullptr,
                                 std::atomic<std::int64_t>* progress = nullptr) {
  AVFormatContext* context = avformat_alloc_context();
  context->interrupt_callback.callback = [](void* flag) -> int {
    return flag != nullptr && static_cast<const std::atomic<bool>*>(flag)->load() ? 1 : 0;
  };
  context->interrupt_callback.opaque = const_cast<std::atomic<bool>*>(stop);
  if (avformat_open_input(&context, url.c_str(), nullptr, options) < 0) return -1;
  std::int64_t packets = 0;
  if (avformat_find_stream_info(context, nullptr) >= 0) {
    AVPacket* packet = av_packet_alloc();
    while (av_read_frame(context, packet) >= 0) {
      if (context->streams[packet->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) {
        ++packets;
        if (progress != nullptr) progress->store(packets);
      }
      av_packet_unref(packet);
    }
    av_packet_free(&packet);
  }
  avformat_close_input(&context);
  return packets;
}

std::int64_t playlist_frames(const std::string& playlist) {
  return count_video_packets(playlist, nullptr);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

int segment_files(const std::filesystem::path& folder) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".ts") ++count;
  }
  return count;
}

// An RTSP server that takes one pushed session (FFmpeg's RTSP demuxer, rtsp_flags=listen) on a
// thread and counts its video packets until the session ends or stop() is called.
class RtspReceiver {
 public:
  explicit RtspReceiver(std::string url) : url_(std::move(url)) {
    thread_ = std::thread([this] {
      AVDictionary* options = nullptr;
      av_dict_set(&options, "rtsp_flags", "listen", 0);
      av_dict_set(&options, "listen_timeout", "30", 0);
      av_dict_set(&options, "rtsp_transport", "tcp", 0);
      count_video_packets(url_, &options, &stop_, &packets_);
      av_dict_free(&options);
    });
  }
  ~RtspReceiver() { stop(); }
  RtspReceiver(const RtspReceiver&) = delete;
  RtspReceiver& operator=(const RtspReceiver&) = delete;

  // Closes the session (and the listening socket): the pusher's writes fail.
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool wait_for_packets(std::int64_t count, std::chrono::seconds timeout) const {
    const auto deadline = Clock::now() + timeout;
    while (packets_.load() < count) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }
  std::int64_t packets() const { return packets_.load(); }

 private:
  std::string url_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> packets_{0};
  std::thread thread_;
};

class StreamSinkFlow : public DetectionFlow {
 protected:
  void SetUp() override {
    DetectionFlow::SetUp();
    ASSERT_TRUE(
        io::write_synthetic_clip(path(kClip), {.width = kWidth, .height = kHeight, .frames = kClipFrames})
            .is_ok());
  }

  PipelineConfig stream_config(StreamSinkConfig stream, bool loop = false) const {
    PipelineConfig cfg = config({kClip});
    cfg.sources[0].loop = loop;
    stream.preset = "ultrafast";
    stream.segment_seconds = 1;
    stream.reconnect_min_ms = 50;
    stream.reconnect_max_ms = 400;
    cfg.sinks.stream = stream;
    return cfg;
  }

  std::filesystem::path playlist() const { return hls_playlist_path(path("hls"), kStream); }

  static const SinkReport* output(const FlowResult& result, const std::string& location_part) {
    for (const SinkReport& report : result.outputs) {
      if (report.path.find(location_part) != std::string::npos) return &report;
    }
    return nullptr;
  }
};

TEST_F(StreamSinkFlow, HlsHoldsEveryFrameAndEndsItsPlaylist) {
  Result<FlowResult> result =
      run_flow(stream_config({.hls = path("hls"), .playlist_size = 100}), {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_FALSE(result->partial());
  ASSERT_EQ(result->outputs.size(), 1u);
  EXPECT_EQ(result->outputs[0].frames, kClipFrames);
  EXPECT_EQ(result->outputs[0].dropped, 0);
  EXPECT_EQ(result->outputs[0].path, playlist().string());

  const std::string text = read_text(playlist());
  EXPECT_NE(text.find("#EXT-X-ENDLIST"), std::string::npos) << text;
  EXPECT_NE(text.find("#EXT-X-INDEPENDENT-SEGMENTS"), std::string::npos) << text;
  EXPECT_EQ(playlist_frames(playlist().string()), kClipFrames);
  // 1 s segments of a 5 s clip, each starting on a keyframe.
  EXPECT_GE(segment_files(playlist().parent_path()), 4);
}

TEST_F(StreamSinkFlow, PlaylistSizeBoundsTheSegmentsOnDisk) {
  constexpr int kPlaylistSize = 2;
  Result<FlowResult> result = run_flow(stream_config({.hls = path("hls"), .playlist_size = kPlaylistSize}),
                                       {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const std::string text = read_text(playlist());
  EXPECT_NE(text.find("#EXT-X-ENDLIST"), std::string::npos) << text;
  int listed = 0;
  for (std::size_t at = text.find(".ts"); at != std::string::npos; at = text.find(".ts", at + 1)) ++listed;
  EXPECT_EQ(listed, kPlaylistSize) << text;
  // The muxer keeps one segment past the playlist for players still reading it (hls_delete_threshold).
  EXPECT_LE(segment_files(playlist().parent_path()), kPlaylistSize + 1);
  const std::int64_t frames = playlist_frames(playlist().string());
  EXPECT_GT(frames, 0);
  EXPECT_LT(frames, kClipFrames);  // the older segments are gone
}

TEST_F(StreamSinkFlow, AnInterruptedFlowStillEndsItsPlaylist) {
  std::atomic<bool> interrupt{false};
  std::thread stopper([&interrupt] {
    std::this_thread::sleep_for(3s);
    interrupt = true;
  });
  Result<FlowResult> result =
      run_flow(stream_config({.hls = path("hls"), .playlist_size = 1000}, /*loop=*/true),
               {.device = DeviceChoice::kCpu, .interrupt = &interrupt});
  stopper.join();
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->interrupted);
  ASSERT_EQ(result->outputs.size(), 1u);
  const std::string text = read_text(playlist());
  EXPECT_NE(text.find("#EXT-X-ENDLIST"), std::string::npos) << text;
  EXPECT_GT(result->outputs[0].frames, 0);
  EXPECT_EQ(playlist_frames(playlist().string()), result->outputs[0].frames);
}

TEST_F(StreamSinkFlow, AnHlsFolderHoldingAnInputIsRefused) {
  Result<FlowResult> result = run_flow(stream_config({.hls = dir_.string()}), {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("sinks.stream.hls"), std::string::npos)
      << result.status().to_string();
  EXPECT_FALSE(std::filesystem::exists(dir_ / kStream / "index.m3u8"));
}

TEST_F(StreamSinkFlow, RtspPushReconnectsAfterTheServerReturnsWhileHlsCarriesOn) {
  const int port = testing::unused_loopback_port();
  const std::string base = "rtsp://127.0.0.1:" + std::to_string(port) + "/live";
  const std::string url = rtsp_push_url(base, kStream, false);
  auto first = std::make_unique<RtspReceiver>(url);

  std::atomic<bool> interrupt{false};
  Result<FlowResult> result = make_error(StatusCode::kInternal, "not run");
  std::thread flow([&] {
    result = run_flow(stream_config({.hls = path("hls"), .rtsp = base, .playlist_size = 1000}, /*loop=*/true),
                      {.device = DeviceChoice::kCpu, .interrupt = &interrupt});
  });
  const bool first_received = first->wait_for_packets(20, 60s);
  first->stop();  // the server goes away mid-run
  std::this_thread::sleep_for(1s);
  RtspReceiver second(url);  // and comes back
  const bool second_received = second.wait_for_packets(10, 60s);
  interrupt = true;
  flow.join();
  second.stop();

  EXPECT_TRUE(first_received) << "the first server got " << first->packets() << " packets";
  EXPECT_TRUE(second_received) << "the push did not reach the returned server: " << second.packets();
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_FALSE(result->partial());
  const SinkReport* rtsp = output(*result, "rtsp://");
  const SinkReport* hls = output(*result, "index.m3u8");
  ASSERT_NE(rtsp, nullptr);
  ASSERT_NE(hls, nullptr);
  EXPECT_EQ(rtsp->error, "");
  EXPECT_GT(rtsp->dropped, 0);  // while it was away
  EXPECT_GE(rtsp->reconnects, 1);
  EXPECT_GE(rtsp->frames, first->packets() + second.packets() - 2);
  // The HLS output beside it lost nothing.
  EXPECT_EQ(hls->dropped, 0);
  EXPECT_EQ(hls->frames, rtsp->frames + rtsp->dropped);
  EXPECT_EQ(playlist_frames(playlist().string()), hls->frames);
  // The live counters that /stats and /metrics read say the same, and the push is back up.
  const std::vector<LiveOutputStats>& live = result->stats.live_outputs;
  const auto live_rtsp = std::find_if(
      live.begin(), live.end(), [](const LiveOutputStats& o) { return o.location.starts_with("rtsp://"); });
  ASSERT_NE(live_rtsp, live.end());
  EXPECT_EQ(live_rtsp->frames, rtsp->frames);
  EXPECT_EQ(live_rtsp->dropped, rtsp->dropped);
  EXPECT_EQ(live_rtsp->reconnects, rtsp->reconnects);
  EXPECT_TRUE(live_rtsp->connected);
  EXPECT_EQ(to_json(result->stats)["live_outputs"].size(), 2u);
}

TEST(StreamSinkConfigTest, KeysAreReadAndCheckedTogether) {
  const std::string head = "sources: [{uri: a.mp4}]\nmodel: {path: m.onnx}\nsinks:\n  stream:\n";
  Result<PipelineConfig> config =
      parse_config(head + "    hls: out\n    rtsp: rtsp://h/live\n    transport: udp\n", "t.yaml");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  ASSERT_TRUE(config->sinks.stream.has_value());
  EXPECT_EQ(config->sinks.stream->transport, io::RtspTransport::kUdp);
  EXPECT_EQ(config->sinks.stream->segment_seconds, 2);
  Result<PipelineConfig> dumped = parse_config(dump_config(*config), "dump");
  ASSERT_TRUE(dumped.is_ok()) << dumped.status().to_string();
  EXPECT_EQ(*dumped, *config);

  auto error = [&head](const std::string& keys) {
    Result<PipelineConfig> refused = parse_config(head + keys, "t.yaml");
    return refused.is_ok() ? std::string("accepted") : refused.status().message();
  };
  EXPECT_NE(error("    preset: fast\n").find("give hls, rtsp or both"), std::string::npos);
  EXPECT_NE(error("    rtsp: http://h/live\n").find("sinks.stream.rtsp"), std::string::npos);
  EXPECT_NE(error("    hls: out\n    playlist_size: 0\n").find("sinks.stream.playlist_size"),
            std::string::npos);
  EXPECT_NE(error("    hls: out\n    mosaic: {width: 640}\n  video: {output_dir: v, mosaic: {}}\n")
                .find("sinks.stream.mosaic"),
            std::string::npos);
}

TEST_F(StreamSinkFlow, ServeTakesOnlyTheMosaic) {
  PipelineConfig cfg = stream_config({.hls = path("hls")});
  cfg.sources.clear();
  cfg.mux.width = kWidth;
  cfg.mux.height = kHeight;
  FlowControl control;
  Result<FlowResult> result =
      run_flow(cfg, {.device = DeviceChoice::kCpu, .control = &control, .source_slots = 2});
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("sinks.stream.mosaic"), std::string::npos)
      << result.status().to_string();
}

}  // namespace
}  // namespace fovea::pipeline
