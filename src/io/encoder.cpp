#include "io/encoder.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/output_file.h"
#include "io/av_error.h"
#include "io/av_handles.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/hwcontext.h>
#include <libavutil/log.h>
}

#if defined(FOVEA_HAVE_CUDA)
// The loader's complaints ("Cannot load libcuda.so.1") go through av_log, so fovea's log bridge
// keeps them for the error message instead of them going straight to stderr.
#define FFNV_LOG_FUNC(logctx, msg, ...) av_log((logctx), AV_LOG_ERROR, (msg), __VA_ARGS__)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>
extern "C" {
#include <libavutil/hwcontext_cuda.h>
}
#endif

namespace fovea::io {

bool parse_encoder_codec(std::string_view text, EncoderCodec* codec) {
  if (text == "h264") {
    *codec = EncoderCodec::kH264;
    return true;
  }
  if (text == "hevc") {
    *codec = EncoderCodec::kHevc;
    return true;
  }
  return false;
}

namespace {

// Owns an output AVFormatContext and the file it writes (when the muxer writes to a file).
struct OutputDeleter {
  void operator()(AVFormatContext* context) const {
    if (context->pb != nullptr && (context->oformat->flags & AVFMT_NOFILE) == 0) {
      avio_closep(&context->pb);
    }
    avformat_free_context(context);
  }
};
using OutputPtr = std::unique_ptr<AVFormatContext, OutputDeleter>;

class Dictionary {
 public:
  Dictionary() = default;
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;
  ~Dictionary() { av_dict_free(&dict_); }

  void set(const char* key, const std::string& value) { av_dict_set(&dict_, key, value.c_str(), 0); }
  AVDictionary** get() { return &dict_; }
  // Keys the codec did not consume: misspelt or unsupported options.
  std::string leftover_keys() const {
    std::string keys;
    const AVDictionaryEntry* entry = nullptr;
    while ((entry = av_dict_get(dict_, "", entry, AV_DICT_IGNORE_SUFFIX)) != nullptr) {
      keys.append(keys.empty() ? "" : ", ").append(entry->key);
    }
    return keys;
  }

 private:
  AVDictionary* dict_ = nullptr;
};

AVRational to_av(Rational r) {
  return AVRational{r.num, r.den};
}

// av_error plus FFmpeg's own last error line on this thread, which usually says more than the
// AVERROR code ("OpenEncodeSessionEx failed: unsupported device" behind ENOSYS).
Status ffmpeg_error(int code, const std::string& what) {
  Status status = av_error(code, what);
  std::string detail = last_ffmpeg_message();
  // Drops FFmpeg's "[h264_nvenc @ 0x5581...] " prefix: the address means nothing to a reader.
  if (const std::size_t end = detail.find("] ");
      !detail.empty() && detail[0] == '[' && end != std::string::npos) {
    detail.erase(0, end + 2);
  }
  if (detail.empty()) {
    return status;
  }
  return Status(status.code(), status.message() + " (" + detail + ")");
}

const char* software_encoder_name(EncoderCodec codec) {
  return codec == EncoderCodec::kH264 ? "libx264" : "libx265";
}

// NVENC was asked for (auto) and could not be used. Without a GPU the run has said so already and
// every output would repeat it, so it is a debug line; with a GPU that lacks NVENC (H100, H200) the
// first output warns once for the process. Each output's encoder is in its report either way.
void report_nvenc_fallback(const std::string& path, const std::string& reason, const char* software) {
  static std::atomic<bool> warned{false};
#if defined(FOVEA_HAVE_CUDA)
  const bool gpu = cuda_device_count() > 0;
#else
  const bool gpu = false;
#endif
  if (gpu && !warned.exchange(true)) {
    log_warn("{}; encoding with {} (said once, for every output)", reason, software);
  } else {
    log_debug("{}: {}; encoding with {}", path, reason, software);
  }
}

// x265 prints to stderr itself, past FFmpeg's log and fovea's, so its level follows fovea's: -q
// errors only; the default warnings (x265's info level is its whole configuration); -v that too.
const char* x265_log_level() {
  switch (log_level()) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn:
    case LogLevel::kInfo: return "warning";
    case LogLevel::kDebug: return "info";
  }
  return "warning";
}

const char* nvenc_encoder_name(EncoderCodec codec) {
  return codec == EncoderCodec::kH264 ? "h264_nvenc" : "hevc_nvenc";
}

std::string size_text(int width, int height) {
  return std::to_string(width) + "x" + std::to_string(height);
}

Status check_options(const EncoderOptions& options) {
  // 4:2:0 chroma subsampling (the only input both x264 and NVENC take here) needs even sizes.
  if (options.width <= 0 || options.height <= 0 || options.width % 2 != 0 || options.height % 2 != 0) {
    return make_error(StatusCode::kInvalidArgument, "encoder size ", size_text(options.width, options.height),
                      " must be positive and even (4:2:0 chroma)");
  }
  if (options.bit_depth != 8 && options.bit_depth != 10) {
    return make_error(StatusCode::kInvalidArgument, "encoder bit depth ", std::to_string(options.bit_depth),
                      " must be 8 or 10");
  }
  if (options.time_base.num <= 0 || options.time_base.den <= 0) {
    return make_error(StatusCode::kInvalidArgument, "encoder time base ",
                      std::to_string(options.time_base.num), "/", std::to_string(options.time_base.den),
                      " must be positive");
  }
  if (options.frame_rate.num <= 0 || options.frame_rate.den <= 0) {
    return make_error(StatusCode::kInvalidArgument, "encoder frame rate ",
                      std::to_string(options.frame_rate.num), "/", std::to_string(options.frame_rate.den),
                      " must be positive");
  }
  return Status::ok();
}

#if defined(FOVEA_HAVE_CUDA)
// NVENC's presets p1 (fastest) .. p7 (best) lined up with x264's names, so one --preset works for
// both; p1..p7 themselves pass through.
std::string nvenc_preset(const std::string& preset) {
  if (preset.size() == 2 && preset[0] == 'p' && preset[1] >= '1' && preset[1] <= '7') {
    return preset;
  }
  if (preset == "ultrafast" || preset == "superfast") return "p1";
  if (preset == "veryfast") return "p2";
  if (preset == "faster" || preset == "fast") return "p3";
  if (preset == "slow") return "p5";
  if (preset == "slower") return "p6";
  if (preset == "veryslow" || preset == "placebo") return "p7";
  return "p4";
}
#endif

void copy_plane(std::uint8_t* dst, int dst_pitch, const std::uint8_t* src, std::size_t src_pitch,
                int width_bytes, int rows) {
  for (int y = 0; y < rows; ++y) {
    std::memcpy(dst + static_cast<std::ptrdiff_t>(y) * dst_pitch, src + y * src_pitch,
                static_cast<std::size_t>(width_bytes));
  }
}

// Interleaved UV (NV12's second plane) into the U and V planes of a YUV420P AVFrame.
void deinterleave_uv(const std::uint8_t* uv, std::size_t uv_pitch, int chroma_w, int chroma_h, AVFrame* dst) {
  for (int y = 0; y < chroma_h; ++y) {
    const std::uint8_t* in = uv + y * uv_pitch;
    std::uint8_t* u = dst->data[1] + static_cast<std::ptrdiff_t>(y) * dst->linesize[1];
    std::uint8_t* v = dst->data[2] + static_cast<std::ptrdiff_t>(y) * dst->linesize[2];
    for (int x = 0; x < chroma_w; ++x) {
      u[x] = in[2 * x];
      v[x] = in[2 * x + 1];
    }
  }
}

// Host YUV420P or NV12 into a YUV420P AVFrame.
void fill_yuv420p(const ImageView& src, AVFrame* dst) {
  const int chroma_w = (src.width + 1) / 2;
  const int chroma_h = (src.height + 1) / 2;
  copy_plane(dst->data[0], dst->linesize[0], src.row(0, 0), src.planes[0].pitch, src.width, src.height);
  if (src.format == PixelFormat::kNV12) {
    deinterleave_uv(src.row(1, 0), src.planes[1].pitch, chroma_w, chroma_h, dst);
    return;
  }
  copy_plane(dst->data[1], dst->linesize[1], src.row(1, 0), src.planes[1].pitch, chroma_w, chroma_h);
  copy_plane(dst->data[2], dst->linesize[2], src.row(2, 0), src.planes[2].pitch, chroma_w, chroma_h);
}

// Host P016 (16-bit samples, MSB-aligned) into a YUV420P10 AVFrame: the top 10 bits of each sample.
void fill_yuv420p10(const ImageView& src, AVFrame* dst) {
  constexpr int kShift = 16 - 10;
  for (int y = 0; y < src.height; ++y) {
    const auto* in = src.row<const std::uint16_t>(0, y);
    auto* out =
        reinterpret_cast<std::uint16_t*>(dst->data[0] + static_cast<std::ptrdiff_t>(y) * dst->linesize[0]);
    for (int x = 0; x < src.width; ++x) {
      out[x] = static_cast<std::uint16_t>(in[x] >> kShift);
    }
  }
  for (int y = 0; y < (src.height + 1) / 2; ++y) {
    const auto* uv = src.row<const std::uint16_t>(1, y);
    auto* u =
        reinterpret_cast<std::uint16_t*>(dst->data[1] + static_cast<std::ptrdiff_t>(y) * dst->linesize[1]);
    auto* v =
        reinterpret_cast<std::uint16_t*>(dst->data[2] + static_cast<std::ptrdiff_t>(y) * dst->linesize[2]);
    for (int x = 0; x < (src.width + 1) / 2; ++x) {
      u[x] = static_cast<std::uint16_t>(uv[2 * x] >> kShift);
      v[x] = static_cast<std::uint16_t>(uv[2 * x + 1] >> kShift);
    }
  }
}

#if defined(FOVEA_HAVE_CUDA)
// Host YUV420P or NV12 into an NV12 AVFrame (NVENC's upload staging).
void fill_nv12(const ImageView& src, AVFrame* dst) {
  const int chroma_w = (src.width + 1) / 2;
  const int chroma_h = (src.height + 1) / 2;
  copy_plane(dst->data[0], dst->linesize[0], src.row(0, 0), src.planes[0].pitch, src.width, src.height);
  if (src.format == PixelFormat::kNV12) {
    copy_plane(dst->data[1], dst->linesize[1], src.row(1, 0), src.planes[1].pitch, 2 * chroma_w, chroma_h);
    return;
  }
  for (int y = 0; y < chroma_h; ++y) {
    const std::uint8_t* u = src.row(1, y);
    const std::uint8_t* v = src.row(2, y);
    std::uint8_t* out = dst->data[1] + static_cast<std::ptrdiff_t>(y) * dst->linesize[1];
    for (int x = 0; x < chroma_w; ++x) {
      out[2 * x] = u[x];
      out[2 * x + 1] = v[x];
    }
  }
}
#endif

#if defined(FOVEA_HAVE_CUDA)
// The CUDA driver API through ffnvcodec's loader (no link-time dependency on libcuda). Loaded once
// and never unloaded: the CUDA runtime uses the same library for the life of the process.
struct DriverApi {
  CudaFunctions* cu = nullptr;
  Status status;
};

const DriverApi& driver_api() {
  static const DriverApi api = [] {
    DriverApi loaded;
    clear_last_ffmpeg_message();
    if (cuda_load_functions(&loaded.cu, nullptr) != 0) {
      loaded.status =
          make_error(StatusCode::kUnsupported, "cannot load the CUDA driver: ", last_ffmpeg_message());
    } else if (const CUresult init = loaded.cu->cuInit(0); init != CUDA_SUCCESS) {
      loaded.status = make_error(StatusCode::kDeviceError, "cuInit failed (CUDA driver error ",
                                 std::to_string(static_cast<int>(init)), ")");
    }
    return loaded;
  }();
  return api;
}

// A reference on a device's primary context, the one the CUDA runtime uses, so NVENC reads frames
// from fovea's pools and from NVDEC without copies between contexts. Retained here rather than
// through av_hwdevice_ctx_create's "primary_ctx" option: FFmpeg 5.1 then insists on its own context
// flags and fails ("Primary context already active with incompatible flags") whenever the runtime
// has already activated the context, which in fovea it always has.
class PrimaryContext {
 public:
  static Result<std::unique_ptr<PrimaryContext>> retain(int ordinal) {
    const DriverApi& api = driver_api();
    FOVEA_TRY(api.status);
    CUdevice device = 0;
    if (const CUresult found = api.cu->cuDeviceGet(&device, ordinal); found != CUDA_SUCCESS) {
      return make_error(StatusCode::kNotFound, "no CUDA device ", std::to_string(ordinal),
                        " (CUDA driver error ", std::to_string(static_cast<int>(found)), ")");
    }
    CUcontext context = nullptr;
    if (const CUresult retained = api.cu->cuDevicePrimaryCtxRetain(&context, device);
        retained != CUDA_SUCCESS) {
      return make_error(StatusCode::kDeviceError, "cannot retain the primary context of CUDA device ",
                        std::to_string(ordinal), " (CUDA driver error ",
                        std::to_string(static_cast<int>(retained)), ")");
    }
    return std::unique_ptr<PrimaryContext>(new PrimaryContext(device, context));
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext() { static_cast<void>(driver_api().cu->cuDevicePrimaryCtxRelease(device_)); }

  CUcontext get() const { return context_; }

 private:
  PrimaryContext(CUdevice device, CUcontext context) : device_(device), context_(context) {}
  CUdevice device_;
  CUcontext context_;
};
#endif

Status check_frame(const Frame& frame, const EncoderOptions& options) {
  const ImageView& image = frame.image;
  if (image.width != options.width || image.height != options.height) {
    return make_error(StatusCode::kInvalidArgument, "frame ", std::to_string(frame.index), " is ",
                      size_text(image.width, image.height), " but the encoder was opened for ",
                      size_text(options.width, options.height));
  }
  const bool host = image.memory != MemoryKind::kDevice;
  if (options.bit_depth == 10) {
    return image.format == PixelFormat::kP016
               ? Status::ok()
               : make_error(StatusCode::kUnsupported, "frame format ", pixel_format_name(image.format),
                            " cannot be encoded in 10 bits (accepted: p016)");
  }
  const bool accepted = image.format == PixelFormat::kNV12 || (host && image.format == PixelFormat::kYUV420P);
  if (!accepted) {
    return make_error(
        StatusCode::kUnsupported, "frame format ", pixel_format_name(image.format), " in ",
        memory_kind_name(image.memory),
        " memory cannot be encoded (accepted: yuv420p or nv12 in host memory, nv12 in device memory; "
        "p016 with bit depth 10)");
  }
  return Status::ok();
}

class LibavEncoder final : public Encoder {
 public:
  LibavEncoder(std::string path, const EncoderOptions& options) : path_(std::move(path)), options_(options) {}
  LibavEncoder(const LibavEncoder&) = delete;
  LibavEncoder& operator=(const LibavEncoder&) = delete;
  ~LibavEncoder() override;

  Status open();
  Status encode(const Frame& frame) override;
  Status finish() override;
  std::string encoder_name() const override { return codec_->codec->name; }
  const std::string& fallback_reason() const override { return fallback_reason_; }
  EncoderStats stats() const override { return stats_; }

 private:
  Status open_muxer();
  Status open_codec();
  Status open_nvenc();
  void release_nvenc();
  Status open_software();
  Status open_context(const AVCodec* codec, Dictionary& codec_options);
  Status open_stream();
  Status encode_frame(const Frame& frame);
  Status fill_software_frame(const ImageView& image);
  Status download_p016(const ImageView& image);
  Status fill_nvenc_frame(const ImageView& image);
  std::int64_t next_pts(const Frame& frame);
  Status send(const AVFrame* frame);
  Status flush_and_close();

  std::string path_;
  EncoderOptions options_;
  // The file is written under a temporary name and renamed to path_ once finalized (core/output_file.h).
  std::optional<PendingFile> file_;
  OutputPtr output_;
  AVStream* stream_ = nullptr;  // owned by output_
#if defined(FOVEA_HAVE_CUDA)
  std::unique_ptr<PrimaryContext> primary_context_;  // NVENC: outlives everything FFmpeg holds in it
#endif
  AvPtr<AVCodecContext> codec_;
  AvPtr<AVBufferRef> device_;  // NVENC: the CUDA device context
  AvPtr<AVBufferRef> frames_;  // NVENC: the pool of device frames it reads
  AvPtr<AVFrame> host_frame_;  // x264: the YUV420P input; NVENC: the NV12 upload staging
  AvPtr<AVFrame> hw_frame_;    // NVENC: the device frame handed to the encoder
  AvPtr<AVPacket> packet_;
  std::vector<std::uint8_t> h_uv_;    // device NV12 for x264: the chroma plane, downloaded
  std::vector<std::uint8_t> h_p016_;  // device P016 for x264/x265: both planes, downloaded
  bool header_written_ = false;
  bool finished_ = false;
  Status finish_status_;
  std::string fallback_reason_;
  EncoderStats stats_;
  bool have_last_pts_ = false;
  std::int64_t last_pts_ = 0;
  std::int64_t pts_repaired_ = 0;
};

LibavEncoder::~LibavEncoder() {
  // Finalizes the container on error paths and after Ctrl-C, so what was encoded stays playable.
  if (!finished_) {
    const Status status = finish();
    if (!status.is_ok()) {
      log_error("{}", status.to_string());
    }
  }
}

Status LibavEncoder::open() {
  FOVEA_TRY(check_options(options_));
  install_ffmpeg_log_bridge();
  packet_.reset(av_packet_alloc());
  if (!packet_) {
    return make_error(StatusCode::kResourceExhausted, "out of memory allocating a packet");
  }
  FOVEA_TRY(open_muxer());
  FOVEA_TRY(open_codec());
  return open_stream();
}

// The muxer: a file's from its extension, or the live target's.
Result<const AVOutputFormat*> output_format(const std::string& path, EncoderTarget target) {
  if (target != EncoderTarget::kFile) {
    const char* name = target == EncoderTarget::kHls ? "hls" : "rtsp";
    const AVOutputFormat* format = av_guess_format(name, nullptr, nullptr);
    if (format == nullptr) {
      return make_error(StatusCode::kUnsupported, "this FFmpeg build has no ", name, " muxer");
    }
    return format;
  }
  const AVOutputFormat* format = av_guess_format(nullptr, path.c_str(), nullptr);
  if (format == nullptr) {
    return make_error(StatusCode::kInvalidArgument,
                      "cannot tell the container from the file name (use .mp4, .mov, .mkv or .ts)");
  }
  return format;
}

Status LibavEncoder::open_muxer() {
  FOVEA_ASSIGN_OR_RETURN(const AVOutputFormat* format, output_format(path_, options_.target));
  const AVCodecID codec_id = options_.codec == EncoderCodec::kH264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC;
  // 0 is a definite no; muxers that cannot tell (MPEG-TS) answer negative and are left to try.
  if (avformat_query_codec(format, codec_id, FF_COMPLIANCE_NORMAL) == 0) {
    return make_error(StatusCode::kUnsupported, "container '", format->name, "' cannot hold ",
                      avcodec_get_name(codec_id), " video");
  }
  AVFormatContext* raw = nullptr;
  FOVEA_AV_TRY(avformat_alloc_output_context2(&raw, format, nullptr, path_.c_str()));
  output_.reset(raw);
  return Status::ok();
}

// The live muxers' options. HLS: segments of hls_segment_seconds, each written under a temporary
// name and renamed whole (temp_file) so that players never read half a segment, each starting
// with a keyframe (independent_segments), the oldest deleted once out of the playlist. RTSP: the
// transport and a bound on connecting and on each write, so a server that went away fails the
// write instead of hanging it.
void set_live_muxer_options(const std::string& path, const EncoderOptions& options, Dictionary& muxer) {
  if (options.target == EncoderTarget::kHls) {
    muxer.set("hls_time", std::to_string(options.hls_segment_seconds));
    muxer.set("hls_list_size", std::to_string(options.hls_playlist_size));
    muxer.set("hls_flags", "delete_segments+independent_segments+temp_file");
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    muxer.set("hls_segment_filename", (folder / "segment_%06d.ts").string());
  } else if (options.target == EncoderTarget::kRtsp) {
    muxer.set("rtsp_transport", options.rtsp_transport == RtspTransport::kUdp ? "udp" : "tcp");
    muxer.set("timeout", std::to_string(static_cast<std::int64_t>(options.network_timeout_ms) * 1000));
  }
}

Status LibavEncoder::open_codec() {
  if (options_.backend != EncoderBackend::kCpu) {
    const Status nvenc = open_nvenc();
    if (nvenc.is_ok()) {
      return Status::ok();
    }
    release_nvenc();
    fallback_reason_ = std::string(nvenc_encoder_name(options_.codec)) + " unavailable: " + nvenc.message();
    if (avcodec_find_encoder_by_name(software_encoder_name(options_.codec)) != nullptr) {
      report_nvenc_fallback(path_, fallback_reason_, software_encoder_name(options_.codec));
    }
  }
  const Status software = open_software();
  // Without the software encoder, why NVENC failed is half of the answer.
  if (software.code() == StatusCode::kUnsupported && !fallback_reason_.empty()) {
    return software.with_context(fallback_reason_);
  }
  return software;
}

#if defined(FOVEA_HAVE_CUDA)
Status LibavEncoder::open_nvenc() {
  if (options_.bit_depth != 8) {
    return make_error(StatusCode::kUnsupported, "fovea encodes with NVENC in 8 bits only");
  }
  const AVCodec* codec = avcodec_find_encoder_by_name(nvenc_encoder_name(options_.codec));
  if (codec == nullptr) {
    return make_error(StatusCode::kUnsupported, "this FFmpeg build has no ",
                      nvenc_encoder_name(options_.codec));
  }
  FOVEA_ASSIGN_OR_RETURN(primary_context_, PrimaryContext::retain(options_.device));
  device_.reset(av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA));
  if (!device_) {
    return make_error(StatusCode::kResourceExhausted, "out of memory allocating a CUDA device context");
  }
  auto* device = reinterpret_cast<AVHWDeviceContext*>(device_->data);
  static_cast<AVCUDADeviceContext*>(device->hwctx)->cuda_ctx = primary_context_->get();
  clear_last_ffmpeg_message();
  if (const int initialized = av_hwdevice_ctx_init(device_.get()); initialized < 0) {
    return ffmpeg_error(initialized, "cannot use CUDA device " + std::to_string(options_.device));
  }
  frames_.reset(av_hwframe_ctx_alloc(device_.get()));
  if (!frames_) {
    return make_error(StatusCode::kResourceExhausted, "out of memory allocating a CUDA frames context");
  }
  auto* frames = reinterpret_cast<AVHWFramesContext*>(frames_->data);
  frames->format = AV_PIX_FMT_CUDA;
  frames->sw_format = AV_PIX_FMT_NV12;
  frames->width = options_.width;
  frames->height = options_.height;
  FOVEA_AV_TRY(av_hwframe_ctx_init(frames_.get()));

  Dictionary codec_options;
  codec_options.set("preset", nvenc_preset(options_.preset));
  if (options_.qp >= 0) {
    codec_options.set("rc", "constqp");
    codec_options.set("qp", std::to_string(options_.qp));
  } else if (options_.bit_rate <= 0) {
    codec_options.set("rc", "vbr");
    codec_options.set("cq", std::to_string(options_.crf));
  }
  codec_.reset(avcodec_alloc_context3(codec));
  if (!codec_) {
    return make_error(StatusCode::kResourceExhausted, "out of memory allocating an encoder");
  }
  codec_->pix_fmt = AV_PIX_FMT_CUDA;
  codec_->hw_frames_ctx = av_buffer_ref(frames_.get());
  hw_frame_.reset(av_frame_alloc());
  host_frame_.reset(av_frame_alloc());
  if (codec_->hw_frames_ctx == nullptr || !hw_frame_ || !host_frame_) {
    return make_error(StatusCode::kResourceExhausted, "out of memory setting up NVENC frames");
  }
  host_frame_->format = AV_PIX_FMT_NV12;
  return open_context(codec, codec_options);
}
#else
Status LibavEncoder::open_nvenc() {
  return make_error(StatusCode::kUnsupported, "this build of fovea has no CUDA");
}
#endif

// Frees what a failed NVENC attempt left, in dependency order, before falling back.
void LibavEncoder::release_nvenc() {
  codec_.reset();
  host_frame_.reset();
  hw_frame_.reset();
  frames_.reset();
  device_.reset();
#if defined(FOVEA_HAVE_CUDA)
  primary_context_.reset();
#endif
}

Status LibavEncoder::open_software() {
  const char* name = software_encoder_name(options_.codec);
  const AVCodec* codec = avcodec_find_encoder_by_name(name);
  if (codec == nullptr) {
    return make_error(StatusCode::kUnsupported, "this FFmpeg build has no ", name, " encoder");
  }
  Dictionary codec_options;
  codec_options.set("preset", options_.preset);
  if (options_.qp >= 0) {
    codec_options.set("qp", std::to_string(options_.qp));
  } else if (options_.bit_rate <= 0) {
    codec_options.set("crf", std::to_string(options_.crf));
  }
  if (options_.codec == EncoderCodec::kHevc) {
    codec_options.set("x265-params", std::string("log-level=") + x265_log_level());
  }
  codec_.reset(avcodec_alloc_context3(codec));
  host_frame_.reset(av_frame_alloc());
  if (!codec_ || !host_frame_) {
    return make_error(StatusCode::kResourceExhausted, "out of memory allocating an encoder");
  }
  const AVPixelFormat format = options_.bit_depth == 10 ? AV_PIX_FMT_YUV420P10 : AV_PIX_FMT_YUV420P;
  codec_->pix_fmt = format;
  host_frame_->format = format;
  return open_context(codec, codec_options);
}

// Settings common to every backend, then avcodec_open2 and the reusable input frame.
Status LibavEncoder::open_context(const AVCodec* codec, Dictionary& codec_options) {
  codec_->width = options_.width;
  codec_->height = options_.height;
  codec_->time_base = to_av(options_.time_base);
  codec_->framerate = to_av(options_.frame_rate);
  codec_->sample_aspect_ratio = AVRational{1, 1};
  if (options_.full_range) codec_->color_range = AVCOL_RANGE_JPEG;
  if (options_.bit_rate > 0) {
    codec_->bit_rate = options_.bit_rate;
  }
  if (options_.gop > 0) {
    codec_->gop_size = options_.gop;
  }
  if (options_.max_b_frames >= 0) {
    codec_->max_b_frames = options_.max_b_frames;
  }
  if (options_.threads > 0) {
    codec_->thread_count = options_.threads;
  }
  if ((output_->oformat->flags & AVFMT_GLOBALHEADER) != 0) {
    codec_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  }
  clear_last_ffmpeg_message();
  const int opened = avcodec_open2(codec_.get(), codec, codec_options.get());
  if (opened < 0) {
    return ffmpeg_error(opened,
                        std::string("opening ") + codec->name + " (preset '" + options_.preset + "')");
  }
  const std::string leftover = codec_options.leftover_keys();
  if (!leftover.empty()) {
    log_warn("{}: {} ignored the options: {}", path_, codec->name, leftover);
  }
  host_frame_->width = options_.width;
  host_frame_->height = options_.height;
  FOVEA_AV_TRY(av_frame_get_buffer(host_frame_.get(), 0));
  return Status::ok();
}

Status LibavEncoder::open_stream() {
  stream_ = avformat_new_stream(output_.get(), nullptr);
  if (stream_ == nullptr) {
    return make_error(StatusCode::kResourceExhausted, "out of memory allocating the output stream");
  }
  FOVEA_AV_TRY(avcodec_parameters_from_context(stream_->codecpar, codec_.get()));
  // A hint: muxers may pick their own time base in avformat_write_header (mp4 scales it up, mkv
  // uses 1/1000); packets are rescaled to whatever it ends up being.
  stream_->time_base = codec_->time_base;
  stream_->avg_frame_rate = codec_->framerate;
  stream_->r_frame_rate = codec_->framerate;
  if ((output_->oformat->flags & AVFMT_NOFILE) == 0) {
    clear_last_ffmpeg_message();
    file_.emplace(path_);
    const int opened = avio_open(&output_->pb, file_->partial().c_str(), AVIO_FLAG_WRITE);
    if (opened < 0) {
      return ffmpeg_error(opened, "cannot create the output file");
    }
  }
  Dictionary muxer_options;
  set_live_muxer_options(path_, options_, muxer_options);
  clear_last_ffmpeg_message();
  if (const int written = avformat_write_header(output_.get(), muxer_options.get()); written < 0) {
    return ffmpeg_error(written, "cannot start the output");
  }
  header_written_ = true;
  return Status::ok();
}

Status LibavEncoder::encode(const Frame& frame) {
  if (finished_) {
    return make_error(StatusCode::kInvalidArgument, "encode() called after finish()").with_context(path_);
  }
  return encode_frame(frame).with_context(path_);
}

Status LibavEncoder::encode_frame(const Frame& frame) {
  FOVEA_TRY(check_frame(frame, options_));
  const bool nvenc = frames_ != nullptr;
  FOVEA_TRY(nvenc ? fill_nvenc_frame(frame.image) : fill_software_frame(frame.image));
  AVFrame* input = nvenc ? hw_frame_.get() : host_frame_.get();
  input->pts = next_pts(frame);
  input->pict_type = AV_PICTURE_TYPE_NONE;
  FOVEA_TRY(send(input));
  ++stats_.frames_in;
  return Status::ok();
}

// The frame's pts, or one past the last when it has none. Encoders and muxers need strictly
// increasing pts; a repeated or backwards one (damaged sources produce them) is moved forward,
// and the count is reported when the encoder finishes.
std::int64_t LibavEncoder::next_pts(const Frame& frame) {
  std::int64_t pts = frame.has_pts ? frame.pts : (have_last_pts_ ? last_pts_ + 1 : 0);
  if (have_last_pts_ && pts <= last_pts_) {
    if (pts_repaired_++ == 0) {
      log_warn("{}: frame {} has pts {} after {}; moving it forward to keep timestamps increasing", path_,
               frame.index, pts, last_pts_);
    }
    pts = last_pts_ + 1;
  }
  have_last_pts_ = true;
  last_pts_ = pts;
  return pts;
}

Status LibavEncoder::fill_software_frame(const ImageView& image) {
  // The encoder may still reference the previous frame's buffer; this copies only in that case.
  FOVEA_AV_TRY(av_frame_make_writable(host_frame_.get()));
  if (image.format == PixelFormat::kP016) {
    return download_p016(image);
  }
  if (image.memory != MemoryKind::kDevice) {
    fill_yuv420p(image, host_frame_.get());
    return Status::ok();
  }
#if defined(FOVEA_HAVE_CUDA)
  const int chroma_w = (image.width + 1) / 2;
  const int chroma_h = (image.height + 1) / 2;
  const std::size_t uv_pitch = 2 * static_cast<std::size_t>(chroma_w);
  h_uv_.resize(uv_pitch * chroma_h);
  FOVEA_CUDA_TRY(cudaMemcpy2DAsync(host_frame_->data[0], host_frame_->linesize[0], image.planes[0].data,
                                   image.planes[0].pitch, image.width, image.height, cudaMemcpyDeviceToHost,
                                   options_.stream));
  FOVEA_CUDA_TRY(cudaMemcpy2DAsync(h_uv_.data(), uv_pitch, image.planes[1].data, image.planes[1].pitch,
                                   uv_pitch, chroma_h, cudaMemcpyDeviceToHost, options_.stream));
  FOVEA_CUDA_TRY(cudaStreamSynchronize(options_.stream));
  deinterleave_uv(h_uv_.data(), uv_pitch, chroma_w, chroma_h, host_frame_.get());
  return Status::ok();
#else
  return make_error(StatusCode::kUnsupported, "device frames need a build of fovea with CUDA");
#endif
}

// P016 into the YUV420P10 input frame; a device frame is downloaded whole first.
Status LibavEncoder::download_p016(const ImageView& image) {
  if (image.memory != MemoryKind::kDevice) {
    fill_yuv420p10(image, host_frame_.get());
    return Status::ok();
  }
#if defined(FOVEA_HAVE_CUDA)
  FOVEA_ASSIGN_OR_RETURN(const ImageAllocation layout,
                         plan_image_allocation(PixelFormat::kP016, image.width, image.height));
  h_p016_.resize(layout.total_bytes);
  const ImageView host =
      image_view_in(h_p016_.data(), layout, PixelFormat::kP016, image.width, image.height, MemoryKind::kHost);
  for (int p = 0; p < 2; ++p) {
    const PlaneShape shape = layout.layout.planes[p];
    FOVEA_CUDA_TRY(cudaMemcpy2DAsync(host.planes[p].data, host.planes[p].pitch, image.planes[p].data,
                                     image.planes[p].pitch, static_cast<std::size_t>(shape.width_bytes),
                                     static_cast<std::size_t>(shape.height), cudaMemcpyDeviceToHost,
                                     options_.stream));
  }
  FOVEA_CUDA_TRY(cudaStreamSynchronize(options_.stream));
  fill_yuv420p10(host, host_frame_.get());
  return Status::ok();
#else
  return make_error(StatusCode::kUnsupported, "device frames need a build of fovea with CUDA");
#endif
}

#if defined(FOVEA_HAVE_CUDA)
Status LibavEncoder::fill_nvenc_frame(const ImageView& image) {
  av_frame_unref(hw_frame_.get());
  FOVEA_AV_TRY(av_hwframe_get_buffer(frames_.get(), hw_frame_.get(), 0));
  if (image.memory != MemoryKind::kDevice) {
    FOVEA_AV_TRY(av_frame_make_writable(host_frame_.get()));
    fill_nv12(image, host_frame_.get());
    FOVEA_AV_TRY(av_hwframe_transfer_data(hw_frame_.get(), host_frame_.get(), 0));
    return Status::ok();
  }
  // Sizes are even (check_options), so the interleaved chroma row is `width` bytes.
  FOVEA_CUDA_TRY(cudaMemcpy2DAsync(hw_frame_->data[0], hw_frame_->linesize[0], image.planes[0].data,
                                   image.planes[0].pitch, image.width, image.height, cudaMemcpyDeviceToDevice,
                                   options_.stream));
  FOVEA_CUDA_TRY(cudaMemcpy2DAsync(hw_frame_->data[1], hw_frame_->linesize[1], image.planes[1].data,
                                   image.planes[1].pitch, image.width, image.height / 2,
                                   cudaMemcpyDeviceToDevice, options_.stream));
  // NVENC reads on FFmpeg's stream, which knows nothing of ours.
  FOVEA_CUDA_TRY(cudaStreamSynchronize(options_.stream));
  return Status::ok();
}
#else
Status LibavEncoder::fill_nvenc_frame(const ImageView&) {
  return make_error(StatusCode::kUnsupported, "NVENC needs a build of fovea with CUDA");
}
#endif

// Sends `frame` (nullptr: flush) and writes every packet the encoder has ready.
Status LibavEncoder::send(const AVFrame* frame) {
  FOVEA_AV_TRY(avcodec_send_frame(codec_.get(), frame));
  while (true) {
    const int received = avcodec_receive_packet(codec_.get(), packet_.get());
    if (received == AVERROR(EAGAIN) || received == AVERROR_EOF) {
      return Status::ok();
    }
    FOVEA_AV_TRY(received);
    av_packet_rescale_ts(packet_.get(), codec_->time_base, stream_->time_base);
    packet_->stream_index = stream_->index;
    ++stats_.packets_out;
    stats_.bytes_out += packet_->size;
    // Takes the packet's reference and leaves it blank for the next receive.
    FOVEA_AV_TRY(av_interleaved_write_frame(output_.get(), packet_.get()));
  }
}

Status LibavEncoder::finish() {
  if (!finished_) {
    finished_ = true;
    finish_status_ = flush_and_close().with_context(path_);
    if (pts_repaired_ > 0) {
      log_warn("{}: {} frames had non-increasing pts and were moved forward", path_, pts_repaired_);
    }
  }
  return finish_status_;
}

// Every step runs even when an earlier one failed, so the trailer is written whenever the header
// was; the first error is the one reported.
Status LibavEncoder::flush_and_close() {
  Status first = Status::ok();
  auto keep_first = [&first](Status status) {
    if (first.is_ok()) {
      first = std::move(status);
    }
  };
  if (header_written_) {
    keep_first(send(nullptr));
    keep_first([this]() -> Status {
      FOVEA_AV_TRY(av_write_trailer(output_.get()));
      return Status::ok();
    }());
  }
  if (output_ && output_->pb != nullptr && (output_->oformat->flags & AVFMT_NOFILE) == 0) {
    keep_first([this]() -> Status {
      FOVEA_AV_TRY(avio_closep(&output_->pb));
      return Status::ok();
    }());
  }
  // Only a finalized file takes the final name; a broken one is removed rather than left to
  // replace a previous good output.
  if (file_) {
    if (header_written_ && first.is_ok()) {
      keep_first(file_->commit());
    } else {
      file_->discard();
    }
  }
  return first;
}

}  // namespace

Status check_file_container(const std::string& path) {
  const Result<const AVOutputFormat*> format = output_format(path, EncoderTarget::kFile);
  return format.is_ok() ? Status::ok() : format.status().with_context(path);
}

Result<std::unique_ptr<Encoder>> Encoder::open(const std::string& path, const EncoderOptions& options) {
  auto encoder = std::make_unique<LibavEncoder>(path, options);
  const Status status = encoder->open();
  if (!status.is_ok()) {
    return status.with_context(path);
  }
  return std::unique_ptr<Encoder>(std::move(encoder));
}

}  // namespace fovea::io
