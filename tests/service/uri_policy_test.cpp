#include "service/uri_policy.h"

#include <string>

#include <gtest/gtest.h>

namespace fovea::service {
namespace {

TEST(UriPolicy, AllowsLocalPathsAndCameraProtocols) {
  for (const char* uri :
       {"clip.mp4", "/data/clips/a b.mp4", "./x:y.mp4", "file:/data/clip.mp4", "file:///data/clip.mp4",
        "rtsp://camera/stream", "RTSP://camera/stream", "rtsps://user:pw@camera:322/s",
        "rtmp://host/live/key", "rtmps://host/live", "http://host/live.m3u8", "https://host/a.mp4",
        "srt://host:9000?mode=caller", "udp://239.0.0.1:1234", "tcp://host:5000"}) {
    EXPECT_TRUE(check_source_uri(uri).is_ok()) << uri << ": " << check_source_uri(uri).message();
  }
}

// FFmpeg's wrapping and local-descriptor protocols, and anything unknown, stay closed.
TEST(UriPolicy, RefusesOtherSchemesNamingThemAndTheAllowedOnes) {
  for (const std::string_view scheme :
       {"pipe", "fd", "concat", "subfile", "data", "crypto", "tee", "async", "cache", "gopher", "ftp",
        "crypto+http", "hls+http", "x-unknown", "1"}) {
    const Status status = check_source_uri(std::string(scheme).append(":something"));
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << scheme;
    EXPECT_NE(status.message().find(std::string("\"").append(scheme).append(":\"")), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("rtsp:, rtsps:"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("local paths"), std::string::npos) << status.message();
  }
}

TEST(UriPolicy, RefusesWhatFfmpegWouldOpenAsAProtocolDespiteNoScheme) {
  // avio.c opens "subfile," with its subfile protocol; ":x" has an empty scheme.
  EXPECT_EQ(check_source_uri("subfile,,start,0,end,100,:/etc/passwd").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_source_uri(":x").code(), StatusCode::kInvalidArgument);
}

TEST(UriPolicy, RefusesEmptyOverlongAndControlCharacters) {
  EXPECT_EQ(check_source_uri("").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(check_source_uri("rtsp://h/" + std::string(4096 - 9, 'a')).is_ok());
  const Status long_uri = check_source_uri("rtsp://h/" + std::string(4096 - 8, 'a'));
  EXPECT_EQ(long_uri.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(long_uri.message().find("4097 bytes"), std::string::npos) << long_uri.message();
  for (const std::string& uri : {std::string("rtsp://h/a\nb"), std::string("clip\r.mp4"),
                                 std::string("a\0b", 3), std::string("rtsp://h/\x7f")}) {
    EXPECT_EQ(check_source_uri(uri).code(), StatusCode::kInvalidArgument) << uri;
  }
}

TEST(UriPolicy, RefusalRedactsThePassword) {
  const Status status = check_source_uri("gopher://user:secret@host/");
  EXPECT_EQ(status.message().find("secret"), std::string::npos) << status.message();
}

TEST(UriPolicy, RedactsPasswords) {
  EXPECT_EQ(redact_uri("rtsp://user:secret@host/stream"), "rtsp://user:***@host/stream");
  EXPECT_EQ(redact_uri("rtsp://user:secret@host:554"), "rtsp://user:***@host:554");
  EXPECT_EQ(redact_uri("rtsp://:secret@host"), "rtsp://:***@host");
  EXPECT_EQ(redact_uri("rtsp://user:p@ss@host/x?y=@"), "rtsp://user:***@host/x?y=@");
  EXPECT_EQ(redact_uri("a rtsp://u:p1@h1/x and rtsp://u:p2@h2: connection refused"),
            "a rtsp://u:***@h1/x and rtsp://u:***@h2: connection refused");
}

TEST(UriPolicy, LeavesUrisWithoutPasswordsAlone) {
  for (const char* text : {"rtsp://host/stream", "rtsp://user@host/stream", "rtsp://user:@host/s",
                           "rtsp://host:554/s@x", "file:///data/a@b.mp4", "clip.mp4", "", "://", "a://b:c",
                           "http://host/?q=a:b@c", "rtsp://h/#u:p@x"}) {
    EXPECT_EQ(redact_uri(text), text);
  }
}

}  // namespace
}  // namespace fovea::service
