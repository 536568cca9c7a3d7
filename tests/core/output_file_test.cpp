// Outputs that never destroy data (core/output_file.h): the checks before a run and the temporary
// file that takes the final name only when complete.
#include "core/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// The partial name of an output whose own name nearly fills NAME_MAX (255 bytes) still fits, and is
// the output's alone: a long name is written, not refused by the file system.
TEST(OutputFile, APartialNameFitsEvenForALongOutputName) {
  const fs::path folder = fs::path(testing::test_temp_dir()) / "long";
  fs::create_directories(folder);
  const std::string name = std::string(240, 'n') + ".png";
  const fs::path partial = partial_path(folder / name);
  EXPECT_LE(partial.filename().string().size(), 255u);
  EXPECT_NE(partial, partial_path(folder / (std::string(240, 'n') + "x.png")));
  ASSERT_TRUE(write_file_atomically(folder / name, "pixels", "picture").is_ok());
  std::ifstream back(folder / name);
  std::string text;
  back >> text;
  EXPECT_EQ(text, "pixels");
}

TEST(OutputFile, PartialPathSitsBesideTheOutput) {
  const fs::path partial = partial_path("/some/dir/out.mp4");
  EXPECT_EQ(partial.parent_path(), fs::path("/some/dir"));
  EXPECT_EQ(partial.filename().string().rfind("out.mp4.fovea-", 0), 0u) << partial;
  EXPECT_EQ(partial.extension(), ".partial");
}

TEST(OutputFile, CommitReplacesThePreviousFileOnlyWhenComplete) {
  const fs::path dir = testing::test_temp_dir();
  const fs::path path = dir / "out.json";
  write(path, "previous good output");
  {
    PendingFile file(path);
    write(file.partial(), "new, half written");
    EXPECT_EQ(testing::read_text(path), "previous good output");
  }  // destroyed uncommitted: a failed run
  EXPECT_EQ(testing::read_text(path), "previous good output");
  EXPECT_FALSE(fs::exists(partial_path(path)));

  PendingFile file(path);
  write(file.partial(), "new output");
  ASSERT_TRUE(file.commit().is_ok());
  EXPECT_EQ(testing::read_text(path), "new output");
  EXPECT_FALSE(fs::exists(file.partial()));
}

TEST(OutputFile, ReplacingKeepsTheBytesOfAHardLinkToTheOldFile) {
  const fs::path dir = testing::test_temp_dir();
  write(dir / "out.txt", "old");
  fs::create_hard_link(dir / "out.txt", dir / "link.txt");
  ASSERT_TRUE(write_file_atomically(dir / "out.txt", "new", "test").is_ok());
  EXPECT_EQ(testing::read_text(dir / "out.txt"), "new");
  EXPECT_EQ(testing::read_text(dir / "link.txt"), "old");
}

TEST(OutputFile, WriteCreatesTheFolderAndNamesWhatFailed) {
  const fs::path dir = testing::test_temp_dir();
  ASSERT_TRUE(write_file_atomically(dir / "a" / "b" / "r.json", "{}", "stats.report").is_ok());
  EXPECT_EQ(testing::read_text(dir / "a" / "b" / "r.json"), "{}");

  const Status status = write_file_atomically("/proc/fovea-no-such/r.json", "{}", "stats.report");
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("stats.report /proc/fovea-no-such/r.json"), std::string::npos)
      << status.message();
}

TEST(OutputFile, AnOutputThatIsAnInputIsRefusedHoweverItIsSpelled) {
  const fs::path dir = testing::test_temp_dir();
  write(dir / "clip.mp4", "video");
  fs::create_directories(dir / "sub");
  fs::create_symlink(dir / "clip.mp4", dir / "sub" / "symlink.mp4");
  fs::create_hard_link(dir / "clip.mp4", dir / "sub" / "hardlink.mp4");
  const std::vector<std::string> inputs{"rtsp://camera/stream", (dir / "clip.mp4").string()};
  for (const fs::path& output : {dir / "clip.mp4", dir / "sub" / ".." / "clip.mp4",
                                 dir / "sub" / "symlink.mp4", dir / "sub" / "hardlink.mp4"}) {
    const Status status = check_not_an_input({.what = "--output", .path = output}, inputs);
    ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << output;
    EXPECT_NE(status.message().find("is the input"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("--output"), std::string::npos) << status.message();
  }
  // Through a folder that does not exist yet: `new` will be made, so new/../clip.mp4 is clip.mp4.
  const Status through_new =
      check_not_an_input({.what = "--output", .path = dir / "new" / ".." / "clip.mp4"}, inputs);
  EXPECT_EQ(through_new.code(), StatusCode::kInvalidArgument) << through_new.to_string();
  write(dir / "other.mp4", "another video");
  EXPECT_TRUE(check_not_an_input({.what = "--output", .path = dir / "other.mp4"}, inputs).is_ok());
  EXPECT_TRUE(check_not_an_input({.what = "--output", .path = dir / "new.mp4"}, inputs).is_ok());
}

TEST(OutputFile, UnwritableOutputsAreFoundBeforeTheRun) {
  const fs::path dir = testing::test_temp_dir();
  const Status no_folder = check_writable({.what = "--report", .path = "/proc/fovea-no-such/r.json"});
  ASSERT_FALSE(no_folder.is_ok());
  EXPECT_NE(no_folder.message().find("--report /proc/fovea-no-such/r.json"), std::string::npos)
      << no_folder.message();

  fs::create_directories(dir / "a_folder");
  EXPECT_FALSE(check_writable({.what = "--report", .path = dir / "a_folder"}).is_ok());
  write(dir / "a_file", "x");
  EXPECT_FALSE(check_writable({.what = "-o", .path = dir / "a_file", .is_folder = true}).is_ok());

  // A good output: its folder is created, nothing is left behind, an existing file is untouched.
  fs::create_directories(dir / "out");
  write(dir / "out" / "r.json", "previous");
  EXPECT_TRUE(check_writable({.what = "--report", .path = dir / "out" / "r.json"}).is_ok());
  EXPECT_TRUE(check_writable({.what = "-o", .path = dir / "new" / "videos", .is_folder = true}).is_ok());
  EXPECT_TRUE(fs::is_directory(dir / "new" / "videos"));
  EXPECT_TRUE(fs::is_empty(dir / "new" / "videos"));
  EXPECT_EQ(testing::read_text(dir / "out" / "r.json"), "previous");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator()), 1);
}

// Two outputs on one path (however spelled) would lose one of them: refused before the run.
TEST(OutputFile, TwoOutputsOnOnePathAreRefused) {
  const fs::path dir = testing::test_temp_dir();
  const Status same = check_distinct({{.what = "--metadata", .path = dir / "r.json"},
                                      {.what = "--report", .path = dir / "new" / ".." / "r.json"}});
  ASSERT_EQ(same.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(same.message().find("--metadata"), std::string::npos) << same.message();
  EXPECT_NE(same.message().find("--report"), std::string::npos) << same.message();
  EXPECT_TRUE(check_distinct({{.what = "--metadata", .path = dir / "m.jsonl"},
                              {.what = "--report", .path = dir / "r.json"}})
                  .is_ok());
  EXPECT_EQ(
      check_outputs({{.what = "-o", .path = dir / "a.mp4"}, {.what = "--report", .path = dir / "a.mp4"}}, {})
          .code(),
      StatusCode::kInvalidArgument);
}

// A device or a FIFO at an output's path would be replaced by the renamed file: refused.
TEST(OutputFile, AnOutputThatIsNoRegularFileIsRefused) {
  const fs::path dir = testing::test_temp_dir();
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  for (const fs::path& path : {fs::path("/dev/null"), dir / "fifo"}) {
    const Status refused = check_writable({.what = "--metadata", .path = path});
    ASSERT_FALSE(refused.is_ok()) << path;
    EXPECT_NE(refused.message().find("not a regular file"), std::string::npos) << refused.message();
  }
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
}

}  // namespace
}  // namespace fovea
