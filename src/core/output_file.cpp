#include "core/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <system_error>
#include <utility>

#include <fmt/format.h>

namespace fovea {
namespace {

bool is_url(std::string_view input) {
  return input.find("://") != std::string_view::npos;
}

// "report /x/r.json: reason"
Status io_error(const std::string& what, const std::filesystem::path& path, std::string_view reason) {
  return make_error(StatusCode::kIoError, fmt::format("{} {}: {}", what, path.string(), reason));
}

}  // namespace

std::filesystem::path partial_path(const std::filesystem::path& path) {
  const std::string suffix = fmt::format(".fovea-{}.partial", static_cast<long>(::getpid()));
  std::string name = path.filename().string();
  // A file name has at most 255 bytes (NAME_MAX): the partial name of a long output name is its
  // beginning and a hash of the whole, so an output name that fits still gets written.
  constexpr std::size_t kMaxName = 255;
  if (name.size() + suffix.size() > kMaxName) {
    const std::string hash = fmt::format("-{:016x}", std::hash<std::string>{}(name));
    name = name.substr(0, kMaxName - suffix.size() - hash.size()) + hash;
  }
  return path.parent_path() / (name + suffix);
}

PendingFile::PendingFile(std::filesystem::path path)
    : path_(std::move(path)), partial_(partial_path(path_)) {}

PendingFile::~PendingFile() {
  discard();
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : path_(std::move(other.path_)), partial_(std::move(other.partial_)), pending_(other.pending_) {
  other.pending_ = false;
}

PendingFile& PendingFile::operator=(PendingFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    partial_ = std::move(other.partial_);
    pending_ = std::exchange(other.pending_, false);
  }
  return *this;
}

Status PendingFile::commit() {
  if (!pending_) {
    return make_error(StatusCode::kInternal, path_.string(), ": committed or discarded already");
  }
  std::error_code error;
  std::filesystem::rename(partial_, path_, error);
  if (error) {
    return make_error(StatusCode::kIoError, path_.string(), ": cannot move the finished file into place (",
                      partial_.string(), "): ", error.message());
  }
  pending_ = false;
  return Status::ok();
}

void PendingFile::discard() {
  if (pending_) {
    std::error_code ignored;  // nothing to remove when the file was never created
    std::filesystem::remove(partial_, ignored);
    pending_ = false;
  }
}

Status write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                             std::string_view what) {
  if (path.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
      return io_error(std::string(what), path, "cannot create its folder: " + error.message());
    }
  }
  PendingFile file(path);
  {
    errno = 0;
    std::ofstream out(file.partial(), std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      // The stream keeps no reason; the failed open, write or close left it in errno ("No space
      // left on device", "File name too long").
      const int error = errno;
      return io_error(
          std::string(what), path,
          error != 0 ? fmt::format("cannot write it: {}", std::strerror(error)) : "cannot write it");
    }
  }
  const Status committed = file.commit();
  return committed.is_ok() ? committed : committed.with_context(what);
}

namespace {

// The file `path` will name once the folders it needs exist: the folders that exist resolved (links
// followed), the rest taken as written ("new/../in.mp4" is "in.mp4": `new` is made as a folder). The
// path itself where even that fails.
std::filesystem::path resolved_path(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  return error ? path : resolved;
}

}  // namespace

Status check_not_an_input(const PlannedOutput& output, const std::vector<std::string>& inputs) {
  const std::filesystem::path path = resolved_path(output.path);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return Status::ok();  // a file that does not exist yet is no input
  }
  for (const std::string& input : inputs) {
    if (is_url(input)) continue;
    if (std::filesystem::equivalent(path, input, error)) {
      return make_error(
          StatusCode::kInvalidArgument,
          fmt::format("{} {} is the input {} (the same {}); fovea never overwrites its "
                      "inputs: choose another output",
                      output.what, output.path.string(), input, output.is_folder ? "folder" : "file"));
    }
  }
  return Status::ok();
}

Status check_distinct(const std::vector<PlannedOutput>& outputs) {
  std::map<std::filesystem::path, const PlannedOutput*> seen;
  for (const PlannedOutput& output : outputs) {
    const auto [it, inserted] = seen.emplace(resolved_path(output.path), &output);
    if (!inserted) {
      const PlannedOutput& first = *it->second;
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("{} {} and {} {} are the same {}: one would overwrite the other; give "
                                    "each its own path",
                                    first.what, first.path.string(), output.what, output.path.string(),
                                    output.is_folder ? "folder" : "file"));
    }
  }
  return Status::ok();
}

Status check_writable(const PlannedOutput& output) {
  const std::filesystem::path folder = output.is_folder ? output.path : output.path.parent_path();
  std::error_code error;
  if (!folder.empty()) {
    std::filesystem::create_directories(folder, error);
    if (error) {
      return io_error(output.what, output.path,
                      fmt::format("cannot create {}: {}", folder.string(), error.message()));
    }
  }
  if (output.is_folder && !std::filesystem::is_directory(output.path, error)) {
    return io_error(output.what, output.path, "is not a folder");
  }
  if (!output.is_folder && std::filesystem::is_directory(output.path, error)) {
    return io_error(output.what, output.path, "is a folder, not a file");
  }
  // The finished file is renamed into place, which would replace a device or a FIFO by a file.
  const std::filesystem::file_status existing = std::filesystem::status(output.path, error);
  if (!output.is_folder && std::filesystem::exists(existing) && !std::filesystem::is_regular_file(existing)) {
    return io_error(output.what, output.path,
                    "is not a regular file (a device, FIFO or socket): fovea writes its outputs as new files "
                    "and would replace it; give a file's path");
  }
  const std::filesystem::path probe =
      partial_path(output.is_folder ? output.path / ".fovea-check" : output.path);
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    if (!out) {
      return io_error(output.what, output.path,
                      fmt::format("cannot create a file in {}", folder.empty() ? "." : folder.string()));
    }
  }
  std::filesystem::remove(probe, error);
  return Status::ok();
}

Status check_outputs(const std::vector<PlannedOutput>& outputs, const std::vector<std::string>& inputs) {
  FOVEA_TRY(check_distinct(outputs));
  for (const PlannedOutput& output : outputs) {
    if (Status status = check_not_an_input(output, inputs); !status.is_ok()) return status;
  }
  for (const PlannedOutput& output : outputs) {
    if (Status status = check_writable(output); !status.is_ok()) return status;
  }
  return Status::ok();
}

}  // namespace fovea
