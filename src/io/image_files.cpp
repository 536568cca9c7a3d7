#include "io/image_files.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/input_file.h"

namespace fovea::io {
namespace fs = std::filesystem;
namespace {

constexpr std::array<std::string_view, 5> kImageExtensions = {".jpg", ".jpeg", ".png", ".bmp", ".webp"};
constexpr std::array<std::string_view, 3> kListFileExtensions = {".txt", ".lst", ".list"};

std::string lower_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

template <std::size_t N>
bool has_extension(const fs::path& path, const std::array<std::string_view, N>& extensions) {
  const std::string ext = lower_extension(path);
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

bool is_glob(std::string_view input) {
  return input.find_first_of("*?[") != std::string_view::npos;
}

struct FolderId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FolderId&) const = default;
};

// Why stat() failed, in words: a link loop and a dangling link are named as such.
std::string stat_failure(const fs::path& path, int error_number) {
  struct stat link {};
  const bool is_link = ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  if (error_number == ELOOP) return "symbolic link loop (too many levels of links)";
  if (is_link && error_number == ENOENT) return "dangling symbolic link (its target does not exist)";
  return std::strerror(error_number);
}

// glob(3)'s error callback has no user pointer; the lister that runs glob() on this thread
// collects the folders it could not read.
thread_local std::vector<SkippedEntry>* t_glob_errors = nullptr;

int record_glob_error(const char* path, int error_number) {
  t_glob_errors->push_back({path, std::strerror(error_number)});
  return 0;  // go on with the other folders
}

class GlobResult {
 public:
  GlobResult() = default;
  ~GlobResult() { globfree(&result); }
  GlobResult(const GlobResult&) = delete;
  GlobResult& operator=(const GlobResult&) = delete;
  glob_t result{};
};

// The folder a pattern's matches are relative to: its components before the first wildcard.
fs::path glob_root(const fs::path& pattern) {
  fs::path root;
  for (const fs::path& part : pattern.parent_path()) {
    if (is_glob(part.string())) break;
    root /= part;
  }
  return root;
}

class Lister {
 public:
  Lister(const ImageListOptions& options, ImageList* list)
      : options_(options), list_(list), excluded_(folder_id(options.exclude)) {}

  Status add_input(const std::string& input) {
    const fs::path path(input);
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
      if (errno == ENOENT && is_glob(input)) return add_glob(input);
      const StatusCode code = errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError;
      return make_error(code, fmt::format("{}: {}", input, stat_failure(path, errno)));
    }
    if (S_ISDIR(info.st_mode)) {
      std::vector<FolderId> ancestors{{info.st_dev, info.st_ino}};
      return walk(path, fs::path(), &ancestors, true);
    }
    if (S_ISREG(info.st_mode) && has_extension(path, kListFileExtensions)) return add_list_file(path);
    add_named_file(path, path.filename());
    return Status::ok();
  }

 private:
  void skip(const fs::path& path, std::string reason) {
    list_->skipped.push_back({path.string(), std::move(reason)});
  }

  // A file found by listing a folder or a glob: kept when its name is an image's.
  void add_found_file(const fs::path& path, const fs::path& relative) {
    if (!has_extension(path, kImageExtensions)) {
      if (++list_->ignored <= kIgnoredNamed) list_->ignored_names.push_back(path.string());
      return;
    }
    add_named_file(path, relative);
  }

  void add_named_file(const fs::path& path, const fs::path& relative) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return skip(path, stat_failure(path, errno));
    if (S_ISDIR(info.st_mode)) return skip(path, "a folder, not an image file");
    if (!S_ISREG(info.st_mode)) return skip(path, "not a regular file (a device, pipe or socket)");
    if (::access(path.c_str(), R_OK) != 0)
      return skip(path, fmt::format("cannot read it: {}", std::strerror(errno)));
    list_->images.push_back({path.lexically_normal(), relative.lexically_normal()});
  }

  Status walk(const fs::path& folder, const fs::path& relative, std::vector<FolderId>* ancestors, bool top) {
    std::error_code error;
    fs::directory_iterator it(folder, error);
    if (error) {
      if (top)
        return make_error(StatusCode::kIoError,
                          fmt::format("{}: cannot list the folder: {}", folder.string(), error.message()));
      skip(folder, "cannot list the folder: " + error.message());
      return Status::ok();
    }
    for (; it != fs::directory_iterator(); it.increment(error)) {
      if (error) {
        skip(folder, "listing stopped: " + error.message());
        break;
      }
      add_entry(it->path(), relative / it->path().filename(), ancestors);
    }
    return Status::ok();
  }

  void add_entry(const fs::path& path, const fs::path& relative, std::vector<FolderId>* ancestors) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return skip(path, stat_failure(path, errno));
    if (!S_ISDIR(info.st_mode)) return add_found_file(path, relative);
    if (!options_.recursive) return;  // subfolders of a flat listing are not images
    const FolderId id{info.st_dev, info.st_ino};
    if (excluded_ && *excluded_ == id) return;
    if (std::find(ancestors->begin(), ancestors->end(), id) != ancestors->end()) {
      return skip(path, "symbolic link loop (leads back to a folder being listed); not entered");
    }
    ancestors->push_back(id);
    (void)walk(path, relative, ancestors, false);  // below the top, failures are skipped entries
    ancestors->pop_back();
  }

  Status add_glob(const std::string& pattern) {
    GlobResult matches;
    t_glob_errors = &list_->skipped;
    const int result = ::glob(pattern.c_str(), 0, record_glob_error, &matches.result);
    t_glob_errors = nullptr;
    if (result == GLOB_NOMATCH) return Status::ok();
    if (result != 0)
      return make_error(StatusCode::kIoError, fmt::format("{}: glob failed ({})", pattern, result));
    const fs::path root = glob_root(pattern);
    for (std::size_t i = 0; i < matches.result.gl_pathc; ++i) {
      const fs::path match(matches.result.gl_pathv[i]);
      struct stat info {};
      if (::stat(match.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) continue;
      add_found_file(match, match.lexically_relative(root));
    }
    return Status::ok();
  }

  Status add_list_file(const fs::path& list_file) {
    // Not a FIFO or a device, whose reading would block or never end.
    FOVEA_TRY(regular_file_size(list_file, "list file").status());
    std::ifstream in(list_file);
    if (!in) {
      return make_error(StatusCode::kIoError, fmt::format("{}: cannot read the list file: {}",
                                                          list_file.string(), std::strerror(errno)));
    }
    std::string line;
    while (std::getline(in, line)) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      const auto last = line.find_last_not_of(" \t\r");
      const fs::path entry(line.substr(first, last - first + 1));
      const fs::path relative = entry.lexically_normal();
      const bool stays_below = entry.is_relative() && !relative.empty() && *relative.begin() != "..";
      add_named_file(entry.is_absolute() ? entry : list_file.parent_path() / entry,
                     stays_below ? relative : entry.filename());
    }
    return Status::ok();
  }

  // The folder options.exclude names, when it exists.
  static std::optional<FolderId> folder_id(const fs::path& folder) {
    struct stat info {};
    if (folder.empty() || ::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return std::nullopt;
    return FolderId{info.st_dev, info.st_ino};
  }

  const ImageListOptions& options_;
  ImageList* list_;
  std::optional<FolderId> excluded_;
};

std::string describe_search(const std::vector<std::string>& inputs, const ImageListOptions& options,
                            const ImageList& list) {
  std::string text = fmt::format("no image files found in {}", fmt::join(inputs, ", "));
  text += options.recursive ? " (folders searched recursively)" : " (folders not searched recursively)";
  text += fmt::format("; image files are named {}", fmt::join(kImageExtensions, " "));
  if (list.ignored > 0) text += fmt::format("; {} other file(s) ignored", list.ignored);
  if (!list.skipped.empty()) {
    text += fmt::format("; {} unreadable, the first {}: {}", list.skipped.size(), list.skipped[0].path,
                        list.skipped[0].reason);
  }
  return text;
}

}  // namespace

Result<ImageList> list_images(const std::vector<std::string>& inputs, const ImageListOptions& options) {
  ImageList list;
  Lister lister(options, &list);
  for (const std::string& input : inputs) {
    const std::size_t before = list.images.size();
    FOVEA_TRY(lister.add_input(input));
    // Beside inputs that have images, one that adds none (an empty folder, a glob that matches
    // nothing: often a typo) is named as a skipped entry, so the run says so and exits 3; alone, it
    // is the error below.
    if (list.images.size() == before && inputs.size() > 1) {
      list.skipped.push_back(
          {input, "no image files in it (a folder without images, or a glob that matches none)"});
    }
  }
  std::sort(list.images.begin(), list.images.end(),
            [](const ListedImage& a, const ListedImage& b) { return a.path.native() < b.path.native(); });
  list.images.erase(std::unique(list.images.begin(), list.images.end(),
                                [](const ListedImage& a, const ListedImage& b) { return a.path == b.path; }),
                    list.images.end());
  if (list.images.empty()) return make_error(StatusCode::kNotFound, describe_search(inputs, options, list));
  return list;
}

Result<Shard> parse_shard(std::string_view text) {
  Shard shard;
  const auto slash = text.find('/');
  const auto parse = [](std::string_view part, int* value) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), *value);
    return error == std::errc() && end == part.data() + part.size() && !part.empty();
  };
  if (slash == std::string_view::npos || !parse(text.substr(0, slash), &shard.index) ||
      !parse(text.substr(slash + 1), &shard.count) || shard.count < 1 || shard.index < 0 ||
      shard.index >= shard.count) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("shard '{}' is not i/N with 0 <= i < N (e.g. 0/4 .. 3/4)", text));
  }
  return shard;
}

std::vector<ListedImage> shard(const std::vector<ListedImage>& images, Shard which) {
  std::vector<ListedImage> part;
  for (std::size_t i = static_cast<std::size_t>(which.index); i < images.size();
       i += static_cast<std::size_t>(which.count)) {
    part.push_back(images[i]);
  }
  return part;
}

Result<std::vector<fs::path>> mirrored_output_paths(const std::vector<ListedImage>& images,
                                                    const fs::path& output_dir, std::string_view extension) {
  constexpr std::size_t kCollisionsNamed = 10;
  std::vector<fs::path> outputs;
  std::unordered_map<std::string, std::size_t> owner;
  std::vector<std::string> collisions;
  for (std::size_t i = 0; i < images.size(); ++i) {
    fs::path out = output_dir / images[i].relative;
    out.replace_extension(extension);
    const auto [it, inserted] = owner.emplace(out.string(), i);
    if (!inserted) {
      collisions.push_back(fmt::format("{} and {} would both be written to {}",
                                       images[it->second].path.string(), images[i].path.string(),
                                       out.string()));
    }
    outputs.push_back(std::move(out));
  }
  if (collisions.empty()) return outputs;
  const std::size_t more = collisions.size() > kCollisionsNamed ? collisions.size() - kCollisionsNamed : 0;
  collisions.resize(std::min(collisions.size(), kCollisionsNamed));
  return make_error(
      StatusCode::kInvalidArgument,
      fmt::format("{}{}; outputs mirror each image's path below the folder it was found in (a "
                  "file given by name lands at the top): rename one of each pair, or give "
                  "their folders or a list file of relative paths, whose folders are mirrored",
                  fmt::join(collisions, "; "), more > 0 ? fmt::format("; and {} more", more) : ""));
}

}  // namespace fovea::io
