// The quality bars, measured on the default synthetic scene (synthetic.h): every tracker
// with ground-truth boxes and with noisy detections, at detector intervals 0, 1, 2 and 4.
#include <array>
#include <cstdio>

#include <gtest/gtest.h>

#include "track/quality.h"

namespace fovea::track {
namespace {

constexpr std::array<int, 4> kIntervals = {0, 1, 2, 4};
// Four scenes of 15 s (1800 frames, about 30,000 ground-truth boxes, 300 trajectories): enough
// that one crossing's outcome moves IDF1 by well under a point, and about 2 s of test time.
constexpr int kScenes = 4;
constexpr int kFrames = 450;

const std::vector<QualityRow>& report() {
  static const std::vector<QualityRow> rows = [] {
    SceneParams scene;
    scene.frames = kFrames;
    Result<std::vector<QualityRow>> r = quality_report(scene, DetectionNoise{}, kIntervals, kScenes);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    std::printf("%s", format_quality_table(r.value()).c_str());
    return r.value();
  }();
  return rows;
}

double idf1(TrackerKind kind, bool truth_boxes, int interval) {
  for (const QualityRow& r : report()) {
    if (r.kind == kind && r.truth_boxes == truth_boxes && r.interval == interval) return r.identity.idf1;
  }
  ADD_FAILURE() << "no row for " << tracker_name(kind);
  return 0.0;
}

// The issue: with ground-truth boxes ByteTrack reaches IDF1 >= 0.95 on the synthetic set.
TEST(TrackQuality, ByteTrackWithTruthBoxesReachesIdf1Of095) {
  EXPECT_GE(idf1(TrackerKind::kByteTrack, true, 0), 0.95);
}

// The expected ordering, ByteTrack >= SORT >= IOU on IDF1, with a detector's noise at
// every interval (where the order matters: a real detector).
TEST(TrackQuality, ByteTrackBeatsSortBeatsIouOnIdf1) {
  for (const int interval : kIntervals) {
    SCOPED_TRACE(interval);
    EXPECT_GE(idf1(TrackerKind::kByteTrack, false, interval), idf1(TrackerKind::kSort, false, interval));
    EXPECT_GE(idf1(TrackerKind::kSort, false, interval), idf1(TrackerKind::kIou, false, interval));
  }
}

// The issue: running the detector every third frame (interval 2) costs ByteTrack at most 5 IDF1
// points, with ground-truth boxes and with noisy detections.
TEST(TrackQuality, Interval2CostsByteTrackAtMost5Idf1Points) {
  for (const bool truth_boxes : {true, false}) {
    SCOPED_TRACE(truth_boxes ? "ground-truth boxes" : "noisy detections");
    EXPECT_LE(idf1(TrackerKind::kByteTrack, truth_boxes, 0) - idf1(TrackerKind::kByteTrack, truth_boxes, 2),
              0.05);
  }
}

}  // namespace
}  // namespace fovea::track
