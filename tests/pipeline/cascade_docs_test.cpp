// The cascade example of the README and of docs/config.md: the same file in both, a configuration
// fovea accepts, and the cascade's stages (detect, track, classify with both secondary models, osd).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "pipeline/config.h"

namespace fovea::pipeline {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The first ```yaml block after `marker` in the file; empty (and a failure) when there is none.
std::string yaml_after(const std::string& file, const std::string& marker) {
  const std::string text = read_text(std::filesystem::path(FOVEA_SOURCE_DIR) / file);
  const std::string fence = "```yaml\n";
  const std::size_t at = text.find(marker);
  const std::size_t begin = at == std::string::npos ? at : text.find(fence, at);
  EXPECT_NE(begin, std::string::npos) << file << " has no ```yaml block after \"" << marker << "\"";
  if (begin == std::string::npos) return {};
  const std::size_t end = text.find("```", begin + fence.size());
  return text.substr(begin + fence.size(), end - begin - fence.size());
}

TEST(CascadeExample, TheReadmeAndTheSchemaShowTheSameCascade) {
  const std::string readme = yaml_after("README.md", "A cascade for `fovea run`");
  const std::string schema = yaml_after("docs/config.md", "## A cascade example");
  EXPECT_EQ(readme, schema);
  Result<PipelineConfig> config = parse_config(schema, "docs/config.md");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(stages_of(*config), (std::vector<StageKind>{StageKind::kDetect, StageKind::kTrack,
                                                        StageKind::kClassify, StageKind::kOsd}));
  ASSERT_EQ(config->secondary.size(), 2u);
  EXPECT_EQ(config->secondary[1].model, "type");
  EXPECT_EQ(config->detect.interval, 2);
}

}  // namespace
}  // namespace fovea::pipeline
