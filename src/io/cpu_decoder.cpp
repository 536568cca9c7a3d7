// The cpu backend: libavcodec, frame- and slice-threaded. Frames in libavcodec's native 8-bit
// 4:2:0 layout are handed out without a copy (the Frame owns a reference to the AVFrame); other
// layouts, and frames scaled to DecoderOptions::output_width x output_height, are converted into
// pooled host buffers.
#include <algorithm>
#include <optional>
#include <utility>

#include "core/log.h"
#include "core/pool.h"
#include "io/av_error.h"
#include "io/av_handles.h"
#include "io/decoder.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace fovea::io {
namespace {

bool is_yuv420_8bit(AVPixelFormat format) {
  return format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P;
}

// High-bit-depth 4:2:0 formats that map exactly onto P016 by a shift and an interleave.
bool is_yuv420_high_depth(AVPixelFormat format) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(format);
  return d && d->nb_components == 3 && d->log2_chroma_w == 1 && d->log2_chroma_h == 1 &&
         d->comp[0].depth > 8 && d->comp[0].depth <= 16 && !(d->flags & AV_PIX_FMT_FLAG_BE) &&
         (d->flags & AV_PIX_FMT_FLAG_PLANAR);
}

ImageView view_of_avframe(const AVFrame& frame, PixelFormat format) {
  ImageView view;
  view.format = format;
  view.width = frame.width;
  view.height = frame.height;
  view.memory = MemoryKind::kHost;
  view.num_planes = format == PixelFormat::kNV12 ? 2 : 3;
  for (int p = 0; p < view.num_planes; ++p) {
    view.planes[p] = {frame.data[p], static_cast<std::size_t>(frame.linesize[p])};
  }
  return view;
}

class CpuDecoder final : public Decoder {
 public:
  CpuDecoder(StreamInfo stream, DecoderOptions options) : stream_(std::move(stream)), options_(options) {}

  Status open() {
    install_ffmpeg_log_bridge();
    FOVEA_TRY(check_output_size());
    const auto* parameters = static_cast<const AVCodecParameters*>(stream_.codec_parameters.get());
    if (!parameters) {
      return make_error(StatusCode::kInvalidArgument, stream_.url, ": stream has no codec parameters");
    }
    const AVCodec* codec = avcodec_find_decoder(parameters->codec_id);
    if (!codec) {
      return make_error(StatusCode::kUnsupported, stream_.url, ": no CPU decoder for codec '",
                        stream_.codec_name, "' in this FFmpeg build");
    }
    context_.reset(avcodec_alloc_context3(codec));
    packet_.reset(av_packet_alloc());
    frame_.reset(av_frame_alloc());
    if (!context_ || !packet_ || !frame_) {
      return make_error(StatusCode::kResourceExhausted, stream_.url, ": out of memory");
    }
    FOVEA_AV_TRY(avcodec_parameters_to_context(context_.get(), parameters));
    context_->pkt_timebase = {stream_.time_base.num, stream_.time_base.den};
    context_->thread_count = options_.threads;
    context_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    // Deliver frames the decoder concealed instead of dropping them: they are flagged and
    // counted as damaged, so frame counts stay whole and the damage is visible.
    context_->flags |= AV_CODEC_FLAG_OUTPUT_CORRUPT;
    const int opened = avcodec_open2(context_.get(), codec, nullptr);
    if (opened < 0) {
      return av_error(opened, stream_.url + ": cannot open the " + codec->name + " decoder");
    }
    return Status::ok();
  }

  Result<IoState> send(const Packet& packet) override {
    if (eof_sent_) {
      return make_error(StatusCode::kInvalidArgument, stream_.url, ": packet sent after end of stream");
    }
    FOVEA_TRY(fill_packet(packet));
    const int result = avcodec_send_packet(context_.get(), packet_.get());
    av_packet_unref(packet_.get());
    if (result == AVERROR(EAGAIN)) {
      return IoState::kAgain;
    }
    ++stats_.packets_sent;
    if (result == AVERROR_INVALIDDATA) {
      // Damaged data: libavcodec drops the packet and resynchronizes on a later one.
      ++stats_.packets_rejected;
      log_debug("{}: decoder rejected packet (pts {}): {}", stream_.url, packet.pts, last_ffmpeg_message());
      return IoState::kOk;
    }
    if (result < 0) {
      return av_error(result, stream_.url + ": decoding failed");
    }
    return IoState::kOk;
  }

  // Only marks the end: libavcodec drops a packet it still holds if the flush packet arrives
  // before all pending output was received, so receive() sends the flush once output runs dry.
  Status send_eof() override {
    eof_sent_ = true;
    return Status::ok();
  }

  Result<IoState> receive(Frame& frame) override {
    while (true) {
      const int result = avcodec_receive_frame(context_.get(), frame_.get());
      if (result == AVERROR(EAGAIN)) {
        if (!eof_sent_ || flush_sent_) {
          return IoState::kAgain;
        }
        FOVEA_TRY(send_flush());
        continue;
      }
      if (result == AVERROR_EOF) {
        return IoState::kEof;
      }
      if (result == AVERROR_INVALIDDATA) {
        ++stats_.packets_rejected;
        continue;
      }
      if (result < 0) {
        return av_error(result, stream_.url + ": decoding failed");
      }
      FOVEA_TRY(deliver(frame));
      return IoState::kOk;
    }
  }

  // libavcodec accepts packets again after a drain, or drops what it holds before a seek, once
  // its buffers are flushed.
  Status restart() override {
    avcodec_flush_buffers(context_.get());
    eof_sent_ = false;
    flush_sent_ = false;
    return Status::ok();
  }

  DecoderBackend backend() const override { return DecoderBackend::kCpu; }
  DecoderStats stats() const override { return stats_; }

 private:
  Status send_flush() {
    flush_sent_ = true;
    const int result = avcodec_send_packet(context_.get(), nullptr);
    return result < 0 && result != AVERROR_EOF ? av_error(result, stream_.url + ": flush failed")
                                               : Status::ok();
  }

  Status fill_packet(const Packet& packet) {
    // The packet's bytes are copied once into a padded buffer, as libavcodec requires.
    FOVEA_AV_TRY(av_new_packet(packet_.get(), static_cast<int>(packet.data.size())));
    std::copy(packet.data.begin(), packet.data.end(), packet_->data);
    packet_->pts = packet.has_pts ? packet.pts : AV_NOPTS_VALUE;
    packet_->dts = packet.has_dts ? packet.dts : AV_NOPTS_VALUE;
    packet_->duration = packet.duration;
    packet_->flags = packet.keyframe ? AV_PKT_FLAG_KEY : 0;
    return Status::ok();
  }

  Status deliver(Frame& frame) {
    const auto format = static_cast<AVPixelFormat>(frame_->format);
    const bool damaged = (frame_->flags & AV_FRAME_FLAG_CORRUPT) != 0 || frame_->decode_error_flags != 0;
    frame = Frame{};
    frame.has_pts = frame_->best_effort_timestamp != AV_NOPTS_VALUE;
    frame.pts = frame.has_pts ? frame_->best_effort_timestamp : 0;
    frame.time_base = stream_.time_base;
    frame.index = stats_.frames_decoded;
    frame.keyframe = frame_->key_frame != 0;
    frame.damaged = damaged;
    const AVPixFmtDescriptor* descriptor = av_pix_fmt_desc_get(format);
    frame.bit_depth = descriptor ? descriptor->comp[0].depth : 8;
    const bool narrowing = frame.bit_depth > 8 && options_.eight_bit_output;
    Status converted = Status::ok();
    if (needs_scaling() || narrowing) {
      converted = frame.bit_depth > 8 && !narrowing
                      ? unsupported_high_depth_scaling(frame.bit_depth)
                      : convert_with_swscale(frame, delivered_width(), delivered_height());
    } else if (is_yuv420_8bit(format) && options_.cpu_output == PixelFormat::kYUV420P) {
      share_avframe(frame, PixelFormat::kYUV420P);
    } else if (format == AV_PIX_FMT_NV12 && options_.cpu_output == PixelFormat::kNV12) {
      share_avframe(frame, PixelFormat::kNV12);
    } else if (is_yuv420_8bit(format) && options_.cpu_output == PixelFormat::kNV12) {
      converted = convert_into_pool(frame, PixelFormat::kNV12, [this](const ImageView& out) {
        copy_plane(out, 0, frame_->data[0], frame_->linesize[0], out.width, out.height);
        interleave_chroma_8bit(out);
      });
    } else if (is_yuv420_high_depth(format)) {
      converted = convert_into_pool(frame, PixelFormat::kP016, [this, &frame](const ImageView& out) {
        widen_to_p016(out, frame.bit_depth);
      });
    } else {
      converted = convert_with_swscale(frame, frame_->width, frame_->height);
    }
    av_frame_unref(frame_.get());
    FOVEA_TRY(converted);
    ++stats_.frames_decoded;
    if (damaged) {
      ++stats_.frames_damaged;
    }
    return Status::ok();
  }

  void share_avframe(Frame& frame, PixelFormat format) {
    AVFrame* reference = av_frame_alloc();
    av_frame_move_ref(reference, frame_.get());
    frame.image = view_of_avframe(*reference, format);
    frame.owner = std::shared_ptr<AVFrame>(reference, AvDeleter{});
  }

  // Into a pooled host buffer of `format` at the decoded size, or at `width` x `height` (scaling).
  template <typename Fill>
  Status convert_into_pool(Frame& frame, PixelFormat format, Fill&& fill) {
    return convert_into_pool(frame, format, frame_->width, frame_->height, std::forward<Fill>(fill));
  }

  template <typename Fill>
  Status convert_into_pool(Frame& frame, PixelFormat format, int width, int height, Fill&& fill) {
    FOVEA_ASSIGN_OR_RETURN(ImageAllocation allocation, plan_image_allocation(format, width, height));
    if (!pool_ || pool_->block_bytes() != allocation.total_bytes) {
      FOVEA_ASSIGN_OR_RETURN(BufferPool pool, BufferPool::create("cpu-decoder " + stream_.url,
                                                                 MemoryKind::kHost, allocation.total_bytes));
      pool_.emplace(std::move(pool));
    }
    FOVEA_ASSIGN_OR_RETURN(PooledBuffer buffer, pool_->acquire());
    frame.image = image_view_in(buffer.data(), allocation, format, width, height, MemoryKind::kHost);
    fill(frame.image);
    frame.owner = std::make_shared<PooledBuffer>(std::move(buffer));
    return Status::ok();
  }

  static void copy_plane(const ImageView& out, int plane, const uint8_t* source, int source_pitch,
                         int width_bytes, int height) {
    for (int y = 0; y < height; ++y) {
      std::copy_n(source + static_cast<std::ptrdiff_t>(y) * source_pitch, width_bytes, out.row(plane, y));
    }
  }

  void interleave_chroma_8bit(const ImageView& out) const {
    const int chroma_w = (out.width + 1) / 2;
    const int chroma_h = (out.height + 1) / 2;
    for (int y = 0; y < chroma_h; ++y) {
      const uint8_t* u = frame_->data[1] + static_cast<std::ptrdiff_t>(y) * frame_->linesize[1];
      const uint8_t* v = frame_->data[2] + static_cast<std::ptrdiff_t>(y) * frame_->linesize[2];
      uint8_t* uv = out.row(1, y);
      for (int x = 0; x < chroma_w; ++x) {
        uv[2 * x] = u[x];
        uv[2 * x + 1] = v[x];
      }
    }
  }

  // P016 holds samples MSB-aligned: a 10-bit value v becomes v << 6, as NVDEC writes it.
  void widen_to_p016(const ImageView& out, int bit_depth) const {
    const int shift = 16 - bit_depth;
    for (int y = 0; y < out.height; ++y) {
      const auto* source = reinterpret_cast<const uint16_t*>(
          frame_->data[0] + static_cast<std::ptrdiff_t>(y) * frame_->linesize[0]);
      auto* destination = out.row<uint16_t>(0, y);
      for (int x = 0; x < out.width; ++x) {
        destination[x] = static_cast<uint16_t>(source[x] << shift);
      }
    }
    const int chroma_w = (out.width + 1) / 2;
    for (int y = 0; y < (out.height + 1) / 2; ++y) {
      const auto* u = reinterpret_cast<const uint16_t*>(frame_->data[1] +
                                                        static_cast<std::ptrdiff_t>(y) * frame_->linesize[1]);
      const auto* v = reinterpret_cast<const uint16_t*>(frame_->data[2] +
                                                        static_cast<std::ptrdiff_t>(y) * frame_->linesize[2]);
      auto* uv = out.row<uint16_t>(1, y);
      for (int x = 0; x < chroma_w; ++x) {
        uv[2 * x] = static_cast<uint16_t>(u[x] << shift);
        uv[2 * x + 1] = static_cast<uint16_t>(v[x] << shift);
      }
    }
  }

  // Both or neither, positive, even (the output is 4:2:0: whole 2x2 chroma blocks) and within what
  // the demuxer accepts as a frame.
  Status check_output_size() const {
    const int width = options_.output_width;
    const int height = options_.output_height;
    if (width == 0 && height == 0) {
      return Status::ok();
    }
    if (width == 0 || height == 0) {
      return make_error(StatusCode::kInvalidArgument, stream_.url,
                        ": output_width and output_height go together (got ", std::to_string(width), "x",
                        std::to_string(height), "); give both or neither");
    }
    for (const auto& [name, value] : {std::pair{"output_width", width}, std::pair{"output_height", height}}) {
      if (value < 0 || value % 2 != 0 || value > kMaxVideoSide) {
        return make_error(StatusCode::kInvalidArgument, stream_.url, ": ", name,
                          " must be a positive even number up to ", std::to_string(kMaxVideoSide),
                          " (4:2:0 output), not ", std::to_string(value));
      }
    }
    return Status::ok();
  }

  // Decided per frame: a stream may change its resolution mid-stream, and only frames of another
  // size than the requested one are scaled.
  bool needs_scaling() const {
    return options_.output_width > 0 &&
           (frame_->width != options_.output_width || frame_->height != options_.output_height);
  }
  int delivered_width() const { return options_.output_width > 0 ? options_.output_width : frame_->width; }
  int delivered_height() const {
    return options_.output_height > 0 ? options_.output_height : frame_->height;
  }

  // Scaling keeps the output 8-bit (NV12 or YUV420P); consumers of 10-bit frames at another size
  // ask for eight_bit_output, so no flow needs a P016 scaler yet.
  Status unsupported_high_depth_scaling(int bit_depth) const {
    return make_error(StatusCode::kUnsupported, stream_.url, ": the cpu decoder cannot scale ",
                      std::to_string(bit_depth), "-bit video (", std::to_string(frame_->width), "x",
                      std::to_string(frame_->height), " to output_width x output_height ",
                      std::to_string(options_.output_width), "x", std::to_string(options_.output_height),
                      "); decode it at its own size, to 8 bits, or with nvdec");
  }

  // Scaling, narrowing to 8 bits, and every layout without a path above (4:2:2, 4:4:4, gray, RGB
  // from PNG/MJPEG, ...), goes through libswscale to the requested 8-bit 4:2:0 layout; chroma is
  // resampled, so this path is not bit-exact.
  // - Scaling uses SWS_BILINEAR: when it shrinks, libswscale widens the filter to the scale
  //   factor, so every source pixel contributes and fine texture does not alias; the frames feed
  //   analytics, which resizes again to the model's input, so bicubic's sharper kernel would cost
  //   more per pixel and buy nothing. Same-size conversions keep SWS_BICUBIC (only chroma moves).
  // - Full-range 4:2:0 (yuvj420p) is read as yuv420p, as the unscaled path shares its samples
  //   unchanged: scaling must not also change the range.
  Status convert_with_swscale(Frame& frame, int width, int height) {
    const PixelFormat target =
        options_.cpu_output == PixelFormat::kNV12 ? PixelFormat::kNV12 : PixelFormat::kYUV420P;
    const AVPixelFormat av_target = target == PixelFormat::kNV12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P;
    const auto av_source = static_cast<AVPixelFormat>(frame_->format);
    const bool scaling = width != frame_->width || height != frame_->height;
    const AVPixelFormat sws_source =
        scaling && av_source == AV_PIX_FMT_YUVJ420P ? AV_PIX_FMT_YUV420P : av_source;
    SwsContext* sws =
        sws_getCachedContext(sws_.release(), frame_->width, frame_->height, sws_source, width, height,
                             av_target, scaling ? SWS_BILINEAR : SWS_BICUBIC, nullptr, nullptr, nullptr);
    sws_.reset(sws);
    if (!sws) {
      const char* source_name = av_get_pix_fmt_name(av_source);
      return make_error(StatusCode::kUnsupported, stream_.url, ": cannot convert pixel format '",
                        source_name ? source_name : "unknown", "' at ", std::to_string(frame_->width), "x",
                        std::to_string(frame_->height), " to ", pixel_format_name(target), " at ",
                        std::to_string(width), "x", std::to_string(height));
    }
    frame.bit_depth = 8;
    return convert_into_pool(frame, target, width, height, [this, sws](const ImageView& out) {
      uint8_t* planes[4] = {};
      int pitches[4] = {};
      for (int p = 0; p < out.num_planes; ++p) {
        planes[p] = static_cast<uint8_t*>(out.planes[p].data);
        pitches[p] = static_cast<int>(out.planes[p].pitch);
      }
      sws_scale(sws, frame_->data, frame_->linesize, 0, frame_->height, planes, pitches);
    });
  }

  StreamInfo stream_;
  DecoderOptions options_;
  AvPtr<AVCodecContext> context_;
  AvPtr<AVPacket> packet_;
  AvPtr<AVFrame> frame_;
  AvPtr<SwsContext> sws_;
  std::optional<BufferPool> pool_;
  DecoderStats stats_;
  bool eof_sent_ = false;
  bool flush_sent_ = false;
};

}  // namespace

Result<std::unique_ptr<Decoder>> open_cpu_decoder(const StreamInfo& stream, const DecoderOptions& options) {
  auto decoder = std::make_unique<CpuDecoder>(stream, options);
  FOVEA_TRY(decoder->open());
  return std::unique_ptr<Decoder>(std::move(decoder));
}

}  // namespace fovea::io
