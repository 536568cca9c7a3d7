#include "io/decoder.h"

#include <atomic>

#include "core/log.h"

namespace fovea::io {
namespace {
std::atomic<std::int64_t> g_fallbacks{0};
}  // namespace

std::string_view decoder_backend_name(DecoderBackend backend) {
  switch (backend) {
    case DecoderBackend::kAuto: return "auto";
    case DecoderBackend::kCpu: return "cpu";
    case DecoderBackend::kNvdec: return "nvdec";
  }
  return "auto";
}

bool parse_decoder_backend(std::string_view text, DecoderBackend* backend) {
  for (DecoderBackend candidate : {DecoderBackend::kAuto, DecoderBackend::kCpu, DecoderBackend::kNvdec}) {
    if (text == decoder_backend_name(candidate)) {
      *backend = candidate;
      return true;
    }
  }
  return false;
}

std::int64_t decoder_fallback_count() {
  return g_fallbacks.load();
}

Result<OpenedDecoder> open_decoder(const StreamInfo& stream, const DecoderOptions& options) {
  OpenedDecoder opened;
  if (options.backend != DecoderBackend::kCpu) {
    Result<std::unique_ptr<Decoder>> nvdec = open_nvdec_decoder(stream, options);
    if (nvdec.is_ok()) {
      opened.decoder = std::move(nvdec).value();
      return opened;
    }
    // Only "cannot do this" falls back; a device that fails mid-way is an error worth seeing.
    if (nvdec.status().code() != StatusCode::kUnsupported) {
      return nvdec.status();
    }
    opened.fallback_reason = nvdec.status().message();
    g_fallbacks.fetch_add(1);
    log_warn("{}: decoding on the CPU instead of NVDEC: {}", stream.url, opened.fallback_reason);
  }
  FOVEA_ASSIGN_OR_RETURN(opened.decoder, open_cpu_decoder(stream, options));
  return opened;
}

namespace {

// Receives until the decoder needs input (kAgain) or has ended (kEof). After send_eof a decoder
// must end with kEof; kAgain then would silently lose the frames it still holds.
Status receive_ready(Decoder& decoder, const std::function<void(Frame&&)>& on_frame, bool until_eof) {
  while (true) {
    Frame frame;
    FOVEA_ASSIGN_OR_RETURN(IoState state, decoder.receive(frame));
    if (state == IoState::kOk) {
      on_frame(std::move(frame));
    } else if (state == IoState::kEof || !until_eof) {
      return Status::ok();
    } else {
      return make_error(StatusCode::kInternal, "the decoder answered kAgain after send_eof");
    }
  }
}

}  // namespace

Status send_and_receive(Decoder& decoder, const Packet& packet,
                        const std::function<void(Frame&&)>& on_frame) {
  while (true) {
    FOVEA_ASSIGN_OR_RETURN(IoState sent, decoder.send(packet));
    FOVEA_TRY(receive_ready(decoder, on_frame, false));
    if (sent == IoState::kOk) {
      return Status::ok();
    }
  }
}

Status finish_and_receive(Decoder& decoder, const std::function<void(Frame&&)>& on_frame) {
  FOVEA_TRY(decoder.send_eof());
  return receive_ready(decoder, on_frame, true);
}

#if !defined(FOVEA_HAVE_CUDA)
Result<std::unique_ptr<Decoder>> open_nvdec_decoder(const StreamInfo&, const DecoderOptions&) {
  return make_error(StatusCode::kUnsupported, "this build of fovea has no CUDA, so no NVDEC");
}
#endif

}  // namespace fovea::io
