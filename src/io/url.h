// What a source's address says about it, before anything is opened.
#pragma once

#include <string_view>

namespace fovea::io {

// A URL with a scheme other than file:// (rtsp://, http://, udp://, ...): a stream read over the
// network, which may stall, drop and come back; a plain path or file:// is a local file.
bool is_network_url(std::string_view url);

// The file a local address names: the path after "file://" or "file:" (FFmpeg's file protocol
// takes both), else the address itself.
std::string_view local_path(std::string_view url);

}  // namespace fovea::io
