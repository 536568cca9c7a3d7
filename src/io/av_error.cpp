#include "io/av_error.h"

#include <cerrno>

extern "C" {
#include <libavutil/error.h>
}

namespace fovea::io {

std::string av_error_text(int code) {
  char buffer[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buffer, sizeof(buffer));
  return buffer;
}

StatusCode av_error_status_code(int code) {
  switch (code) {
    case AVERROR(ENOENT): return StatusCode::kNotFound;
    case AVERROR(EACCES):
    case AVERROR(EIO):
    case AVERROR(ECONNREFUSED):
    case AVERROR(ECONNRESET):
    case AVERROR(EHOSTUNREACH):
    case AVERROR(ENETUNREACH): return StatusCode::kIoError;
    case AVERROR(ETIMEDOUT): return StatusCode::kTimeout;
    case AVERROR(ENOMEM): return StatusCode::kResourceExhausted;
    case AVERROR(EINVAL): return StatusCode::kInvalidArgument;
    case AVERROR_EXIT: return StatusCode::kCancelled;
    case AVERROR_INVALIDDATA:
    case AVERROR_EOF: return StatusCode::kCorruptData;
    case AVERROR_DECODER_NOT_FOUND:
    case AVERROR_DEMUXER_NOT_FOUND:
    case AVERROR_ENCODER_NOT_FOUND:
    case AVERROR_MUXER_NOT_FOUND:
    case AVERROR_PROTOCOL_NOT_FOUND:
    case AVERROR_PATCHWELCOME: return StatusCode::kUnsupported;
    case AVERROR_STREAM_NOT_FOUND: return StatusCode::kNotFound;
    default: return StatusCode::kIoError;
  }
}

Status av_error(int code, std::string_view what) {
  std::string message(what);
  message.append(": ").append(av_error_text(code));
  return Status(av_error_status_code(code), std::move(message));
}

}  // namespace fovea::io
