#include "core/log.h"

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

void log_line(LogLevel level, std::string_view message) {
  std::string line = fmt::format("fovea [{}] {}\n", kLevelNames[static_cast<int>(level)], message);
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace fovea
