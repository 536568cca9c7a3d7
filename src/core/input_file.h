// Checks on a file a user named before fovea reads it. Only a regular file is read: a FIFO or a
// character device would block or stream without end (a hang, or memory that grows until the
// process dies), a directory cannot be read. And a file is measured before it is read whole, so a
// multi-gigabyte file named by mistake (a video where a model was meant) is refused at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fovea {

// The size of the regular file at `path` (symbolic links followed). Errors begin with `what` (the
// flag, key or kind of file: "--input x", "configuration") and the path: kNotFound when nothing is
// there, kInvalidArgument for a directory or anything that is not a regular file,
// kResourceExhausted when it is larger than `max_bytes`.
Result<std::uintmax_t> regular_file_size(const std::filesystem::path& path, std::string_view what,
                                         std::uintmax_t max_bytes = UINTMAX_MAX);

// The whole file as bytes, after regular_file_size's checks.
Result<std::string> read_regular_file(const std::filesystem::path& path, std::string_view what,
                                      std::uintmax_t max_bytes);

}  // namespace fovea
