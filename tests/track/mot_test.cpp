// The MOTChallenge text format: round trip and bad input.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "track/mot.h"

namespace fovea::track {
namespace {

TEST(Mot, RoundTripsThroughAFile) {
  // Frames 1 and 3 have objects, frame 2 is empty; ground-truth lines have class and visibility
  // after conf, which are ignored.
  const std::string text =
      "1,1,10,20,30,40,1,1,1.0\n"
      "1,2,100.5,200.25,30,40,0.5,-1,-1,-1\n"
      "\n"
      "3,1,12,20,30,40,1,1,0.8\r\n";
  Result<MotSequence> s = parse_mot(text, "gt.txt");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->frames.size(), 3u);
  EXPECT_EQ(s->frames[0].size(), 2u);
  EXPECT_TRUE(s->frames[1].empty());
  EXPECT_EQ(s->frames[2][0].id, 1);
  EXPECT_FLOAT_EQ(s->frames[0][1].box.x2, 130.5f);
  EXPECT_FLOAT_EQ(s->frames[0][1].box.y2, 240.25f);
  EXPECT_FLOAT_EQ(s->frames[0][1].confidence, 0.5f);

  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / "fovea_mot_roundtrip.txt";
  ASSERT_TRUE(write_mot(path, *s).is_ok());
  Result<MotSequence> back = read_mot(path);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(format_mot(*back), format_mot(*s));
  EXPECT_EQ(format_mot(*s).substr(0, 26), "1,1,10,20,30,40,1,-1,-1,-1");
  std::filesystem::remove(path);
}

void expect_refused(const std::string& text, const std::string& fragment) {
  Result<MotSequence> s = parse_mot(text, "bad.txt");
  ASSERT_FALSE(s.is_ok()) << text;
  EXPECT_EQ(s.status().code(), StatusCode::kCorruptData);
  EXPECT_NE(s.status().message().find(fragment), std::string::npos) << s.status().message();
}

TEST(Mot, BadLinesNameTheFileLineAndField) {
  expect_refused("1,1,10,20,30,40,1\n1,2,10,20,30\n", "bad.txt:2: 5 fields");
  expect_refused("1,1,10,twenty,30,40,1\n", "bad.txt:1: field bb_top 'twenty'");
  expect_refused("1,1,10,20,30,40,nan\n", "field conf 'nan'");
  expect_refused("0,1,10,20,30,40,1\n", "frame 0");
  expect_refused("1.5,1,10,20,30,40,1\n", "frame 1.5");
  expect_refused("1,1.5,10,20,30,40,1\n", "id 1.5");
  expect_refused("1,1,10,20,-30,40,1\n", "negative bb_width");
  expect_refused("2,7,10,20,30,40,1\n2,7,50,20,30,40,1\n", "bad.txt:2: id 7 appears twice in frame 2");
}

TEST(Mot, EmptyTextIsAnEmptySequenceAndAMissingFileIsNotFound) {
  Result<MotSequence> s = parse_mot("", "empty.txt");
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(s->frames.empty());
  Result<MotSequence> missing = read_mot("/nonexistent/fovea/gt.txt");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/fovea/gt.txt"), std::string::npos);
}

}  // namespace
}  // namespace fovea::track
