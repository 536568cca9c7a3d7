// Files a user names are checked before they are read (core/input_file.h): a FIFO would block the
// read forever, a device or a huge file would fill the memory.
#include "core/input_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/test_media.h"

namespace fovea {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::path(testing::test_temp_dir()) / name;
}

void expect_refused(const Result<std::uintmax_t>& result, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(needle), std::string::npos) << result.status().message();
}

TEST(InputFile, ReadsARegularFileWhole) {
  const fs::path path = temp_path("whole.txt");
  std::ofstream(path, std::ios::binary) << "twelve bytes";
  const Result<std::string> text = read_regular_file(path, "label file", 100);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_EQ(*text, "twelve bytes");
  EXPECT_EQ(*regular_file_size(path, "label file"), 12u);
}

TEST(InputFile, RefusesWhatIsNotARegularFileNamingIt) {
  const fs::path absent = temp_path("absent.onnx");
  expect_refused(regular_file_size(absent, "model"), StatusCode::kNotFound,
                 "model " + absent.string() + ": no such file");
  expect_refused(regular_file_size(testing::test_temp_dir(), "model"), StatusCode::kInvalidArgument,
                 "is a directory");
  const fs::path fifo = temp_path("input.fifo");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused by what stat says, without opening it: an open would block until a writer came.
  expect_refused(regular_file_size(fifo, "--input x"), StatusCode::kInvalidArgument, "is a FIFO");
  expect_refused(regular_file_size("/dev/zero", "model"), StatusCode::kInvalidArgument, "a character device");
}

TEST(InputFile, RefusesAFileLargerThanItsKindMayBeBeforeReadingIt) {
  const fs::path path = temp_path("sparse.yaml");
  std::ofstream(path, std::ios::binary).close();
  fs::resize_file(path, std::uintmax_t{8} << 30);  // sparse: nothing is written
  const Result<std::string> text = read_regular_file(path, "configuration", 16u << 20);
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(text.status().message().find("8589934592 bytes, more than the 16777216"), std::string::npos)
      << text.status().message();
  fs::remove(path);
}

}  // namespace
}  // namespace fovea
