#include "io/demuxer.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/log.h"
#include "io/av_error.h"
#include "io/av_handles.h"
#include "io/url.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

namespace fovea::io {
namespace {

using Clock = std::chrono::steady_clock;

bool is_rtsp_url(const std::string& url) {
  return url.starts_with("rtsp://") || url.starts_with("rtsps://");
}

const char* rtsp_transport_name(RtspTransport transport) {
  return transport == RtspTransport::kUdp ? "udp" : "tcp";
}

VideoCodec codec_from_id(AVCodecID id) {
  switch (id) {
    case AV_CODEC_ID_H264: return VideoCodec::kH264;
    case AV_CODEC_ID_HEVC: return VideoCodec::kHevc;
    case AV_CODEC_ID_VP9: return VideoCodec::kVp9;
    case AV_CODEC_ID_AV1: return VideoCodec::kAv1;
    case AV_CODEC_ID_MPEG4: return VideoCodec::kMpeg4;
    case AV_CODEC_ID_MJPEG: return VideoCodec::kMjpeg;
    default: return VideoCodec::kOther;
  }
}

// Display rotation, clockwise, in 0/90/180/270; FFmpeg's matrix gives degrees counter-clockwise.
int rotation_degrees(const AVStream* stream) {
  const auto* matrix =
      reinterpret_cast<const int32_t*>(av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, nullptr));
  if (!matrix) {
    return 0;
  }
  const double counter_clockwise = av_display_rotation_get(matrix);
  if (std::isnan(counter_clockwise)) {
    return 0;
  }
  int clockwise = static_cast<int>(std::lround(-counter_clockwise)) % 360;
  return clockwise < 0 ? clockwise + 360 : clockwise;
}

Rational to_rational(AVRational r) {
  return {r.num, r.den};
}

bool starts_with_start_code(const uint8_t* data, int size) {
  return size >= 4 && data[0] == 0 && data[1] == 0 && (data[2] == 1 || (data[2] == 0 && data[3] == 1));
}

// Packets skipped while waiting for a stream's first keyframe, at most: ten seconds at 60 fps, more
// than any camera's keyframe interval; a stream that flags none is then read as it is.
constexpr int kMaxPacketsBeforeKeyframe = 600;

class FfmpegDemuxer final : public Demuxer {
 public:
  FfmpegDemuxer(std::string url, DemuxOptions options) : url_(std::move(url)), options_(options) {}

  Status open() {
    install_ffmpeg_log_bridge();
    FOVEA_TRY(check_local_file());
    FOVEA_TRY(open_input());
    FOVEA_TRY(select_video_stream());
    FOVEA_TRY(setup_annex_b());
    fill_info();
    if (info_.width == 0 && info_.height == 0) {
      return make_error(StatusCode::kCorruptData, url_, ": the video stream's size is unknown (",
                        last_or("no decodable frame in the probed data"), ")");
    }
    return validate_dimensions(info_.width, info_.height);
  }

  const StreamInfo& info() const override { return info_; }

  Result<bool> read(Packet& packet) override {
    while (true) {
      if (bsf_) {
        const int received = av_bsf_receive_packet(bsf_.get(), out_packet_.get());
        if (received >= 0) {
          copy_out(*out_packet_, packet);
          av_packet_unref(out_packet_.get());
          return true;
        }
        if (received == AVERROR_EOF) {
          return false;
        }
        if (received != AVERROR(EAGAIN)) {
          // A packet the container already marked corrupt is a file cut short: its read fails, as
          // it always did. One damaged inside a whole packet (a NAL length past its end) is skipped,
          // as a decoder skips what it cannot decode, so that the rest of the file still plays.
          if (sent_corrupt_) return error(received, "Annex B conversion failed");
          skip_damaged_packet(error(received, "Annex B conversion failed"));
          av_bsf_flush(bsf_.get());
          continue;
        }
      }
      if (input_ended_) {
        return false;
      }
      FOVEA_ASSIGN_OR_RETURN(bool got, read_stream_packet());
      if (!got) {
        input_ended_ = true;
        if (bsf_) {
          av_bsf_send_packet(bsf_.get(), nullptr);  // flush; the next receive reports the end
        }
        continue;
      }
      if (!bsf_) {
        copy_out(*in_packet_, packet);
        av_packet_unref(in_packet_.get());
        return true;
      }
      sent_corrupt_ = (in_packet_->flags & AV_PKT_FLAG_CORRUPT) != 0;
      const int sent = av_bsf_send_packet(bsf_.get(), in_packet_.get());
      av_packet_unref(in_packet_.get());
      if (sent < 0) {
        if (sent_corrupt_) return error(sent, "Annex B conversion rejected a packet");
        skip_damaged_packet(error(sent, "Annex B conversion rejected a packet"));
        av_bsf_flush(bsf_.get());
      }
    }
  }

  Status seek(double seconds) override {
    const auto timestamp = static_cast<int64_t>(seconds * AV_TIME_BASE);
    arm_deadline();
    // To the stream's start, a byte stream (MPEG-TS/PS, raw H.264/HEVC) goes back to its first byte:
    // its search by timestamp can land past the first keyframe, and the stream would start at the
    // next one (or, with one keyframe, never).
    const bool to_first_byte = seconds <= info_.start_s && is_byte_stream() && format_->pb != nullptr;
    const int result = to_first_byte ? av_seek_frame(format_.get(), -1, 0, AVSEEK_FLAG_BYTE)
                                     : av_seek_frame(format_.get(), -1, timestamp, AVSEEK_FLAG_BACKWARD);
    if (result < 0) {
      return error(result, "seek failed");
    }
    if (bsf_) {
      av_bsf_flush(bsf_.get());
    }
    input_ended_ = false;
    await_keyframe();
    return Status::ok();
  }

  bool is_byte_stream() const {
    const std::string_view name = format_->iformat->name;
    return name == "mpegts" || name == "mpeg" || name == "h264" || name == "hevc" || name == "mpegvideo";
  }

  void await_keyframe() {
    awaiting_keyframe_ = true;
    skipped_before_keyframe_ = 0;
  }

  // FFmpeg's RTSP demuxer sets start_time_realtime when the first RTCP sender report (SR) of the
  // stream arrives (libavformat/rtsp.c, ff_rtsp_fetch_packet): the SR's NTP time, less the RTP
  // time from the stream's base timestamp to the SR's RTP timestamp (rtcp_ts_offset, rtpdec.c,
  // rtcp_parse_packet). The base timestamp is the rtptime of the PLAY reply's RTP-Info, else the
  // first packet's RTP timestamp, and it is the RTP time of pts 0: rtpdec.c's finalize_packet
  // gives a packet pts = its RTP timestamp - base timestamp (unwrapped), plus the start of the
  // PLAY reply's npt range, which is 0 for a live stream ("npt=now-" or "npt=0-"; a server that
  // answers a later start shifts every wall clock by that much). So start_time_realtime is the
  // sender's wall clock at pts 0, as AVFormatContext documents, and a frame's is that plus its
  // pts. Later SRs do not refine it: the sender's RTP clock is taken to run at its nominal rate.
  std::optional<std::int64_t> wall_clock_us(std::int64_t pts) const override {
    const int64_t start_us = format_->start_time_realtime;
    if (start_us == AV_NOPTS_VALUE || start_us <= 0) {
      return std::nullopt;
    }
    // AVRational{1, AV_TIME_BASE} is AV_TIME_BASE_Q, whose C compound literal is not C++.
    return start_us + av_rescale_q(pts, stream_->time_base, AVRational{1, AV_TIME_BASE});
  }

 private:
  // Says which packet was left out and why: the first few as warnings, the rest at debug level.
  void skip_damaged_packet(const Status& why) {
    constexpr int kWarned = 5;
    ++damaged_packets_;
    if (damaged_packets_ <= kWarned) {
      log_warn("{}: a damaged packet was skipped ({}){}", url_, why.message(),
               damaged_packets_ == kWarned ? "; further ones are logged at debug level" : "");
    } else {
      log_debug("{}: a damaged packet was skipped ({})", url_, why.message());
    }
  }

  Status error(int code, std::string_view what) const {
    std::string message(what);
    const std::string detail = last_ffmpeg_message();
    message.append(": ").append(av_error_text(code));
    if (!detail.empty()) {
      message.append(" (").append(detail).append(")");
    }
    if (code == AVERROR_EXIT) {
      // The interrupt callback ended the call: a deadline or the user, not the data.
      const bool cancelled = options_.cancel && options_.cancel->load();
      return Status(cancelled ? StatusCode::kCancelled : StatusCode::kTimeout,
                    url_ + ": " +
                        (cancelled ? std::string("cancelled")
                                   : "no answer within " + std::to_string(options_.timeout_ms) + " ms"));
    }
    return Status(av_error_status_code(code), url_ + ": " + message);
  }

  // Local files get specific messages for the common mistakes before FFmpeg sees them.
  Status check_local_file() const {
    if (is_network_url(url_)) {
      return Status::ok();
    }
    std::error_code ec;
    const std::filesystem::path path(local_path(url_));
    if (!std::filesystem::exists(path, ec)) {
      return make_error(StatusCode::kNotFound, url_, ": no such file");
    }
    if (std::filesystem::is_directory(path, ec)) {
      return make_error(StatusCode::kInvalidArgument, url_, ": is a directory, not a media file");
    }
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0) {
      return make_error(StatusCode::kCorruptData, url_, ": file is empty");
    }
    return Status::ok();
  }

  static int interrupt_callback(void* opaque) {
    auto* self = static_cast<FfmpegDemuxer*>(opaque);
    const bool cancelled = self->options_.cancel && self->options_.cancel->load(std::memory_order_relaxed);
    if (cancelled || Clock::now() > self->deadline_) {
      self->interrupted_ = true;
      return 1;
    }
    return 0;
  }

  void arm_deadline() {
    deadline_ = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
    interrupted_ = false;
    clear_last_ffmpeg_message();
  }

  Status open_input() {
    AVFormatContext* raw = avformat_alloc_context();
    if (!raw) {
      return make_error(StatusCode::kResourceExhausted, url_, ": out of memory");
    }
    raw->interrupt_callback = {&FfmpegDemuxer::interrupt_callback, this};
    AVDictionary* dict = nullptr;
    if (is_network_url(url_)) {
      // Socket-level timeouts in microseconds; the interrupt callback bounds the rest.
      const std::string timeout_us = std::to_string(int64_t{options_.timeout_ms} * 1000);
      av_dict_set(&dict, "timeout", timeout_us.c_str(), 0);
      av_dict_set(&dict, "rw_timeout", timeout_us.c_str(), 0);
    }
    if (is_rtsp_url(url_)) {
      av_dict_set(&dict, "rtsp_transport", rtsp_transport_name(options_.rtsp_transport), 0);
    }
    AvPtr<AVDictionary> options_guard(nullptr);
    arm_deadline();
    const int opened = avformat_open_input(&raw, url_.c_str(), nullptr, &dict);
    options_guard.reset(dict);
    if (opened < 0) {
      // avformat_open_input frees the context on failure. A network source that ran out of time
      // can surface as any error code (RTSP reports "invalid data"), so the deadline decides.
      if (Clock::now() > deadline_) {
        return error(AVERROR_EXIT, "open");
      }
      return opened == AVERROR_INVALIDDATA && !is_network_url(url_)
                 ? make_error(StatusCode::kCorruptData, url_, ": not a media file FFmpeg can read (",
                              last_or(av_error_text(opened)), ")")
                 : error(opened, "cannot open");
    }
    format_.reset(raw);
    // Sizes the container declares are checked before FFmpeg probes the streams with a decoder,
    // which could try to allocate a frame of that size.
    for (unsigned i = 0; i < format_->nb_streams; ++i) {
      const AVCodecParameters* declared = format_->streams[i]->codecpar;
      if (declared->codec_type == AVMEDIA_TYPE_VIDEO && (declared->width != 0 || declared->height != 0)) {
        FOVEA_TRY(validate_dimensions(declared->width, declared->height));
      }
    }
    arm_deadline();
    const int probed = avformat_find_stream_info(format_.get(), nullptr);
    if (probed < 0) {
      return error(probed, "cannot read stream information");
    }
    in_packet_.reset(av_packet_alloc());
    out_packet_.reset(av_packet_alloc());
    if (!in_packet_ || !out_packet_) {
      return make_error(StatusCode::kResourceExhausted, url_, ": out of memory");
    }
    return Status::ok();
  }

  std::string last_or(std::string fallback) const {
    std::string detail = last_ffmpeg_message();
    return detail.empty() ? fallback : detail;
  }

  Status select_video_stream() {
    stream_index_ = av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (stream_index_ < 0) {
      return make_error(StatusCode::kUnsupported, url_, ": no video stream (",
                        std::to_string(format_->nb_streams), " streams of other kinds)");
    }
    stream_ = format_->streams[stream_index_];
    for (unsigned i = 0; i < format_->nb_streams; ++i) {
      // Only the video stream's packets are read; the demuxer skips the rest cheaply.
      format_->streams[i]->discard = static_cast<int>(i) == stream_index_ ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
    }
    return Status::ok();
  }

  // mp4/mkv carry H.264/HEVC length-prefixed with parameter sets in extradata (avcC/hvcC);
  // NVDEC's parser and raw bitstreams need start codes with parameter sets in-band.
  Status setup_annex_b() {
    const AVCodecParameters* par = stream_->codecpar;
    const bool length_prefixed = par->extradata_size > 0 && par->extradata[0] == 1;
    const bool convertible = par->codec_id == AV_CODEC_ID_H264 || par->codec_id == AV_CODEC_ID_HEVC;
    if (!options_.annex_b || !convertible || !length_prefixed) {
      parameters_ = copy_parameters(par);
      return parameters_ ? Status::ok() : make_error(StatusCode::kResourceExhausted, url_, ": out of memory");
    }
    const char* name = par->codec_id == AV_CODEC_ID_H264 ? "h264_mp4toannexb" : "hevc_mp4toannexb";
    const AVBitStreamFilter* filter = av_bsf_get_by_name(name);
    if (!filter) {
      return make_error(StatusCode::kUnsupported, url_, ": FFmpeg lacks the ", name, " filter");
    }
    AVBSFContext* raw = nullptr;
    FOVEA_AV_TRY(av_bsf_alloc(filter, &raw));
    bsf_.reset(raw);
    FOVEA_AV_TRY(avcodec_parameters_copy(bsf_->par_in, par));
    bsf_->time_base_in = stream_->time_base;
    const int initialized = av_bsf_init(bsf_.get());
    if (initialized < 0) {
      return error(initialized, "cannot convert to Annex B (damaged avcC/hvcC header?)");
    }
    parameters_ = copy_parameters(bsf_->par_out);
    return parameters_ ? Status::ok() : make_error(StatusCode::kResourceExhausted, url_, ": out of memory");
  }

  static std::shared_ptr<AVCodecParameters> copy_parameters(const AVCodecParameters* from) {
    AVCodecParameters* copy = avcodec_parameters_alloc();
    if (!copy || avcodec_parameters_copy(copy, from) < 0) {
      avcodec_parameters_free(&copy);
      return nullptr;
    }
    return std::shared_ptr<AVCodecParameters>(copy, AvDeleter{});
  }

  void fill_info() {
    const AVCodecParameters* par = parameters_.get();
    info_.url = url_;
    info_.container = format_->iformat->name;
    info_.codec = codec_from_id(par->codec_id);
    info_.codec_name = avcodec_get_name(par->codec_id);
    info_.codec_id = static_cast<int>(par->codec_id);
    if (const char* profile = avcodec_profile_name(par->codec_id, par->profile)) {
      info_.profile = profile;
    }
    fill_pixel_format(par);
    info_.width = par->width;
    info_.height = par->height;
    AVRational rate = stream_->avg_frame_rate.num > 0 ? stream_->avg_frame_rate : stream_->r_frame_rate;
    info_.frame_rate = to_rational(rate);
    info_.time_base = to_rational(stream_->time_base);
    if (stream_->duration > 0) {
      info_.duration_s = static_cast<double>(stream_->duration) * av_q2d(stream_->time_base);
    } else if (format_->duration > 0) {
      info_.duration_s = static_cast<double>(format_->duration) / AV_TIME_BASE;
    }
    if (stream_->start_time != AV_NOPTS_VALUE) {
      info_.start_s = static_cast<double>(stream_->start_time) * av_q2d(stream_->time_base);
    } else if (format_->start_time != AV_NOPTS_VALUE) {
      info_.start_s = static_cast<double>(format_->start_time) / AV_TIME_BASE;
    }
    info_.frame_count = stream_->nb_frames;
    info_.bit_rate = par->bit_rate > 0 ? par->bit_rate : format_->bit_rate;
    info_.rotation_deg = rotation_degrees(stream_);
    info_.live = is_network_url(url_) && info_.duration_s <= 0.0;
    const bool h26x = par->codec_id == AV_CODEC_ID_H264 || par->codec_id == AV_CODEC_ID_HEVC;
    const bool raw_annex_b =
        h26x && (par->extradata_size == 0 || starts_with_start_code(par->extradata, par->extradata_size));
    info_.annex_b = bsf_ != nullptr || raw_annex_b;
    // Length-prefixed H.264/HEVC extradata (avcC/hvcC) was converted above; every other codec's
    // extradata (MPEG-4 VOL headers, VP9/AV1 configs) is passed as it is.
    if (par->extradata_size > 0 && (info_.annex_b || !h26x)) {
      info_.extradata.assign(par->extradata, par->extradata + par->extradata_size);
    }
    info_.codec_parameters = parameters_;
  }

  void fill_pixel_format(const AVCodecParameters* par) {
    const auto format = static_cast<AVPixelFormat>(par->format);
    const AVPixFmtDescriptor* descriptor = av_pix_fmt_desc_get(format);
    if (!descriptor) {
      info_.bit_depth = par->bits_per_raw_sample > 0 ? par->bits_per_raw_sample : 8;
      return;
    }
    info_.pixel_format = descriptor->name;
    info_.bit_depth = descriptor->comp[0].depth;
    const bool four_two_zero = descriptor->nb_components == 3 && descriptor->log2_chroma_w == 1 &&
                               descriptor->log2_chroma_h == 1 && info_.bit_depth == 8;
    info_.full_range =
        four_two_zero && (format == AV_PIX_FMT_YUVJ420P || par->color_range == AVCOL_RANGE_JPEG);
    if (descriptor->nb_components == 1) {
      info_.chroma_format = 0;
    } else if (descriptor->log2_chroma_w == 1 && descriptor->log2_chroma_h == 1) {
      info_.chroma_format = 1;
    } else if (descriptor->log2_chroma_w == 1) {
      info_.chroma_format = 2;
    } else {
      info_.chroma_format = 3;
    }
  }

  Status validate_dimensions(int width, int height) const {
    const int64_t pixels = int64_t{width} * height;
    if (width <= 0 || height <= 0 || width > kMaxVideoSide || height > kMaxVideoSide ||
        pixels > kMaxVideoPixels) {
      return make_error(StatusCode::kCorruptData, url_, ": absurd video dimensions ", std::to_string(width),
                        "x", std::to_string(height), " (fovea accepts 1..", std::to_string(kMaxVideoSide),
                        " per side and at most ", std::to_string(kMaxVideoPixels), " pixels)");
    }
    return Status::ok();
  }

  Result<bool> read_stream_packet() {
    while (true) {
      arm_deadline();
      const int result = av_read_frame(format_.get(), in_packet_.get());
      // A network read that ran out of time can surface as any error code, or even as a packet:
      // when the socket's own timeout ends the read, FFmpeg flushes its parser, which hands out the
      // frame it held back. Either way the stream stalled, and the deadline decides.
      const bool timed_out = interrupted_ || (is_network_url(url_) && Clock::now() > deadline_);
      if (result >= 0 && timed_out) {
        // A read the interrupt cut short still returns the bytes it had, flagged corrupt; they are
        // not the file's packet, so the interrupt's error stands in for it.
        av_packet_unref(in_packet_.get());
        return error(AVERROR_EXIT, "read failed");
      }
      if (result == AVERROR_EOF) {
        return end_of_input();
      }
      if (result < 0) {
        return error(timed_out ? AVERROR_EXIT : result, "read failed");
      }
      if (in_packet_->stream_index != stream_index_) {
        av_packet_unref(in_packet_.get());
        continue;
      }
      if (!awaiting_keyframe_) return true;
      // A stream joined mid-GOP (a live stream, a cut file, a seek that lands between keyframes):
      // the packets before its first keyframe have no reference to decode against, and a decoder
      // would make green pictures of them. They are skipped, up to a bound, past which a stream
      // that flags no keyframe at all is taken as it is.
      if ((in_packet_->flags & AV_PKT_FLAG_KEY) == 0 &&
          skipped_before_keyframe_ < kMaxPacketsBeforeKeyframe) {
        ++skipped_before_keyframe_;
        av_packet_unref(in_packet_.get());
        continue;
      }
      awaiting_keyframe_ = false;
      if (skipped_before_keyframe_ > 0) {
        log_info("{}: {} packets before the first keyframe skipped (nothing to decode them against)", url_,
                 skipped_before_keyframe_);
      }
      return true;
    }
  }

  // A file ends; a live stream does not end on its own: its end means the server closed the
  // connection or ended the session (a camera or re-streamer that went away), an error a source
  // reconnects after.
  Result<bool> end_of_input() const {
    if (info_.live) {
      return make_error(StatusCode::kIoError, url_,
                        ": the live stream ended (the server closed the connection or ended the session)");
    }
    return false;
  }

  static void copy_out(const AVPacket& from, Packet& to) {
    to.data.assign(from.data, from.data + from.size);
    to.has_pts = from.pts != AV_NOPTS_VALUE;
    to.has_dts = from.dts != AV_NOPTS_VALUE;
    to.pts = to.has_pts ? from.pts : 0;
    to.dts = to.has_dts ? from.dts : 0;
    to.duration = from.duration;
    to.keyframe = (from.flags & AV_PKT_FLAG_KEY) != 0;
  }

  std::string url_;
  DemuxOptions options_;
  Clock::time_point deadline_ = Clock::time_point::max();
  bool interrupted_ = false;  // the interrupt callback ended a call since the deadline was armed
  InputFormatPtr format_;
  AvPtr<AVBSFContext> bsf_;
  AvPtr<AVPacket> in_packet_;
  AvPtr<AVPacket> out_packet_;
  std::shared_ptr<AVCodecParameters> parameters_;
  AVStream* stream_ = nullptr;
  int stream_index_ = -1;
  bool input_ended_ = false;
  int damaged_packets_ = 0;  // skipped by skip_damaged_packet
  // Reading after an open or a seek: the packets before the first keyframe are skipped.
  bool awaiting_keyframe_ = true;
  int skipped_before_keyframe_ = 0;
  bool sent_corrupt_ = false;  // the container marked the packet last sent to bsf_ corrupt
  StreamInfo info_;
};

}  // namespace

Result<std::unique_ptr<Demuxer>> Demuxer::open(const std::string& url, const DemuxOptions& options) {
  if (url.empty()) {
    return make_error(StatusCode::kInvalidArgument, "empty input name");
  }
  if (options.timeout_ms <= 0) {
    return make_error(StatusCode::kInvalidArgument, url, ": timeout must be positive");
  }
  auto demuxer = std::make_unique<FfmpegDemuxer>(url, options);
  FOVEA_TRY(demuxer->open());
  return std::unique_ptr<Demuxer>(std::move(demuxer));
}

}  // namespace fovea::io
