// Label files: the line rules (BOM, CRLF, trimming, trailing newlines), and every bad input
// (missing, directory, empty, blank lines between names, binary, too large), and the count check.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "post/label_file.h"

namespace fovea::post {
namespace {

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("fovea_label_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

using Labels = std::vector<std::string>;

TEST(LabelFile, OneNamePerLine) {
  auto labels = read_label_file(write_file("coco.txt", "__background__\nperson\nbicycle\n"));
  ASSERT_TRUE(labels.is_ok()) << labels.status().to_string();
  EXPECT_EQ(*labels, (Labels{"__background__", "person", "bicycle"}));
}

TEST(LabelFile, BomCrlfSpacesAndTrailingNewlines) {
  auto labels = parse_labels("\xEF\xBB\xBF  person \r\ntraffic light\r\n\tN/A\r\n\r\n\n", "mem");
  ASSERT_TRUE(labels.is_ok()) << labels.status().to_string();
  EXPECT_EQ(*labels, (Labels{"person", "traffic light", "N/A"}));
  auto no_newline = parse_labels("a\nb", "mem");
  ASSERT_TRUE(no_newline.is_ok());
  EXPECT_EQ(no_newline->size(), 2u);
}

void expect_refused(const Result<Labels>& r, StatusCode code, const char* needle) {
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), code);
  EXPECT_NE(r.status().to_string().find(needle), std::string::npos) << r.status().to_string();
}

TEST(LabelFile, BadInputIsRefusedNamingFileAndLine) {
  expect_refused(read_label_file("/nonexistent/labels.txt"), StatusCode::kNotFound,
                 "/nonexistent/labels.txt");
  expect_refused(read_label_file(std::filesystem::temp_directory_path()), StatusCode::kInvalidArgument,
                 "is a directory");
  expect_refused(read_label_file(write_file("empty.txt", "")), StatusCode::kInvalidArgument, "no labels");
  expect_refused(parse_labels("\n \n\r\n", "blank.txt"), StatusCode::kInvalidArgument, "no labels");
  expect_refused(parse_labels("person\n\ncar\n", "gap.txt"), StatusCode::kInvalidArgument,
                 "gap.txt: line 2 is empty");
  expect_refused(parse_labels("\nperson\n", "lead.txt"), StatusCode::kInvalidArgument, "line 1 is empty");
  expect_refused(parse_labels(std::string("per\0son\n", 8), "bin.txt"), StatusCode::kCorruptData, "NUL byte");
  std::string many;
  for (std::size_t i = 0; i <= kMaxLabels; ++i) many += "x\n";
  expect_refused(parse_labels(many, "many.txt"), StatusCode::kInvalidArgument, "more than 100000 lines");
  expect_refused(parse_labels(std::string(kMaxLabelBytes + 1, 'x'), "huge.txt"), StatusCode::kInvalidArgument,
                 "bytes, more than");
}

TEST(LabelFile, CountMismatchNamesBothCounts) {
  EXPECT_TRUE(check_label_count(91, 91, "coco.txt", "ssd300.onnx").is_ok());
  const Status s = check_label_count(80, 91, "coco80.txt", "ssd300.onnx");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.to_string().find("label file coco80.txt has 80 labels, model ssd300.onnx has 91 classes"),
            std::string::npos)
      << s.to_string();
}

}  // namespace
}  // namespace fovea::post
