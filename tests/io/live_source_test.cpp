// Live sources (issue 24) against a real RTSP server (fovea_rtsp_test_server, on GStreamer's RTSP
// server library) that the tests start, kill, stall and restart with another size, and against TCP
// servers that never answer or answer garbage. Every wait is bounded: no case may hang, and each
// says how long the demuxer took to give up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "io/decoder.h"
#include "io/demuxer.h"
#include "support/clocks.h"
#include "support/loopback_servers.h"
#include "support/rtsp_server_process.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

using Clock = std::chrono::steady_clock;
using testing::seconds_since;

// The bound on every network wait of these tests, in ms.
constexpr int kTimeoutMs = 1500;
// How late past that bound an answer may come on a busy two-core machine: FFmpeg notices its
// interrupt callback every 100 ms, and a process that tears down a connection has work to do.
constexpr double kMarginS = 1.5;
// Past the timeout plus margin a read has ended on its own or not at all.
constexpr double kGiveUpS = kTimeoutMs / 1000.0 + kMarginS;

Result<std::unique_ptr<Demuxer>> open_live(const std::string& url,
                                           RtspTransport transport = RtspTransport::kTcp,
                                           const std::atomic<bool>* cancel = nullptr) {
  return Demuxer::open(url, {.timeout_ms = kTimeoutMs, .rtsp_transport = transport, .cancel = cancel});
}

// Reads and decodes (cpu) until `wanted` frames came out, or fails; a bounded number of packets.
// Every frame must have the stream's size.
Status decode_frames(Demuxer& demuxer, int wanted) {
  DecoderOptions options;
  options.backend = DecoderBackend::kCpu;
  options.threads = 1;
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, open_cpu_decoder(demuxer.info(), options));
  int frames = 0;
  const auto on_frame = [&](Frame&& frame) {
    EXPECT_EQ(frame.image.width, demuxer.info().width);
    EXPECT_EQ(frame.image.height, demuxer.info().height);
    ++frames;
  };
  Packet packet;
  for (int packets = 0; packets < 10 * wanted && frames < wanted; ++packets) {
    FOVEA_ASSIGN_OR_RETURN(bool got, demuxer.read(packet));
    if (!got) {
      return make_error(StatusCode::kCorruptData, "the live stream ended after ", std::to_string(frames),
                        " frames");
    }
    FOVEA_TRY(send_and_receive(*decoder, packet, on_frame));
  }
  return frames >= wanted
             ? Status::ok()
             : make_error(StatusCode::kCorruptData, "only ", std::to_string(frames), " frames decoded");
}

// Reads until read() fails, at most `limit_s` seconds (packets already received come first); the
// failure, or kInternal when it read on past the limit.
Status read_until_error(Demuxer& demuxer, double limit_s) {
  const Clock::time_point start = Clock::now();
  Packet packet;
  while (seconds_since(start) < limit_s) {
    Result<bool> got = demuxer.read(packet);
    if (!got.is_ok()) {
      return got.status();
    }
    if (!*got) {
      return make_error(StatusCode::kInternal, "read() reported the end of a live stream, not an error");
    }
  }
  return make_error(StatusCode::kInternal, "read() still delivered packets after ", std::to_string(limit_s),
                    " s");
}

void expect_names(const Status& status, const std::string& text) {
  EXPECT_NE(status.message().find(text), std::string::npos)
      << "'" << text << "' not in: " << status.to_string();
}

// Each case gets a server of its own: several kill, stall or restart it.
class LiveSource : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = testing::start_rtsp_server();
    ASSERT_NE(server_, nullptr);
  }

  // Opens the server's stream and reads a few packets, so that what follows happens mid-stream.
  std::unique_ptr<Demuxer> open_streaming(RtspTransport transport = RtspTransport::kTcp,
                                          const std::atomic<bool>* cancel = nullptr) {
    Result<std::unique_ptr<Demuxer>> demuxer = open_live(server_->url(), transport, cancel);
    EXPECT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
    if (!demuxer.is_ok()) {
      return nullptr;
    }
    Packet packet;
    for (int i = 0; i < 5; ++i) {
      Result<bool> got = (*demuxer)->read(packet);
      EXPECT_TRUE(got.is_ok() && *got) << got.status().to_string();
    }
    return std::move(*demuxer);
  }

  // Opens the stream over `transport` and reads a few packets, does `disrupt` to the server, then
  // reads until read() fails: the failure, which must come within the timeout plus the margin and
  // name the URL.
  Status error_after(RtspTransport transport, const std::function<void()>& disrupt) {
    std::unique_ptr<Demuxer> demuxer = open_streaming(transport);
    if (!demuxer) {
      return make_error(StatusCode::kInternal, "the stream did not open");
    }
    disrupt();
    const Clock::time_point disrupted = Clock::now();
    const Status status = read_until_error(*demuxer, 2 * kGiveUpS);
    EXPECT_LE(seconds_since(disrupted), kGiveUpS);
    expect_names(status, server_->url());
    return status;
  }

  std::unique_ptr<testing::RtspServerProcess> server_;
};

void expect_live_h264_decodes(const std::string& url, RtspTransport transport) {
  Result<std::unique_ptr<Demuxer>> demuxer = open_live(url, transport);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  const StreamInfo& info = (*demuxer)->info();
  EXPECT_TRUE(info.live);
  EXPECT_EQ(info.codec, VideoCodec::kH264);
  EXPECT_EQ(info.width, 320);
  EXPECT_EQ(info.height, 240);
  EXPECT_EQ(info.duration_s, 0.0);
  const Status decoded = decode_frames(**demuxer, 15);
  EXPECT_TRUE(decoded.is_ok()) << decoded.to_string();
}

TEST_F(LiveSource, ReadsAndDecodesOverTcp) {
  expect_live_h264_decodes(server_->url(), RtspTransport::kTcp);
}

TEST_F(LiveSource, ReadsAndDecodesOverUdp) {
  expect_live_h264_decodes(server_->url(), RtspTransport::kUdp);
}

// Reads until a packet has a wall clock (the first RTCP sender report has come) and for 1.5 s at
// least, at most 12 s: the first packets are those the demuxer took in while it opened the stream,
// about a second's worth, and reading them takes no time. Then it checks the wall clock of the
// packets that come as they arrive, and of a later one, against the time they were read: on one
// machine, from an encoder with no delay, a frame arrives one frame time after its capture on an
// idle machine, so well within a second, and never before it. A mistake in the mapping (the NTP
// epoch, units, the pts origin) is off by far more.
void expect_capture_times_just_before_reading(Demuxer& demuxer) {
  const Clock::time_point start = Clock::now();
  Packet packet;
  std::optional<std::int64_t> wall_clock;
  while ((!wall_clock || seconds_since(start) < 1.5) && seconds_since(start) < 12.0) {
    Result<bool> got = demuxer.read(packet);
    ASSERT_TRUE(got.is_ok() && *got) << got.status().to_string();
    wall_clock = demuxer.wall_clock_us(packet.pts);
  }
  ASSERT_TRUE(wall_clock.has_value()) << "no RTCP sender report within 12 s";
  const auto expect_just_before_now = [](std::int64_t captured_us) {
    const std::int64_t read_us = testing::unix_time_us();
    EXPECT_LE(captured_us, read_us);
    EXPECT_GE(captured_us, read_us - 1'000'000)
        << "captured " << (read_us - captured_us) / 1000 << " ms before";
  };
  expect_just_before_now(*wall_clock);
  for (int i = 0; i < 15; ++i) {
    const Result<bool> read = demuxer.read(packet);
    ASSERT_TRUE(read.is_ok()) << read.status().to_string();
    ASSERT_TRUE(read.value()) << "the live stream ended";
  }
  expect_just_before_now(demuxer.wall_clock_us(packet.pts).value_or(0));
}

// The first client starts the shared stream (UDP); the second (TCP) joins it seconds later, when
// the stream's RTP clock has long left its start, so a pts origin taken from the wrong place shows.
TEST_F(LiveSource, WallClockFromRtcpIsTheCaptureTime) {
  Result<std::unique_ptr<Demuxer>> first = open_live(server_->url(), RtspTransport::kUdp);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  expect_capture_times_just_before_reading(**first);
  Result<std::unique_ptr<Demuxer>> second = open_live(server_->url(), RtspTransport::kTcp);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  expect_capture_times_just_before_reading(**second);
}

TEST(LiveSourceFile, AFileIsNotLiveAndHasNoWallClock) {
  const std::string path = ::fovea::testing::test_temp_dir() + "/clip.mp4";
  ASSERT_TRUE(::fovea::testing::write_clip(path, {}).is_ok());
  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  EXPECT_FALSE((*demuxer)->info().live);
  Packet packet;
  while ((*demuxer)->read(packet).value()) {
    EXPECT_FALSE((*demuxer)->wall_clock_us(packet.pts).has_value());
  }
}

// Both transports: over TCP the server's end closes the connection that carries the packets; over
// UDP only the RTSP connection beside them, while the packets just stop coming.
TEST_F(LiveSource, AKilledServerIsAnErrorWithinTheTimeout) {
  for (RtspTransport transport : {RtspTransport::kTcp, RtspTransport::kUdp}) {
    SCOPED_TRACE(transport == RtspTransport::kTcp ? "tcp" : "udp");
    const Status status = error_after(transport, [this] { server_->kill(); });
    EXPECT_TRUE(status.code() == StatusCode::kIoError || status.code() == StatusCode::kTimeout)
        << status.to_string();
    ASSERT_TRUE(server_->restart().is_ok());
  }
}

TEST_F(LiveSource, AStalledServerTimesOut) {
  for (RtspTransport transport : {RtspTransport::kTcp, RtspTransport::kUdp}) {
    SCOPED_TRACE(transport == RtspTransport::kTcp ? "tcp" : "udp");
    const Status status = error_after(transport, [this] { server_->pause(); });
    EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.to_string();
    expect_names(status, std::to_string(kTimeoutMs) + " ms");
    server_->resume();
  }
}

// The stop of a pipeline must not wait out a stalled camera's timeout.
TEST_F(LiveSource, CancelEndsAReadThatWaitsOnAStalledServer) {
  std::atomic<bool> cancel{false};
  std::unique_ptr<Demuxer> demuxer = open_streaming(RtspTransport::kTcp, &cancel);
  ASSERT_NE(demuxer, nullptr);
  server_->pause();
  std::atomic<Clock::rep> cancelled_at{0};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the read is waiting by now
    cancelled_at = Clock::now().time_since_epoch().count();
    cancel = true;
  });
  const Status status = read_until_error(*demuxer, 2 * kGiveUpS);
  const Clock::time_point returned = Clock::now();
  canceller.join();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.to_string();
  const double after_cancel_s =
      std::chrono::duration<double>(returned - Clock::time_point(Clock::duration(cancelled_at.load())))
          .count();
  EXPECT_LT(after_cancel_s, 0.5) << "the cancel was noticed late";
}

// A camera whose resolution was changed: the stream on the same URL, opened again, has the new size.
TEST_F(LiveSource, ARestartedServerWithANewSizeIsSeenByANewDemuxer) {
  {
    std::unique_ptr<Demuxer> before = open_streaming();
    ASSERT_NE(before, nullptr);
    EXPECT_EQ(before->info().width, 320);
  }
  const std::string url = server_->url();
  const Status restarted = server_->restart(testing::RtspStreamSpec{.width = 480, .height = 272});
  ASSERT_TRUE(restarted.is_ok()) << restarted.to_string();
  EXPECT_EQ(server_->url(), url);
  Result<std::unique_ptr<Demuxer>> after = open_live(url);
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();
  EXPECT_EQ((*after)->info().width, 480);
  EXPECT_EQ((*after)->info().height, 272);
  const Status decoded = decode_frames(**after, 5);
  EXPECT_TRUE(decoded.is_ok()) << decoded.to_string();
}

TEST(LiveSourceBadServer, ASilentServerTimesOut) {
  ::fovea::testing::SilentTcpServer server;
  const Clock::time_point start = Clock::now();
  const Status status = open_live(server.rtsp_url()).status();
  EXPECT_LE(seconds_since(start), kGiveUpS);
  EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.to_string();
  expect_names(status, server.rtsp_url());
}

TEST(LiveSourceBadServer, GarbageIsAnErrorNotACrash) {
  ::fovea::testing::GarbageTcpServer server;
  const Clock::time_point start = Clock::now();
  const Status status = open_live(server.rtsp_url()).status();
  EXPECT_LE(seconds_since(start), kGiveUpS);
  EXPECT_TRUE(status.code() == StatusCode::kCorruptData || status.code() == StatusCode::kIoError)
      << status.to_string();
  expect_names(status, server.rtsp_url());
}

TEST(LiveSourceBadServer, AClosedPortIsRefusedWithinTheTimeout) {
  const std::string url =
      "rtsp://127.0.0.1:" + std::to_string(::fovea::testing::unused_loopback_port()) + "/cam";
  const Clock::time_point start = Clock::now();
  const Status status = open_live(url).status();
  EXPECT_LE(seconds_since(start), kGiveUpS);
  EXPECT_EQ(status.code(), StatusCode::kIoError) << status.to_string();
  expect_names(status, url);
}

}  // namespace
}  // namespace fovea::io
