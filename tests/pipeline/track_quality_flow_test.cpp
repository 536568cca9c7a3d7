// The trackers' quality through the detection flow (pipeline/track_quality.h): the demo detector
// on a synthetic clip, every tracker at detector intervals 0, 1, 2 and 4, scored from the flow's
// metadata against the clip's ground truth. Checks the expectations where this scene can
// show them: IDF1 ordered ByteTrack >= SORT >= IOU, and interval 2 costing ByteTrack at most 5
// IDF1 points.
#include <gtest/gtest.h>

#include <array>
#include <iostream>
#include <map>
#include <utility>

#include "detection_flow_fixture.h"
#include "pipeline/track_quality.h"

namespace fovea::pipeline {
namespace {

using namespace detect_test;
using track::TrackerKind;

// Long enough for the shapes to cross and cover each other (io/synthetic_clip.h), short enough for
// twelve CPU flows in seconds.
constexpr int kQualityFrames = 40;

class TrackQualityFlow : public DetectionFlow {
 protected:
  void SetUp() override {
    DetectionFlow::SetUp();
    ASSERT_TRUE(io::write_synthetic_clip(path("quality.mp4"),
                                         {.width = kWidth, .height = kHeight, .frames = kQualityFrames})
                    .is_ok());
  }
};

TEST_F(TrackQualityFlow, ByteTrackLeadsAndKeepsItsIdentitiesAtInterval2) {
  constexpr std::array kTrackers{TrackerKind::kIou, TrackerKind::kSort, TrackerKind::kByteTrack};
  constexpr std::array kIntervals{0, 1, 2, 4};
  const track::MotSequence truth = synthetic_clip_truth(kQualityFrames, kWidth, kHeight);
  Result<std::vector<track::QualityRow>> rows =
      flow_quality_report(config({"quality.mp4"}), truth, kTrackers, kIntervals,
                          {.device = DeviceChoice::kCpu, .progress = nullptr});
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), kTrackers.size() * kIntervals.size());
  std::cout << format_flow_quality_table(*rows);
  std::map<std::pair<TrackerKind, int>, double> scores;
  for (const track::QualityRow& row : *rows) scores[{row.kind, row.interval}] = row.identity.idf1;
  const auto idf1 = [&](TrackerKind kind, int interval) { return scores.at({kind, interval}); };
  for (const int interval : kIntervals) {
    EXPECT_GE(idf1(TrackerKind::kByteTrack, interval), idf1(TrackerKind::kSort, interval))
        << "interval " << interval;
    EXPECT_GE(idf1(TrackerKind::kSort, interval), idf1(TrackerKind::kIou, interval))
        << "interval " << interval;
  }
  // The demo detector's boxes are within a pixel or two of the truth: close to ground-truth boxes,
  // with which the issue asks ByteTrack for 0.95.
  EXPECT_GE(idf1(TrackerKind::kByteTrack, 0), 0.95);
  EXPECT_GE(idf1(TrackerKind::kByteTrack, 2), idf1(TrackerKind::kByteTrack, 0) - 0.05);
}

}  // namespace
}  // namespace fovea::pipeline
