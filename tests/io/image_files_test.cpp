// Listing image collections: folders (flat and recursive), globs, list files, sharding, symbolic
// link loops, unreadable entries, empty results, and output paths that mirror the input tree.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "io/image_files.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {
namespace fs = std::filesystem;

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x";
}

std::vector<std::string> relatives(const ImageList& list) {
  std::vector<std::string> out;
  for (const ListedImage& image : list.images) out.push_back(image.relative.string());
  return out;
}

std::string reason_for(const ImageList& list, const std::string& name) {
  for (const SkippedEntry& entry : list.skipped) {
    if (fs::path(entry.path).filename() == name) return entry.reason;
  }
  return "";
}

// photos/ b.jpg a.PNG notes.txt sub/c.webp sub/deeper/d.bmp sub/up -> .. (a loop)
// dangling.jpg -> missing.jpg, self.jpg -> self.jpg
fs::path make_tree() {
  const fs::path root = fs::path(fovea::testing::test_temp_dir()) / "photos";
  touch(root / "b.jpg");
  touch(root / "a.PNG");
  touch(root / "notes.txt");
  touch(root / "sub" / "c.webp");
  touch(root / "sub" / "deeper" / "d.bmp");
  fs::create_directory_symlink("..", root / "sub" / "up");
  fs::create_symlink("missing.jpg", root / "dangling.jpg");
  fs::create_symlink("self.jpg", root / "self.jpg");
  return root;
}

TEST(ImageFiles, FlatFolderSortedWithReasons) {
  const fs::path root = make_tree();
  Result<ImageList> list = list_images({root.string()});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(relatives(*list), (std::vector<std::string>{"a.PNG", "b.jpg"}));  // byte order: 'a' < 'b'
  EXPECT_EQ(list->images[0].path, root / "a.PNG");
  EXPECT_EQ(list->ignored, 1u);  // notes.txt
  ASSERT_EQ(list->ignored_names.size(), 1u);
  EXPECT_NE(list->ignored_names[0].find("notes.txt"), std::string::npos);
  EXPECT_NE(reason_for(*list, "dangling.jpg").find("dangling symbolic link"), std::string::npos);
  EXPECT_NE(reason_for(*list, "self.jpg").find("symbolic link loop"), std::string::npos);
}

TEST(ImageFiles, RecursiveFolderStopsAtLinkLoops) {
  const fs::path root = make_tree();
  Result<ImageList> list = list_images({root.string()}, {.recursive = true});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(relatives(*list), (std::vector<std::string>{"a.PNG", "b.jpg", "sub/c.webp", "sub/deeper/d.bmp"}));
  EXPECT_NE(reason_for(*list, "up").find("symbolic link loop"), std::string::npos);
  // The same inputs list the same way every time.
  Result<ImageList> again = list_images({root.string()}, {.recursive = true});
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(relatives(*again), relatives(*list));
}

// The flow's output folder inside an input tree is not listed (its files are the last run's
// pictures), however it is spelled.
TEST(ImageFiles, AnExcludedFolderIsNotEntered) {
  const fs::path root = make_tree();
  Result<ImageList> list =
      list_images({root.string()}, {.recursive = true, .exclude = root / "sub" / ".." / "sub"});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(relatives(*list), (std::vector<std::string>{"a.PNG", "b.jpg"}));
}

// An input that adds no image beside others that do is named, not ignored: likely a typo.
TEST(ImageFiles, AnInputWithoutImagesBesideOthersIsNamed) {
  const fs::path root = make_tree();
  const fs::path empty = root.parent_path() / "empty";
  fs::create_directories(empty);
  const std::string no_match = (root / "*.tiff").string();
  Result<ImageList> list = list_images({root.string(), empty.string(), no_match});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(relatives(*list), (std::vector<std::string>{"a.PNG", "b.jpg"}));
  std::vector<std::string> named;
  for (const SkippedEntry& entry : list->skipped) {
    if (entry.reason.find("no image files in it") != std::string::npos) named.push_back(entry.path);
  }
  EXPECT_EQ(named, (std::vector<std::string>{empty.string(), no_match}));
}

TEST(ImageFiles, GlobAndDuplicates) {
  const fs::path root = make_tree();
  Result<ImageList> list =
      list_images({(root / "sub" / "*").string(), (root / "*.jpg").string(), (root / "b.jpg").string()});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  // sub/deeper is a folder (left out); b.jpg named twice is listed once.
  ASSERT_EQ(list->images.size(), 2u);
  EXPECT_EQ(list->images[0].path, root / "b.jpg");
  EXPECT_EQ(list->images[1].path, root / "sub" / "c.webp");
  EXPECT_EQ(list->images[1].relative, "c.webp");
}

TEST(ImageFiles, ListFile) {
  const fs::path root = make_tree();
  const fs::path list_file = root / "batch.txt";
  std::ofstream(list_file) << "# chosen images\n"
                           << "sub/c.webp\r\n"
                           << "\n"
                           << "  b.jpg  \n"
                           << (root / "sub" / "deeper" / "d.bmp").string() << "\n"
                           << "gone.jpg\n";
  Result<ImageList> list = list_images({list_file.string()});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(relatives(*list), (std::vector<std::string>{"b.jpg", "sub/c.webp", "d.bmp"}));
  EXPECT_NE(reason_for(*list, "gone.jpg").find("No such file"), std::string::npos);
}

TEST(ImageFiles, UnreadableFileIsSkippedByName) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root reads every file; the dangling and looping links cover this path";
  const fs::path root = make_tree();
  ASSERT_EQ(::chmod((root / "b.jpg").c_str(), 0), 0);
  Result<ImageList> list = list_images({root.string()});
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(relatives(*list), (std::vector<std::string>{"a.PNG"}));
  EXPECT_NE(reason_for(*list, "b.jpg").find("Permission denied"), std::string::npos);
}

TEST(ImageFiles, EmptyAndMissingAreErrors) {
  const fs::path empty = fs::path(fovea::testing::test_temp_dir()) / "empty";
  fs::create_directories(empty);
  touch(empty / "readme.md");
  Result<ImageList> list = list_images({empty.string()}, {.recursive = true});
  ASSERT_FALSE(list.is_ok());
  EXPECT_EQ(list.status().code(), StatusCode::kNotFound);
  EXPECT_NE(list.status().message().find(empty.string()), std::string::npos) << list.status().to_string();
  EXPECT_NE(list.status().message().find("recursively"), std::string::npos) << list.status().to_string();
  EXPECT_NE(list.status().message().find("1 other file"), std::string::npos) << list.status().to_string();

  const std::string glob = (empty / "*.jpg").string();
  EXPECT_EQ(list_images({glob}).status().code(), StatusCode::kNotFound);
  const std::string missing = (empty / "nope").string();
  const Result<ImageList> none = list_images({missing});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find(missing), std::string::npos);
}

TEST(ImageFiles, ShardsSplitTheList) {
  std::vector<ListedImage> images;
  for (int i = 0; i < 10; ++i) images.push_back({std::to_string(i), std::to_string(i)});
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    Result<Shard> which = parse_shard(std::to_string(i) + "/3");
    ASSERT_TRUE(which.is_ok());
    const std::vector<ListedImage> part = shard(images, *which);
    EXPECT_EQ(part.size(), i == 0 ? 4u : 3u);
    for (std::size_t k = 0; k < part.size(); ++k) {
      EXPECT_EQ(part[k].path, std::to_string(i + 3 * static_cast<int>(k)));
      EXPECT_TRUE(seen.insert(part[k].path.string()).second);
    }
  }
  EXPECT_EQ(seen.size(), 10u);
  for (const char* bad : {"3/3", "-1/3", "1/0", "1", "a/b", "1/3x", "/3", ""}) {
    const Result<Shard> parsed = parse_shard(bad);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ImageFiles, MirroredOutputs) {
  const std::vector<ListedImage> images = {{"in/a.jpg", "a.jpg"}, {"in/sub/b.webp", "sub/b.webp"}};
  Result<std::vector<fs::path>> outputs = mirrored_output_paths(images, "out", ".png");
  ASSERT_TRUE(outputs.is_ok());
  EXPECT_EQ(*outputs, (std::vector<fs::path>{"out/a.png", "out/sub/b.png"}));
  const std::vector<ListedImage> clash = {{"in/a.jpg", "a.jpg"}, {"in/a.png", "a.png"}};
  const Result<std::vector<fs::path>> refused = mirrored_output_paths(clash, "out", ".png");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("in/a.jpg and in/a.png"), std::string::npos)
      << refused.status().to_string();
  // Every clash is named, up to ten, then counted.
  std::vector<ListedImage> many;
  for (int i = 0; i < 13; ++i) {
    many.push_back({fmt::format("in/{}.jpg", i), fmt::format("{}.jpg", i)});
    many.push_back({fmt::format("in/{}.png", i), fmt::format("{}.png", i)});
  }
  const Result<std::vector<fs::path>> all = mirrored_output_paths(many, "out", ".png");
  ASSERT_FALSE(all.is_ok());
  const std::string& message = all.status().message();
  EXPECT_NE(message.find("in/0.jpg and in/0.png"), std::string::npos) << message;
  EXPECT_NE(message.find("in/9.jpg and in/9.png"), std::string::npos) << message;
  EXPECT_EQ(message.find("in/10.jpg and"), std::string::npos) << message;
  EXPECT_NE(message.find("and 3 more"), std::string::npos) << message;
}

}  // namespace
}  // namespace fovea::io
