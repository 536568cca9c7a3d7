// Track life (tracker.h's rules), per algorithm, on hand-made detections.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "track/tracker.h"

namespace fovea::track {
namespace {

std::unique_ptr<Tracker> make(TrackerKind kind) {
  Result<std::unique_ptr<Tracker>> t = Tracker::create(default_tracker_params(kind));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(t).value();
}

// A 40x100 box whose left edge is at x, moving 5 px per frame from x0 at frame f.
Detection walker(float x0, int f, int class_id = 0, float score = 0.9f) {
  const float x = x0 + 5.0f * static_cast<float>(f);
  return Detection{Box{x, 100, x + 40, 200}, class_id, score};
}

class EveryTracker : public testing::TestWithParam<TrackerKind> {};

INSTANTIATE_TEST_SUITE_P(Kinds, EveryTracker, testing::ValuesIn(all_tracker_kinds()),
                         [](const testing::TestParamInfo<TrackerKind>& param) {
                           return std::string(tracker_name(param.param));
                         });

TEST_P(EveryTracker, ConfirmsAfterMinHitsAndKeepsTheId) {
  auto tracker = make(GetParam());
  const int min_hits = tracker->params().min_hits;
  std::vector<TrackedObject> out;
  for (int f = 0; f < 50; ++f) {
    const Detection d[] = {walker(0, f), walker(600, f)};
    tracker->update(0, d, out);
    if (f + 1 < min_hits) {
      EXPECT_TRUE(out.empty()) << "frame " << f;
      continue;
    }
    ASSERT_EQ(out.size(), 2u) << "frame " << f;
    for (const TrackedObject& o : out) {
      ASSERT_TRUE(o.detection.has_value());
      EXPECT_EQ(o.track_id, *o.detection + 1);  // ids 1 and 2, in order of confirmation
      EXPECT_FALSE(o.predicted);
      EXPECT_EQ(o.hits, f + 1);
      EXPECT_EQ(o.age, f);
    }
  }
}

TEST_P(EveryTracker, TracksArePerClass) {
  // A person (class 0) and a car (class 1) on the same boxes: two tracks, each only ever given its
  // own class's detection (detection i has class i).
  auto tracker = make(GetParam());
  std::vector<TrackedObject> out;
  for (int f = 0; f < 10; ++f) {
    const Detection d[] = {walker(0, f, 0), walker(0, f, 1)};
    tracker->update(0, d, out);
    for (const TrackedObject& o : out) EXPECT_EQ(o.class_id, static_cast<int>(*o.detection));
  }
  EXPECT_EQ(out.size(), 2u);
}

TEST_P(EveryTracker, PredictedFramesCarryEveryTrackFlagged) {
  // Detector interval: after 10 detected frames, 3 frames without detections output the tracked
  // object with predicted boxes (moving on at 5 px/frame with a motion model, standing still
  // without), then detections resume and the id continues.
  auto tracker = make(GetParam());
  std::vector<TrackedObject> out;
  for (int f = 0; f < 10; ++f) {
    const Detection d[] = {walker(0, f)};
    tracker->update(0, d, out);
  }
  ASSERT_EQ(out.size(), 1u);
  const std::uint64_t id = out[0].track_id;
  for (int f = 10; f < 13; ++f) {
    tracker->predict(0, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].predicted);
    EXPECT_FALSE(out[0].detection.has_value());
    EXPECT_EQ(out[0].track_id, id);
    // The Kalman filter's velocity after 10 frames is within 10% of the true 5 px/frame (DeepSORT's
    // noise model trusts the measurements fast but not at once): 1.5 px after 3 frames.
    const float expected_x = GetParam() == TrackerKind::kIou ? walker(0, 9).box.x1 : walker(0, f).box.x1;
    EXPECT_NEAR(out[0].box.x1, expected_x, 1.5f) << "frame " << f;
  }
  // IOU, which did not move the box, finds the object again only near where it last saw it.
  const Detection d[] = {GetParam() == TrackerKind::kIou ? walker(0, 10) : walker(0, 13)};
  tracker->update(0, d, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].track_id, id);
}

TEST_P(EveryTracker, LostTracksAreRemovedAfterMaxAge) {
  auto tracker = make(GetParam());
  std::vector<TrackedObject> out;
  const Detection d[] = {walker(0, 0)};
  for (int f = 0; f < 5; ++f) tracker->update(0, d, out);
  ASSERT_EQ(tracker->track_count(0), 1u);
  // Lost from the first empty frame (not output), kept max_age frames, then removed.
  const int max_age = tracker->params().max_age;
  for (int f = 0; f < max_age; ++f) {
    tracker->update(0, {}, out);
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(tracker->track_count(0), 1u) << "empty frame " << f;
  }
  tracker->update(0, {}, out);
  EXPECT_EQ(tracker->track_count(0), 0u);
  // A new track gets the next id.
  for (int f = 0; f < 5; ++f) tracker->update(0, d, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].track_id, 2u);
}

TEST_P(EveryTracker, PredictedFramesNeverRemoveTracks) {
  auto tracker = make(GetParam());
  std::vector<TrackedObject> out;
  const Detection d[] = {walker(0, 0)};
  for (int f = 0; f < 5; ++f) tracker->update(0, d, out);
  for (int f = 0; f < 3 * tracker->params().max_age; ++f) tracker->predict(0, out);
  EXPECT_EQ(tracker->track_count(0), 1u);
  EXPECT_EQ(out.size(), 1u);
}

TEST_P(EveryTracker, TentativeTracksDieOnTheirFirstMiss) {
  auto tracker = make(GetParam());
  std::vector<TrackedObject> out;
  const Detection d[] = {walker(0, 0)};
  tracker->update(0, d, out);
  EXPECT_EQ(tracker->track_count(0), 1u);
  tracker->update(0, {}, out);
  EXPECT_EQ(tracker->track_count(0), 0u);
}

TEST_P(EveryTracker, SourcesAreIndependentAndResetKeepsIdsUnique) {
  auto tracker = make(GetParam());
  std::vector<std::vector<TrackedObject>> out;
  const Detection a[] = {walker(0, 0)};
  const Detection b[] = {walker(300, 0), walker(900, 0)};
  // One batch per step: source 7 and source 3, each with its own objects.
  for (int f = 0; f < 5; ++f) {
    const FrameDetections batch[] = {{7, true, a}, {3, true, b}};
    tracker->update(batch, out);
  }
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].size(), 1u);
  ASSERT_EQ(out[1].size(), 2u);
  EXPECT_EQ(out[0][0].track_id, 1u);  // ids count per source
  EXPECT_EQ(out[1][0].track_id, 1u);
  EXPECT_EQ(out[1][1].track_id, 2u);
  // Source 7 restarts: its tracks go, its next id is 2; source 3 is untouched.
  tracker->reset(7);
  EXPECT_EQ(tracker->track_count(7), 0u);
  EXPECT_EQ(tracker->track_count(3), 2u);
  for (int f = 0; f < 5; ++f) {
    const FrameDetections batch[] = {{7, true, a}, {3, false, {}}};
    tracker->update(batch, out);
  }
  ASSERT_EQ(out[0].size(), 1u);
  EXPECT_EQ(out[0][0].track_id, 2u);
  EXPECT_TRUE(out[1][0].predicted);
}

TEST_P(EveryTracker, DegenerateAndNonFiniteDetectionsAreIgnoredAndCounted) {
  auto tracker = make(GetParam());
  std::vector<TrackedObject> out;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Detection d[] = {{Box{10, 10, 10, 50}, 0, 0.9f},   // zero width
                         {Box{10, 10, 50, 10}, 0, 0.9f},   // zero height
                         {Box{nan, 10, 50, 50}, 0, 0.9f},  // NaN corner
                         {Box{10, 10, inf, 50}, 0, 0.9f},  // infinite corner
                         {Box{10, 10, 50, 50}, 0, nan},    // NaN score
                         {Box{60, 60, 20, 20}, 0, 0.9f},   // corners swapped
                         walker(500, 0)};
  for (int f = 0; f < 5; ++f) tracker->update(0, d, out);
  EXPECT_EQ(tracker->ignored_detections(), 30u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*out[0].detection, 6u);
}

TEST_P(EveryTracker, ThousandsOfObjectsAndBoxesOutsideTheFrame) {
  // 2000 objects on a grid, some past the frame's border (negative and beyond 1920): all tracked.
  auto tracker = make(GetParam());
  std::vector<Detection> d;
  for (int i = 0; i < 2000; ++i) {
    const float x = static_cast<float>(i % 50) * 50.0f - 100.0f,
                y = static_cast<float>(i / 50) * 50.0f - 100.0f;
    d.push_back({Box{x, y, x + 40, y + 40}, i % 3, 0.9f});
  }
  std::vector<TrackedObject> out;
  for (int f = 0; f < 4; ++f) tracker->update(0, d, out);
  EXPECT_EQ(out.size(), d.size());
}

TEST(ByteTrack, LowScoreDetectionsContinueTracksButStartNone) {
  // A tracked object whose score falls to 0.3 (ByteTrack's low-score range, below SORT's 0.5) keeps
  // its id with ByteTrack and is lost by SORT; a low-score detection alone starts nothing.
  for (const TrackerKind kind : {TrackerKind::kByteTrack, TrackerKind::kSort}) {
    auto tracker = make(kind);
    std::vector<TrackedObject> out;
    for (int f = 0; f < 5; ++f) {
      const Detection d[] = {walker(0, f)};
      tracker->update(0, d, out);
    }
    const Detection weak[] = {walker(0, 5, 0, 0.3f), walker(900, 5, 0, 0.3f)};
    tracker->update(0, weak, out);
    if (kind == TrackerKind::kByteTrack) {
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].track_id, 1u);
      EXPECT_FLOAT_EQ(out[0].score, 0.3f);
      EXPECT_EQ(tracker->track_count(0), 1u);
    } else {
      EXPECT_TRUE(out.empty());
    }
  }
}

TEST(ByteTrack, ReFindsALostTrackWhereItsMotionLeadsWithinTheBuffer) {
  // An object moving 5 px/frame is hidden for 20 frames (< the 30-frame buffer) and reappears
  // where it would be: same id. IOU, without motion, has lost it 100 px behind.
  for (const TrackerKind kind : {TrackerKind::kByteTrack, TrackerKind::kIou}) {
    auto tracker = make(kind);
    std::vector<TrackedObject> out;
    for (int f = 0; f < 10; ++f) {
      const Detection d[] = {walker(0, f)};
      tracker->update(0, d, out);
    }
    for (int f = 10; f < 30; ++f) tracker->update(0, {}, out);
    for (int f = 30; f < 34; ++f) {
      const Detection d[] = {walker(0, f)};
      tracker->update(0, d, out);
    }
    ASSERT_EQ(out.size(), 1u) << tracker_name(kind);
    EXPECT_EQ(out[0].track_id, kind == TrackerKind::kByteTrack ? 1u : 2u) << tracker_name(kind);
  }
}

TEST(TrackerNames, ParseAndList) {
  for (const TrackerKind kind : all_tracker_kinds()) {
    Result<TrackerKind> parsed = parse_tracker_name(tracker_name(kind));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(*parsed, kind);
  }
  Result<TrackerKind> bad = parse_tracker_name("deepsort");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'deepsort'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("iou, sort, bytetrack"), std::string::npos);
}

TEST(TrackerParams, DefaultsAreValidAndBadValuesAreNamed) {
  for (const TrackerKind kind : all_tracker_kinds()) {
    EXPECT_TRUE(validate_tracker_params(default_tracker_params(kind)).is_ok());
  }
  const auto refused = [](void (*edit)(TrackerParams&), const char* name) {
    TrackerParams p = default_tracker_params(TrackerKind::kByteTrack);
    edit(p);
    Result<std::unique_ptr<Tracker>> t = Tracker::create(p);
    ASSERT_FALSE(t.is_ok()) << name;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(name), std::string::npos) << t.status().message();
  };
  refused([](TrackerParams& p) { p.match_iou = 1.5f; }, "match_iou");
  refused([](TrackerParams& p) { p.low_match_iou = -0.1f; }, "low_match_iou");
  refused([](TrackerParams& p) { p.tentative_match_iou = std::numeric_limits<float>::quiet_NaN(); },
          "tentative_match_iou");
  refused([](TrackerParams& p) { p.new_track_score = 2.0f; }, "new_track_score");
  refused([](TrackerParams& p) { p.min_score = 0.7f; }, "min_score");
  refused([](TrackerParams& p) { p.min_hits = 0; }, "min_hits");
  refused([](TrackerParams& p) { p.max_age = -1; }, "max_age");
}

}  // namespace
}  // namespace fovea::track
