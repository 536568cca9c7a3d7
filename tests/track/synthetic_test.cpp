// The synthetic scenes: deterministic, consistent, and with the situations synthetic.h promises
// (entries and exits, occlusions, several speeds, noisy detections).
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "track/synthetic.h"

namespace fovea::track {
namespace {

SyntheticScene scene(std::uint32_t seed, int frames = 300) {
  SceneParams p;
  p.seed = seed;
  p.frames = frames;
  Result<SyntheticScene> s = generate_scene(p);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return std::move(s).value();
}

TEST(SyntheticScene, IsDeterministicFromItsSeed) {
  EXPECT_EQ(format_mot(truth_sequence(scene(3))), format_mot(truth_sequence(scene(3))));
  EXPECT_NE(format_mot(truth_sequence(scene(3))), format_mot(truth_sequence(scene(4))));
}

TEST(SyntheticScene, BoxesIdsAndVisibilityAreConsistent) {
  const SyntheticScene s = scene(1);
  ASSERT_EQ(s.frames.size(), 300u);
  std::map<std::int64_t, int> first_seen, last_seen;
  int occluded = 0;  // objects well inside the frame but partly hidden
  for (int f = 0; f < 300; ++f) {
    std::set<std::int64_t> ids;
    for (const TruthObject& o : s.frames[f]) {
      EXPECT_TRUE(ids.insert(o.id).second) << "id " << o.id << " twice in frame " << f;
      EXPECT_GE(o.box.x1, 0.0f);
      EXPECT_LE(o.box.x2, 1920.0f);
      EXPECT_GE(o.box.y1, 0.0f);
      EXPECT_LE(o.box.y2, 1080.0f);
      EXPECT_GT(o.box.x2, o.box.x1);
      EXPECT_GE(o.visibility, 0.25f);
      if (o.visibility < 0.9f && o.box.x1 > 0 && o.box.y1 > 0 && o.box.x2 < 1920 && o.box.y2 < 1080)
        ++occluded;
      first_seen.try_emplace(o.id, f);
      last_seen[o.id] = f;
    }
  }
  // Objects enter and leave: more identities than the 20 in view at once, some first seen after
  // frame 0 and some gone before the end; occlusions happen.
  EXPECT_GT(first_seen.size(), 20u);
  EXPECT_TRUE(std::any_of(first_seen.begin(), first_seen.end(), [](const auto& e) { return e.second > 0; }));
  EXPECT_TRUE(std::any_of(last_seen.begin(), last_seen.end(), [](const auto& e) { return e.second < 299; }));
  EXPECT_GT(occluded, 100);
}

TEST(SyntheticScene, OcclusionsLastUpToAboutASecond) {
  // Gaps in a trajectory (frames between two appearances of an id) are occlusions. Most last
  // less than a second; in a minute of the default scene the longest is 67 frames (a slow person
  // behind a slow car), so the bounds are a third of a second and three seconds.
  const SyntheticScene s = scene(1, 1800);
  std::map<std::int64_t, int> last_seen;
  int longest_gap = 0;
  for (int f = 0; f < 1800; ++f) {
    for (const TruthObject& o : s.frames[f]) {
      const auto it = last_seen.find(o.id);
      if (it != last_seen.end()) longest_gap = std::max(longest_gap, f - it->second - 1);
      last_seen[o.id] = f;
    }
  }
  EXPECT_GE(longest_gap, 10);
  EXPECT_LE(longest_gap, 90);
}

TEST(SyntheticScene, NoisyDetectionsMissJitterAndInvent) {
  const SyntheticScene s = scene(1);
  Result<std::vector<std::vector<Detection>>> noisy = noisy_detections(s, DetectionNoise{});
  ASSERT_TRUE(noisy.is_ok());
  Result<std::vector<std::vector<Detection>>> again = noisy_detections(s, DetectionNoise{});
  std::size_t truth = 0, detected = 0, low = 0;
  for (std::size_t f = 0; f < s.frames.size(); ++f) {
    truth += s.frames[f].size();
    detected += (*noisy)[f].size();
    ASSERT_EQ((*noisy)[f].size(), (*again)[f].size());
    for (const Detection& d : (*noisy)[f]) {
      EXPECT_GE(d.score, 0.05f);
      EXPECT_LE(d.score, 1.0f);
      if (d.score < 0.5f) ++low;
    }
  }
  // Misses (5% plus occlusion) outnumber the ~300 false positives; some detections score low.
  EXPECT_LT(detected, truth);
  EXPECT_GT(detected, truth * 8 / 10);
  EXPECT_GT(low, detected / 50);
  EXPECT_EQ(truth_detections(s)[0].size(), s.frames[0].size());
}

TEST(SyntheticScene, BadParametersAreNamed) {
  SceneParams p;
  p.frames = 0;
  Result<SyntheticScene> s = generate_scene(p);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("frames"), std::string::npos);
  p = SceneParams{};
  p.min_visibility = 0.0f;
  EXPECT_NE(generate_scene(p).status().message().find("min_visibility"), std::string::npos);
  DetectionNoise n;
  n.miss_rate = 1.5f;
  const SyntheticScene ok = scene(1, 10);
  EXPECT_NE(noisy_detections(ok, n).status().message().find("miss_rate"), std::string::npos);
}

}  // namespace
}  // namespace fovea::track
