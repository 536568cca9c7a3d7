// DESIGN.md's layout rule, checked: dependencies between the folders under src/ point one way,
//   core <- io, image, runtime <- post, track <- pipeline <- service <- apps;   trace depends on core
//   only, and runtime's executors record their nodes as trace ranges (trace/tracer.h), so runtime
//   may include trace (no cycle: trace includes nothing of runtime).
// The build alone does not enforce it (every library sees src/), so this test reads every source
// file's #include "folder/..." lines and names each one that breaks the rule.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace fovea {
namespace {

namespace fs = std::filesystem;

// Which src/ folders each folder may include from (itself included).
const std::map<std::string, std::set<std::string>>& allowed_includes() {
  static const std::map<std::string, std::set<std::string>> allowed = {
      {"core", {"core"}},
      {"trace", {"core", "trace"}},
      {"io", {"core", "io"}},
      {"image", {"core", "image"}},
      {"runtime", {"core", "trace", "runtime"}},
      {"post", {"core", "io", "image", "runtime", "post"}},
      {"track", {"core", "io", "image", "runtime", "post", "track"}},
      {"pipeline", {"core", "io", "image", "runtime", "post", "track", "trace", "pipeline"}},
      {"service", {"core", "io", "image", "runtime", "post", "track", "trace", "pipeline", "service"}},
  };
  return allowed;
}

bool is_source(const fs::path& path) {
  static const std::set<std::string> extensions = {".h", ".cpp", ".cu", ".cuh"};
  return extensions.count(path.extension().string()) > 0;
}

// The "folder/rest" of a line `#include "folder/rest"`; empty for any other line. (Plain string
// parsing: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers' -O1.)
std::pair<std::string, std::string> included_path(const std::string& line) {
  const std::size_t hash = line.find_first_not_of(" \t");
  if (hash == std::string::npos || line[hash] != '#') return {};
  const std::size_t word = line.find_first_not_of(" \t", hash + 1);
  if (word == std::string::npos || line.compare(word, 7, "include") != 0) return {};
  const std::size_t open = line.find('"', word + 7);
  const std::size_t close = open == std::string::npos ? open : line.find('"', open + 1);
  const std::size_t slash = open == std::string::npos ? open : line.find('/', open + 1);
  if (close == std::string::npos || slash == std::string::npos || slash > close) return {};
  return {line.substr(open + 1, slash - open - 1), line.substr(slash + 1, close - slash - 1)};
}

// "src/post/nms.cu:12: includes runtime/ops/nms_util.h (post may include core, ...)".
std::vector<std::string> violations_in(const fs::path& root, const std::string& folder,
                                       const std::set<std::string>& allowed) {
  std::vector<std::string> found;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root / "src" / folder)) {
    if (!entry.is_regular_file() || !is_source(entry.path())) continue;
    std::ifstream file(entry.path());
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
      const auto [target, rest] = included_path(line);
      if (allowed_includes().count(target) == 0 || allowed.count(target) > 0) continue;
      std::string rule;
      for (const std::string& a : allowed) rule += (rule.empty() ? "" : ", ") + a;
      found.push_back(fs::relative(entry.path(), root).string() + ":" + std::to_string(number) +
                      ": includes " + target + "/" + rest + " (" + folder + " may include " + rule + ")");
    }
  }
  return found;
}

TEST(IncludeMatrix, DependenciesBetweenFoldersPointOneWay) {
  const fs::path root = FOVEA_SOURCE_DIR;
  std::vector<std::string> violations;
  for (const auto& [folder, allowed] : allowed_includes()) {
    if (!fs::exists(root / "src" / folder)) continue;  // track/ comes with the trackers
    for (std::string& v : violations_in(root, folder, allowed)) violations.push_back(std::move(v));
  }
  std::string listed;
  for (const std::string& v : violations) listed += "\n  " + v;
  EXPECT_TRUE(violations.empty()) << violations.size() << " includes break DESIGN.md's layout:" << listed;
}

// Every folder under src/ has a row: a new library must say what it may depend on.
TEST(IncludeMatrix, EveryFolderHasARule) {
  const fs::path root = FOVEA_SOURCE_DIR;
  for (const fs::directory_entry& entry : fs::directory_iterator(root / "src")) {
    if (!entry.is_directory()) continue;
    EXPECT_EQ(allowed_includes().count(entry.path().filename().string()), 1u)
        << entry.path() << " has no row in the include matrix";
  }
}

}  // namespace
}  // namespace fovea
