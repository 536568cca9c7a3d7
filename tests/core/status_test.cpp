#include "core/status.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/library_error.h"

namespace fovea {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) {
    return make_error(StatusCode::kInvalidArgument, "value ", std::to_string(value), " is not positive");
  }
  return value;
}

Result<int> doubled(int value) {
  FOVEA_ASSIGN_OR_RETURN(int parsed, parse_positive(value));
  return parsed * 2;
}

Status fails_through_library(int code) {
  FOVEA_LIBRARY_TRY(
      StatusCode::kDeviceError, "FakeLib", code, [](int c) { return c == 0; },
      [](int) { return "fake failure"; });
  return Status::ok();
}

TEST(Status, OkByDefault) {
  Status status;
  EXPECT_TRUE(status.is_ok());
  EXPECT_EQ(status.to_string(), "ok");
}

TEST(Status, CarriesCodeMessageAndContext) {
  Status status = make_error(StatusCode::kNotFound, "clip.mp4", ": no such file").with_context("source 3");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "source 3: clip.mp4: no such file");
  EXPECT_EQ(status.to_string(), "not found: source 3: clip.mp4: no such file");
}

TEST(Result, PropagatesThroughAssignOrReturn) {
  Result<int> good = doubled(21);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(good.value(), 42);
  Result<int> bad = doubled(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("-1"), std::string::npos);
}

TEST(LibraryError, NamesLibraryCallFileAndMessage) {
  EXPECT_TRUE(fails_through_library(0).is_ok());
  Status status = fails_through_library(7);
  EXPECT_EQ(status.code(), StatusCode::kDeviceError);
  const std::string& message = status.message();
  EXPECT_NE(message.find("FakeLib"), std::string::npos);
  EXPECT_NE(message.find("code"), std::string::npos);
  EXPECT_NE(message.find("status_test.cpp"), std::string::npos);
  EXPECT_NE(message.find("fake failure"), std::string::npos);
  EXPECT_NE(message.find("(code 7)"), std::string::npos);
}

TEST(CheckDeathTest, AbortsWithConditionText) {
  EXPECT_DEATH(
      {
        const int frames = 3;
        FOVEA_CHECK_MSG(frames == 4, "frame count invariant");
      },
      "frames == 4.*frame count invariant");
}

}  // namespace
}  // namespace fovea
