// Ctrl-C during `fovea transcode`: the process stops early with exit code 130 and leaves a valid,
// finalized output file (its moov atom written), as the issue requires of every output.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "io/demuxer.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

// Starts `fovea transcode input output` with stdout/stderr silenced; returns its pid.
pid_t start_transcode(const std::string& input, const std::string& output) {
  return start_cli(FOVEA_CLI_PATH, {"transcode", input, output, "--decoder", "cpu"}, "/dev/null");
}

TEST(CliInterrupt, TranscodeFinalizesItsOutputOnSigint) {
  const std::string dir = test_temp_dir();
  ClipSpec spec;
  spec.width = 640;
  spec.height = 360;
  spec.frames = 2400;  // 80 s of video: long enough that the signal lands mid-transcode
  spec.preset = "ultrafast";
  auto input = write_clip(dir + "/long.mp4", spec);
  ASSERT_TRUE(input.is_ok()) << input.status().to_string();
  const std::string output = dir + "/interrupted.mp4";

  const pid_t pid = start_transcode(*input, output);
  ASSERT_GT(pid, 0);
  // Interrupt once the encoder has written a first chunk of packets.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  bool exited_early = false;
  while (std::chrono::steady_clock::now() < deadline) {
    // The output grows under a temporary name beside the final one until it is finalized.
    std::error_code ec;
    const bool written =
        std::any_of(std::filesystem::directory_iterator(dir, ec), std::filesystem::directory_iterator(),
                    [](const std::filesystem::directory_entry& entry) {
                      // A file gone between listing and stat (the pre-run check's empty probe)
                      // would read as size -1.
                      std::error_code size_error;
                      const std::uintmax_t size = std::filesystem::file_size(entry.path(), size_error);
                      return entry.path().extension() == ".partial" && !size_error && size > 64 * 1024;
                    });
    if (written) break;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited_early = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(exited_early) << "transcode ended before it could be interrupted (exit status " << status
                             << ")";
  ASSERT_EQ(kill(pid, SIGINT), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 130);

  // The output opens (a finalized mp4 has its index) and holds part of the input.
  auto demuxer = io::Demuxer::open(output);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  io::Packet packet;
  int packets = 0;
  for (;;) {
    auto more = (*demuxer)->read(packet);
    ASSERT_TRUE(more.is_ok()) << more.status().to_string();
    if (!*more) break;
    ++packets;
  }
  EXPECT_GT(packets, 0);
  EXPECT_LT(packets, spec.frames);
}

}  // namespace
}  // namespace fovea::testing
