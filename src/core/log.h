// Leveled logging to stderr. One line per message, written atomically so that lines from
// concurrent sources and stages never interleave. The level comes from FOVEA_LOG_LEVEL
// (error|warn|info|debug) or from set_log_level (the CLI's -v/-q).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace fovea {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
bool parse_log_level(std::string_view text, LogLevel* level);
void log_line(LogLevel level, std::string_view message);

// `text` with the password of every "scheme://user:password@" in it replaced by "***":
// rtsp://user:secret@host/x -> rtsp://user:***@host/x. Works on a bare URI and on a message that
// quotes URIs ("rtsp://u:p@cam: connection refused"). log_line applies it to every line.
std::string redact_uri(std::string_view text);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level <= log_level()) {
    log_line(level, fmt::format(format, std::forward<Args>(args)...));
  }
}

template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  log(LogLevel::kError, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
  log(LogLevel::kWarn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  log(LogLevel::kInfo, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
  log(LogLevel::kDebug, format, std::forward<Args>(args)...);
}

}  // namespace fovea
