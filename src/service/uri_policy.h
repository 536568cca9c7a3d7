// Which source URIs `fovea serve` accepts over its HTTP API, and how URIs are shown back.
//
// A URI that POST /sources receives goes to FFmpeg, which opens far more than cameras and files:
// pipe: and fd: read the process's descriptors, concat:, subfile:, cache:, async:, crypto: and tee:
// wrap other URLs, data: carries its own bytes. An API client must not reach those, so a URI
// passes only with no scheme (a local path), file: or one of the network protocols a camera or a
// re-streamer speaks. The scheme is found as FFmpeg finds it (libavformat/avio.c: the longest
// prefix of letters, digits, '+', '-' and '.' followed by ':'; "subfile," opens subfile: too), so
// that what this check calls a path is what FFmpeg opens as a file.
//
// Cameras' URIs carry passwords (rtsp://admin:secret@camera/...); every URI the API returns, and
// every message that may quote one, is shown with the password replaced.
#pragma once

#include <string>
#include <string_view>

#include "core/log.h"
#include "core/status.h"

namespace fovea::service {

// ok, or kInvalidArgument naming the scheme and listing the allowed ones. Also refused: an empty
// URI, one longer than 4096 bytes, one with control characters.
Status check_source_uri(std::string_view uri);

// redact_uri (core/log.h) hides the passwords in URIs the API shows.
using fovea::redact_uri;

}  // namespace fovea::service
