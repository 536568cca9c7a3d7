#include "core/log.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace fovea {
namespace {

LogLevel initial_level() {
  LogLevel level = LogLevel::kInfo;
  if (const char* env = std::getenv("FOVEA_LOG_LEVEL")) {
    parse_log_level(env, &level);
  }
  return level;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

constexpr std::string_view kLevelNames[] = {"error", "warn", "info", "debug"};

}  // namespace

void set_log_level(LogLevel level) {
  level_storage().store(static_cast<int>(level));
}

LogLevel log_level() {
  return static_cast<LogLevel>(level_storage().load(std::memory_order_relaxed));
}

bool parse_log_level(std::string_view text, LogLevel* level) {
  for (int i = 0; i < 4; ++i) {
    if (text == kLevelNames[i]) {
      *level = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

std::string redact_uri(std::string_view text) {
  std::string redacted;
  std::size_t copied = 0;
  for (std::size_t marker = text.find("://"); marker != std::string_view::npos;
       marker = text.find("://", marker + 3)) {
    // The authority ends where the path, query or fragment starts, or where a message's words go on.
    const std::size_t authority = marker + 3;
    const std::size_t authority_end = std::min(text.find_first_of("/?#\"' \t\r\n", authority), text.size());
    const std::size_t at = text.rfind('@', authority_end - 1);
    if (at == std::string_view::npos || at < authority) continue;
    const std::size_t colon = text.find(':', authority);
    if (colon >= at || colon + 1 == at) continue;  // no password, or an empty one
    redacted.append(text.substr(copied, colon + 1 - copied)).append("***");
    copied = at;
  }
  return redacted.append(text.substr(copied));
}

void log_line(LogLevel level, std::string_view message) {
  // A camera's password never reaches the log, whatever message quotes its URL.
  std::string line =
      fmt::format("fovea [{}] {}\n", kLevelNames[static_cast<int>(level)], redact_uri(message));
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace fovea
