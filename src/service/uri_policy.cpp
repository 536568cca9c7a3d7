#include "service/uri_policy.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace fovea::service {
namespace {

// Local files and the protocols of cameras, re-streamers and live encoders (issue 24's "live
// input"); everything else FFmpeg offers stays closed to API clients.
constexpr std::array<std::string_view, 10> kAllowedSchemes = {"file", "rtsp",  "rtsps", "rtmp", "rtmps",
                                                              "http", "https", "srt",   "udp",  "tcp"};

// A camera URI with a long query string stays well under this; it bounds what a client can make
// the flow keep per source.
constexpr std::size_t kMaxUriBytes = 4096;

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
}

bool is_control_char(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

Status refused_scheme(std::string_view uri, std::string_view scheme) {
  return make_error(StatusCode::kInvalidArgument, "source URI \"", redact_uri(uri), "\": the scheme \"",
                    scheme, ":\" is not allowed; allowed are local paths and ",
                    fmt::format("{}", fmt::join(kAllowedSchemes, ":, ")), ":");
}

}  // namespace

Status check_source_uri(std::string_view uri) {
  if (uri.empty()) return make_error(StatusCode::kInvalidArgument, "the source URI is empty");
  if (uri.size() > kMaxUriBytes) {
    return make_error(StatusCode::kInvalidArgument, "the source URI is ", std::to_string(uri.size()),
                      " bytes long; at most ", std::to_string(kMaxUriBytes), " are allowed");
  }
  if (std::any_of(uri.begin(), uri.end(), is_control_char)) {
    return make_error(StatusCode::kInvalidArgument, "the source URI contains control characters");
  }
  // FFmpeg opens "subfile,,start,N,end,M,:path" with its subfile protocol although no scheme
  // precedes the ':' (avio.c's url_find_protocol).
  if (uri.starts_with("subfile,")) return refused_scheme(uri, "subfile");
  const std::size_t scheme_length =
      static_cast<std::size_t>(std::find_if_not(uri.begin(), uri.end(), is_scheme_char) - uri.begin());
  if (scheme_length == uri.size() || uri[scheme_length] != ':') return Status::ok();  // a local path
  const std::string_view scheme = uri.substr(0, scheme_length);
  const bool allowed =
      std::find(kAllowedSchemes.begin(), kAllowedSchemes.end(), lowercase(scheme)) != kAllowedSchemes.end();
  return allowed ? Status::ok() : refused_scheme(uri, scheme);
}

}  // namespace fovea::service
