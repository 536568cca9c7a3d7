// Demuxer on libavformat: files (mp4/mov, mkv/webm, MPEG-TS, raw .h264/.265) and any URL FFmpeg
// opens, rtsp:// included. Every blocking call is bounded by a timeout and can be cancelled.
// H.264/HEVC packets from mp4/mkv (length-prefixed, avcC/hvcC) are converted to Annex B, which is
// what NVDEC's parser and raw bitstream files use; libavcodec accepts both.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/frame.h"
#include "core/status.h"
#include "io/video_codec.h"

namespace fovea::io {

struct StreamInfo {
  std::string url;
  std::string container;  // FFmpeg's short name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
  VideoCodec codec = VideoCodec::kOther;
  std::string codec_name;  // FFmpeg's codec name, e.g. "h264"
  int codec_id = 0;        // FFmpeg's AVCodecID, for decoder selection
  std::string profile;     // e.g. "High", "Main 10"; empty when unknown
  int bit_depth = 8;
  std::string pixel_format;  // FFmpeg's name, e.g. "yuv420p"
  int chroma_format = 1;     // 0 = 4:0:0, 1 = 4:2:0, 2 = 4:2:2, 3 = 4:4:4
  int width = 0;
  int height = 0;
  Rational frame_rate;  // average; {0,1} when the container does not say
  Rational time_base;
  double duration_s = 0.0;  // 0 when unknown (live sources)
  // The stream's first timestamp in seconds, where the container says (MPEG-TS starts at 1.4 s or
  // more, most MP4s at 0); 0 when it does not. A source's start and duration count from it.
  double start_s = 0.0;
  // 8-bit 4:2:0 whose samples span 0..255 (yuvj420p, or a "pc" color range): the decoders pass
  // them through as they are, so a re-encode must say so (transcode tags its output full range).
  bool full_range = false;
  std::int64_t frame_count = 0;         // from the container's index; 0 when unknown
  std::int64_t bit_rate = 0;            // bits per second; 0 when unknown
  int rotation_deg = 0;                 // display rotation from the display matrix, 0/90/180/270
  std::vector<std::uint8_t> extradata;  // Annex B parameter sets (SPS/PPS/VPS) when converted
  bool annex_b = false;                 // packets are Annex B byte streams
  // A network stream without a known duration (rtsp, rtmp, udp, srt, a live HLS playlist ...):
  // it never ends on its own, so its source reconnects when it fails and is batched as live.
  bool live = false;
  // FFmpeg's AVCodecParameters of the stream as the packets arrive (after Annex B conversion),
  // for the cpu decoder. Opaque outside src/io so that FFmpeg's headers stay there.
  std::shared_ptr<const void> codec_parameters;
};

struct Packet {
  std::vector<std::uint8_t> data;
  std::int64_t pts = 0;
  std::int64_t dts = 0;
  bool has_pts = false;
  bool has_dts = false;
  std::int64_t duration = 0;
  bool keyframe = false;
};

// How RTP reaches an rtsp:// client. TCP (interleaved in the RTSP connection) is the default:
// cameras behind NAT or a firewall lose UDP, which fails late and silently (no packets rather than
// an error), while TCP passes wherever the RTSP connection does. UDP has the lower latency and
// loses late packets instead of delaying the ones after them, on networks that pass it.
enum class RtspTransport { kTcp, kUdp };

struct DemuxOptions {
  // Bound on every blocking network operation (connect, read); files are not affected in
  // practice. rtsp:// that nothing serves fails within this time.
  int timeout_ms = 5000;
  bool annex_b = true;                                 // convert H.264/HEVC to Annex B
  RtspTransport rtsp_transport = RtspTransport::kTcp;  // rtsp:// only
  // Set from another thread (e.g. Ctrl-C) to make blocking calls return kCancelled promptly.
  const std::atomic<bool>* cancel = nullptr;
};

// Largest accepted frame: 16384×16384 and at most 2^28 pixels, as FFmpeg's av_image_check_size
// allows; beyond that a header is taken to be corrupt.
inline constexpr int kMaxVideoSide = 16384;
inline constexpr std::int64_t kMaxVideoPixels = std::int64_t{1} << 28;

class Demuxer {
 public:
  // Opens `url` and selects its best video stream. Errors name the url and the reason.
  static Result<std::unique_ptr<Demuxer>> open(const std::string& url, const DemuxOptions& options = {});
  virtual ~Demuxer() = default;

  virtual const StreamInfo& info() const = 0;
  // Reads the next packet of the selected video stream into `packet`. Returns true on a packet,
  // false at the end of the stream, an error otherwise (kTimeout, kCancelled, kIoError, ...).
  virtual Result<bool> read(Packet& packet) = 0;
  // Seeks to the keyframe at or before `seconds` (used for looping sources).
  virtual Status seek(double seconds) = 0;
  // When the frame with stream pts `pts` (in info().time_base) was captured, in microseconds
  // since the Unix epoch, by the sender's clock: from the RTCP sender reports of an RTSP stream,
  // which map the stream's clock to the sender's wall clock (NTP). std::nullopt for streams
  // without them (files, most other protocols) and for an RTSP stream until its first sender
  // report has arrived (servers send one every few seconds); the caller then uses the arrival
  // time. Call it from the thread that reads: read() is what takes the reports in.
  virtual std::optional<std::int64_t> wall_clock_us(std::int64_t pts) const = 0;
};

}  // namespace fovea::io
