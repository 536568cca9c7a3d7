// FFmpeg's member of the error macro family (core/library_error.h).
#pragma once

#include <string>

#include "core/library_error.h"

namespace fovea::io {

// av_strerror's text for an AVERROR code.
std::string av_error_text(int code);
// Maps an AVERROR to the closest StatusCode (ENOENT -> kNotFound, INVALIDDATA -> kCorruptData, ...).
StatusCode av_error_status_code(int code);
Status av_error(int code, std::string_view what);

namespace detail {
inline bool av_ok(int e) {
  return e >= 0;
}
}  // namespace detail

}  // namespace fovea::io

// Returns a Status from the enclosing function when an FFmpeg call returns a negative AVERROR.
#define FOVEA_AV_TRY(call)                                                                                \
  do {                                                                                                    \
    const int fovea_av_result_ = (call);                                                                  \
    if (fovea_av_result_ < 0) {                                                                           \
      return ::fovea::library_error(::fovea::io::av_error_status_code(fovea_av_result_), "FFmpeg", #call, \
                                    __FILE__, __LINE__, ::fovea::io::av_error_text(fovea_av_result_),     \
                                    fovea_av_result_);                                                    \
    }                                                                                                     \
  } while (0)

namespace fovea::io {
// Routes FFmpeg's own log lines into fovea's log: its warnings (libx264's too) as warnings (-q
// hides them), the rest at debug level (-v shows them; errors come back in a Status), and
// remembers the last error-level line per thread, so a Status can carry FFmpeg's specific reason
// ("moov atom not found") instead of only the generic AVERROR text. Idempotent.
void install_ffmpeg_log_bridge();
// The last error-level FFmpeg message on this thread since clear_last_ffmpeg_message().
std::string last_ffmpeg_message();
void clear_last_ffmpeg_message();
}  // namespace fovea::io
