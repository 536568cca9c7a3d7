#include "io/av_error.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "core/log.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
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

namespace {

thread_local std::string t_last_message;
// The line FFmpeg is writing in pieces, and whether its next piece starts a line (its prefix).
thread_local std::string t_partial;
thread_local int t_print_prefix = 1;
constexpr std::size_t kMaxPartialLine = 4096;
thread_local std::string t_last_warning;

// "[libx264 @ 0x55d0c0a3c2c0] msg" -> "[libx264] msg": the address means nothing to a reader.
std::string without_address(std::string text) {
  const std::size_t at = text.find(" @ 0x");
  const std::size_t close = text.find(']');
  if (text.starts_with('[') && at != std::string::npos && close != std::string::npos && at < close) {
    text.erase(at, close - at);
  }
  return text;
}

void ffmpeg_log_callback(void* context, int level, const char* format, va_list args) {
  const bool warning = level > AV_LOG_ERROR && level <= AV_LOG_WARNING;
  // Cheap early out: a line fovea would not show is not even formatted, but for errors, which are
  // kept for the Status.
  if (level > AV_LOG_ERROR && log_level() < (warning ? LogLevel::kWarn : LogLevel::kDebug)) {
    return;
  }
  char line[1024];
  av_log_format_line2(context, level, format, args, line, sizeof(line), &t_print_prefix);
  // FFmpeg writes some lines in pieces ("Packet corrupt (...)", then "."): one line is logged once
  // its newline has come (or it grew past any real line's length).
  t_partial += line;
  if (!t_partial.ends_with('\n') && t_partial.size() < kMaxPartialLine) return;
  std::string text = std::exchange(t_partial, {});
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  if (text.empty()) {
    return;
  }
  text = without_address(std::move(text));
  if (level <= AV_LOG_ERROR) {
    t_last_message = text;
  }
  // FFmpeg's (and libx264's, which logs through it) warnings are fovea warnings, hidden by -q; a
  // warning repeated line after line is said once. Errors come back in a Status with context, and
  // FFmpeg's info and below are chatter: both are logged at debug level, not to print twice.
  if (warning && text != t_last_warning) {
    t_last_warning = text;
    log_warn("ffmpeg: {}", text);
    return;
  }
  log_debug("ffmpeg: {}", text);
}

}  // namespace

void install_ffmpeg_log_bridge() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(ffmpeg_log_callback); });
}

std::string last_ffmpeg_message() {
  return t_last_message;
}
void clear_last_ffmpeg_message() {
  t_last_message.clear();
}

}  // namespace fovea::io
