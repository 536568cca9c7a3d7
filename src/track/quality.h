// The tracking-quality report: every tracker on a synthetic scene, with ground-truth boxes (the
// upper bound) and with noisy detections, at several detector intervals, scored with MOTA, IDF1
// and HOTA. Used by the quality test (tests/track) and by `track_bench --metrics` for docs/perf.md.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "track/metrics.h"
#include "track/synthetic.h"
#include "track/tracker.h"

namespace fovea::track {

// Runs `tracker` over one source's frames. Interval k: detections are used on every (k+1)-th
// frame (0, k+1, ...), the tracker predicts the others. Every frame's output becomes a frame of
// the sequence, so predicted boxes are scored like detected ones.
MotSequence track_sequence(Tracker& tracker, std::uint32_t source,
                           std::span<const std::vector<Detection>> detections, int interval);

struct QualityRow {
  TrackerKind kind = TrackerKind::kByteTrack;
  bool truth_boxes = false;  // ground-truth boxes instead of noisy detections
  int interval = 0;
  ClearMotMetrics clear;
  IdentityMetrics identity;
  HotaMetrics hota;
};

// Every tracker (its default parameters) x {ground-truth boxes, noisy detections} x intervals, on
// `scenes` scenes (seeds scene.seed, scene.seed + 1, ...; the same for the noise), each one a
// source of the tracker. The metrics are those of the scenes taken as one sequence (ids kept
// apart), which is how MOTChallenge combines sequences: counts add up, so one scene's luck
// weighs no more than its share of the frames.
Result<std::vector<QualityRow>> quality_report(const SceneParams& scene, const DetectionNoise& noise,
                                               std::span<const int> intervals, int scenes);

// A Markdown table, one row per QualityRow, for docs/perf.md.
std::string format_quality_table(std::span<const QualityRow> rows);

}  // namespace fovea::track
