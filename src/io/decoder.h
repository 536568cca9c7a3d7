// Video decoder interface in FFmpeg's send/receive style:
//
//   send(packet)   -> kOk: accepted; kAgain: output is full, receive() frames first, then resend
//   send_eof()     -> no more packets; the decoder drains what it holds
//   receive(frame) -> kOk: `frame` is set; kAgain: needs more input; kEof: fully drained
//   restart()      -> the stream starts again (a loop, a seek): frames not yet received are
//                     dropped and the next packet must begin at a keyframe; the decoder keeps what
//                     it allocated, so sending packets again is cheaper than opening a new one
//
// Backends: `cpu` (libavcodec, host frames) and `nvdec` (NVDEC through nvcuvid, device frames in
// pooled memory, on a stream the caller gives). open_decoder() picks one, checks the hardware's
// capabilities up front, and falls back from nvdec to cpu (logged and counted) when needed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/cuda_stream.h"
#include "core/frame.h"
#include "core/status.h"
#include "io/demuxer.h"

namespace fovea::io {

enum class DecoderBackend { kAuto, kCpu, kNvdec };
std::string_view decoder_backend_name(DecoderBackend backend);
bool parse_decoder_backend(std::string_view text, DecoderBackend* backend);

enum class IoState { kOk, kAgain, kEof };

struct CropRect {
  int left = 0, top = 0, right = 0, bottom = 0;  // right/bottom exclusive; all 0 = no crop
  bool empty() const { return right == 0 && bottom == 0; }
};

struct DecoderOptions {
  DecoderBackend backend = DecoderBackend::kAuto;
  // cpu: worker threads (0 = one per core, as FFmpeg's default). nvdec ignores it.
  int threads = 0;
  // cpu: kYUV420P (libavcodec's native layout for 8-bit 4:2:0) or kNV12; 10-bit sources give
  // kP016 either way unless eight_bit_output. nvdec: kNV12 (8-bit) or kP016 (10/12-bit).
  PixelFormat cpu_output = PixelFormat::kYUV420P;
  // nvdec only: device, stream for the copies out of the decoder, and hardware crop.
  int device = 0;
  cudaStream_t stream = nullptr;
  CropRect crop;  // in source pixels, applied by the decoder hardware
  // Both backends: the size frames are delivered at; both or neither (0 = the (cropped) source's
  // own size, which may change mid-stream). Only frames of another size are scaled, so a stream
  // whose resolution changes mid-stream keeps this size throughout, and frames already at it stay
  // bit-exact. nvdec scales in hardware. cpu scales with libswscale (bilinear) into cpu_output,
  // 8-bit frames only unless eight_bit_output (scaling a 10-bit one fails with kUnsupported), and
  // takes even sizes only.
  int output_width = 0;
  int output_height = 0;
  // Both backends: 10/12-bit sources are delivered as 8-bit frames too (nvdec: kNV12; cpu:
  // cpu_output), for consumers that work in 8 bits. nvdec has the hardware write NV12 where the GPU
  // can (cuvidGetDecoderCaps) and is kUnsupported otherwise (open_decoder then falls back to the
  // cpu); cpu converts with libswscale, which dithers the dropped bits.
  bool eight_bit_output = false;
  // nvdec: pictures the hardware decodes ahead of the one being delivered. More keeps the engine
  // busier (throughput); 0 delivers each picture as soon as it is decoded (live, low latency).
  int display_delay = 4;
  // nvdec: decoded surfaces kept by the hardware; 0 = what the stream needs plus headroom.
  int decode_surfaces = 0;
  // nvdec: output frames in flight at once (bounds the device pool).
  int max_frames_in_flight = 8;
};

struct DecoderStats {
  std::int64_t packets_sent = 0;
  std::int64_t frames_decoded = 0;
  std::int64_t frames_damaged = 0;    // delivered, but the decoder reported errors/concealment
  std::int64_t packets_rejected = 0;  // packets the decoder refused as invalid (data lost)
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual Result<IoState> send(const Packet& packet) = 0;
  virtual Status send_eof() = 0;
  virtual Result<IoState> receive(Frame& frame) = 0;
  // Starts the same source's stream again at a keyframe, keeping the decoder's resources. Why not
  // open a new decoder instead: an NVDEC decoder created while other sessions decode slows every
  // session of the process (8 sessions: 42% when each made a new decoder per pass of a 300-frame
  // clip; docs/perf.md, "Run E"). An error that made the decoder unusable stays.
  virtual Status restart() = 0;

  virtual DecoderBackend backend() const = 0;
  virtual DecoderStats stats() const = 0;
};

struct OpenedDecoder {
  std::unique_ptr<Decoder> decoder;
  // Why the requested backend was not used ("" when it was). Already logged as a warning.
  std::string fallback_reason;
};

// Opens a decoder for `stream`. With kAuto or kNvdec, NVDEC is used when this build has CUDA, a
// GPU and the driver's nvcuvid are present and cuvidGetDecoderCaps accepts the codec, bit depth,
// chroma format and size; otherwise the cpu backend is used and the reason is logged and counted.
Result<OpenedDecoder> open_decoder(const StreamInfo& stream, const DecoderOptions& options);

// The send/receive protocol in one place, for consumers that take frames as they come: sends
// `packet`, handing every frame that becomes ready to `on_frame`, and resends while the decoder
// answers kAgain.
Status send_and_receive(Decoder& decoder, const Packet& packet, const std::function<void(Frame&&)>& on_frame);
// Ends the stream and hands every remaining frame to `on_frame`; kInternal when the decoder does
// not reach kEof.
Status finish_and_receive(Decoder& decoder, const std::function<void(Frame&&)>& on_frame);

// Fallbacks from nvdec to cpu since the process started (for run stats).
std::int64_t decoder_fallback_count();

// Backend constructors, used by open_decoder and by tests that need one backend exactly.
Result<std::unique_ptr<Decoder>> open_cpu_decoder(const StreamInfo& stream, const DecoderOptions& options);
// Fails with kUnsupported (naming the reason) when NVDEC cannot decode this stream.
Result<std::unique_ptr<Decoder>> open_nvdec_decoder(const StreamInfo& stream, const DecoderOptions& options);

}  // namespace fovea::io
