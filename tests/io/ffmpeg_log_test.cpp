// FFmpeg's own messages go through fovea's log levels (io/av_error.h's bridge): its warnings (and
// libx264's, which logs through FFmpeg) become fovea warnings that -q hides, without the context's
// address, said once when repeated; its errors are kept for the Status and logged at debug only.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

extern "C" {
#include <libavutil/log.h>
}

#include "core/log.h"
#include "io/av_error.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

// What fovea's log wrote to stderr while `emit` ran at `level`.
template <typename Emit>
std::string stderr_of(LogLevel level, Emit emit) {
  const std::filesystem::path file = std::filesystem::path(testing::test_temp_dir()) / "stderr.txt";
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  FILE* capture = std::fopen(file.c_str(), "w");
  dup2(fileno(capture), STDERR_FILENO);
  const LogLevel before = log_level();
  set_log_level(level);
  emit();
  set_log_level(before);
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::fclose(capture);
  return testing::read_text(file);
}

struct Context {
  const AVClass* av_class;
};
const AVClass kClass = {
    .class_name = "libx264", .item_name = av_default_item_name, .version = LIBAVUTIL_VERSION_INT};

TEST(FfmpegLog, WarningsAreFoveaWarningsThatQuietHides) {
  install_ffmpeg_log_bridge();
  Context context{&kClass};
  const auto warn = [&] { av_log(&context, AV_LOG_WARNING, "fovea test warning %d\n", 1); };
  const std::string shown = stderr_of(LogLevel::kWarn, warn);
  EXPECT_NE(shown.find("ffmpeg: [libx264] fovea test warning 1"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(" @ 0x"), std::string::npos) << shown;
  EXPECT_EQ(
      stderr_of(LogLevel::kError, [&] { av_log(&context, AV_LOG_WARNING, "fovea test warning %d\n", 2); }),
      "");
}

TEST(FfmpegLog, ARepeatedWarningIsSaidOnce) {
  install_ffmpeg_log_bridge();
  Context context{&kClass};
  const std::string shown = stderr_of(LogLevel::kWarn, [&] {
    for (int i = 0; i < 3; ++i) av_log(&context, AV_LOG_WARNING, "fovea test repeated\n");
  });
  EXPECT_EQ(shown.find("fovea test repeated"), shown.rfind("fovea test repeated")) << shown;
  EXPECT_NE(shown.find("fovea test repeated"), std::string::npos) << shown;
}

TEST(FfmpegLog, ErrorsAreKeptForTheStatusAndLoggedOnlyAtDebug) {
  install_ffmpeg_log_bridge();
  clear_last_ffmpeg_message();
  Context context{&kClass};
  const std::string shown =
      stderr_of(LogLevel::kInfo, [&] { av_log(&context, AV_LOG_ERROR, "fovea test error\n"); });
  EXPECT_EQ(shown.find("fovea test error"), std::string::npos) << shown;
  EXPECT_NE(last_ffmpeg_message().find("fovea test error"), std::string::npos);
  const std::string debug =
      stderr_of(LogLevel::kDebug, [&] { av_log(&context, AV_LOG_ERROR, "fovea test error 2\n"); });
  EXPECT_NE(debug.find("fovea test error 2"), std::string::npos) << debug;
}

}  // namespace
}  // namespace fovea::io
