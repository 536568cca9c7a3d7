// Which image files an image source reads, in which order, and where their outputs go.
//
// Inputs (each one of):
//   - a folder: its image files; with `recursive`, those of its subfolders too. Symbolic links to
//     folders are followed, but a link back to a folder being listed (a loop) is reported and not
//     entered, so listing always ends.
//   - a glob (an input containing * ? or [ that names no existing file): POSIX glob(3) patterns,
//     no "**"; matches that are folders are left out.
//   - a list file (a file named *.txt, *.lst or *.list): one path per line, relative paths taken
//     from the list file's folder; empty lines and lines starting with '#' are skipped.
//   - any other file: that one image.
// Folder and glob listings keep files whose extension (any case) is an image's (.jpg .jpeg .png
// .bmp .webp); the others are counted in `ignored`. Files named one by one (list files, direct
// paths) are taken whatever their name: decoding tells what they are.
//
// The list is sorted by path, byte-wise (not by locale, so every machine agrees) with duplicates
// removed, so N processes given the same inputs split it identically with shard(). Entries that
// cannot be read (permissions, dangling links, link loops, not a regular file) are reported in
// `skipped` by name and reason and left out; an empty result is an error naming what was
// searched.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fovea::io {

struct ImageListOptions {
  bool recursive = false;
  // A folder a recursive listing does not enter (the flow's output folder, when it lies inside an
  // input folder: its pictures are the last run's outputs, not inputs). Empty: none.
  std::filesystem::path exclude;
};

struct ListedImage {
  std::filesystem::path path;      // as found: the input's spelling joined with the entry
  std::filesystem::path relative;  // below its input's root (folder, glob prefix, list file folder)
};

struct SkippedEntry {
  std::string path;
  std::string reason;
};

struct ImageList {
  std::vector<ListedImage> images;
  std::vector<SkippedEntry> skipped;       // unreadable: reported, not fatal
  std::size_t ignored = 0;                 // not an image by name (folder and glob listings)
  std::vector<std::string> ignored_names;  // the first kIgnoredNamed of them, to say which
};
inline constexpr std::size_t kIgnoredNamed = 5;

// Errors: kNotFound for an input that does not exist (and is no glob) or when nothing is found
// (the message names every input searched and whether folders were searched recursively);
// kIoError for a folder or list file that cannot be read at all.
Result<ImageList> list_images(const std::vector<std::string>& inputs, const ImageListOptions& options = {});

// `--shard i/N`: the i-th of N processes (0 <= i < N) takes every N-th image of the sorted list
// starting at the i-th, so the N shards are disjoint, cover the list and differ in size by one.
struct Shard {
  int index = 0;
  int count = 1;
};
// "i/N"; kInvalidArgument naming the text when it is not two integers with 0 <= i < N.
Result<Shard> parse_shard(std::string_view text);
std::vector<ListedImage> shard(const std::vector<ListedImage>& images, Shard which);

// Where the sink writes each image: `output_dir` / relative path with its extension replaced by
// `extension` (".png"), so the output tree mirrors the input tree. kInvalidArgument when two
// inputs map to one output (a.jpg and a.png both to a.png), naming both.
Result<std::vector<std::filesystem::path>> mirrored_output_paths(const std::vector<ListedImage>& images,
                                                                 const std::filesystem::path& output_dir,
                                                                 std::string_view extension);

}  // namespace fovea::io
