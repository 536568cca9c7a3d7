// Output files that never destroy data.
//
// Every file fovea writes (videos, metadata, reports, traces, .npy tensors, engines) is written
// under a temporary name beside its final path and renamed into place only once complete, so
//   - a run that fails or is aborted never leaves a half-written file under the final name, and
//   - a previous good output stays until the new one replaces it whole (rename is atomic within
//     a folder, and it replaces the directory entry, never the old file's bytes: a hard link to
//     the old output keeps the old content).
// Before a run, commands check that no output resolves to one of their inputs (symbolic links,
// "." and hard links included) and that every output can be created, so a mistake costs nothing.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fovea {

// The temporary name `path` is written under: "<folder>/<name>.fovea-<pid>.partial". The process
// id keeps two runs writing the same output apart.
std::filesystem::path partial_path(const std::filesystem::path& path);

// One output in the making: its bytes go to partial(); commit() renames it to the final path.
// Destroyed uncommitted (an error, a failed finalization), it removes the partial file.
class PendingFile {
 public:
  explicit PendingFile(std::filesystem::path path);
  ~PendingFile();
  PendingFile(PendingFile&& other) noexcept;
  PendingFile& operator=(PendingFile&& other) noexcept;
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& partial() const { return partial_; }
  // Renames the partial file into place; an error names the final path.
  Status commit();
  // Removes the partial file (also what the destructor does when commit() never ran).
  void discard();

 private:
  std::filesystem::path path_;
  std::filesystem::path partial_;
  bool pending_ = true;
};

// Writes `bytes` to `path` through a PendingFile. Errors name `what` ("report", ...) and the path.
Status write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                             std::string_view what);

// An output about to be written, for the checks before a run: `what` names it for the user
// ("--report", "sinks.video.output_dir", "output") and `path` is where it goes. A folder output
// (is_folder) is checked as a folder that files will be created in.
struct PlannedOutput {
  std::string what;
  std::filesystem::path path;
  bool is_folder = false;
};

// Refuses an output that is one of `inputs` (the same file by st_dev/st_ino, so symbolic links,
// relative spellings and hard links all count). URLs (anything with "://") are not files and
// never match. kInvalidArgument names the output, the input and what to do.
Status check_not_an_input(const PlannedOutput& output, const std::vector<std::string>& inputs);

// Creates the output's folder (its parent, or itself for a folder output) and proves a file can be
// created there by creating and removing the output's partial file. kIoError names `what`, the
// path and the reason. Nothing existing is touched.
Status check_writable(const PlannedOutput& output);

// Refuses two outputs that name the same file or folder (after resolving links and "..").
Status check_distinct(const std::vector<PlannedOutput>& outputs);

// The three checks, distinct outputs first, then each output in order; the first failure is returned.
Status check_outputs(const std::vector<PlannedOutput>& outputs, const std::vector<std::string>& inputs);

}  // namespace fovea
