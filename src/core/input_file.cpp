#include "core/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace fovea {
namespace {

std::string_view kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

Result<std::uintmax_t> regular_file_size(const std::filesystem::path& path, std::string_view what,
                                         std::uintmax_t max_bytes) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    return make_error(error == ENOENT || error == ENOTDIR ? StatusCode::kNotFound : StatusCode::kIoError,
                      fmt::format("{} {}: {}", what, path.string(),
                                  error == ENOENT ? "no such file" : std::strerror(error)));
  }
  if (!S_ISREG(info.st_mode)) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("{} {}: is {}, not a file fovea can read",
                                                                what, path.string(), kind_of(info.st_mode)));
  }
  const auto size = static_cast<std::uintmax_t>(info.st_size);
  if (size > max_bytes) {
    return make_error(StatusCode::kResourceExhausted,
                      fmt::format("{} {}: {} bytes, more than the {} such a file may have", what,
                                  path.string(), size, max_bytes));
  }
  return size;
}

Result<std::string> read_regular_file(const std::filesystem::path& path, std::string_view what,
                                      std::uintmax_t max_bytes) {
  FOVEA_ASSIGN_OR_RETURN(const std::uintmax_t size, regular_file_size(path, what, max_bytes));
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return make_error(StatusCode::kIoError,
                      fmt::format("{} {}: cannot open: {}", what, path.string(), std::strerror(errno)));
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(size));
  // A file that shrank while it was read is short; one that grew is read up to its measured size.
  bytes.resize(static_cast<std::size_t>(file.gcount()));
  if (file.bad())
    return make_error(StatusCode::kIoError, fmt::format("{} {}: read failed", what, path.string()));
  return bytes;
}

}  // namespace fovea
