// Multi-object trackers: identities for detections across frames, per source.
//
// One interface (Tracker), three algorithms chosen by name:
//   iou        greedy IoU association with the track's last box (Bochinski et al., "High-Speed
//              Tracking-by-Detection Without Using Image Information", AVSS 2017; DeepStream's IOU
//              tracker). No motion model: a predicted frame repeats the last box.
//   sort       Kalman filter (kalman.h) + optimal (Hungarian) assignment on IoU with the predicted
//              boxes, pairs below an IoU gate refused (Bewley et al., "Simple Online and Realtime
//              Tracking", ICIP 2016).
//   bytetrack  Kalman filter + two-stage optimal association (Zhang et al., "ByteTrack", ECCV 2022):
//              high-score detections against every track (tracked and lost), then low-score
//              detections against the tracked ones still unmatched, then the remaining high-score
//              detections against tentative tracks; lost tracks are kept `max_age` frames (the
//              paper's track buffer) and re-found.
//
// Track life (all three; numbers from TrackerParams):
//   - A detection that no track takes, with score >= new_track_score, starts a tentative track.
//   - A tentative track is confirmed once it has min_hits matched detections; it then gets its id,
//     the next of its source's counter (1, 2, ...), so ids are unique per source and never reused.
//     A tentative track that misses a detection frame is removed (a false positive rarely repeats).
//   - A confirmed track that misses a detection frame is lost: it is not output, still predicted,
//     and can be matched again; it is removed once more than max_age frames have passed since its
//     last match. Frames are counted whether detected or predicted; removal is decided on detected
//     frames only, so a detector interval never removes a track on its own.
//   - reset(source) drops the source's tracks (its restart or reconnect) but keeps its id counter.
//
// Frames without detections (the detector interval): every track moves one frame forward, and
// every confirmed track that is not lost is output with its predicted box, flagged `predicted`.
//
// Tracks are per class: a detection only ever matches a track of its class. Detections with a
// non-finite box or score, or with a box of zero width or height, are not tracked (nothing can
// overlap them); they are counted in ignored_detections().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/box.h"
#include "core/status.h"

namespace fovea::track {

enum class TrackerKind { kIou, kSort, kByteTrack };

// "iou", "sort", "bytetrack"; an unknown name is kInvalidArgument listing the known ones.
Result<TrackerKind> parse_tracker_name(std::string_view name);
std::string_view tracker_name(TrackerKind kind);
std::span<const TrackerKind> all_tracker_kinds();

struct TrackerParams {
  TrackerKind kind = TrackerKind::kByteTrack;
  // Smallest IoU for a detection to continue a track (first stage for bytetrack).
  float match_iou = 0.2f;
  // bytetrack: the second stage's (low-score detections) and the tentative tracks' IoU.
  float low_match_iou = 0.5f;
  float tentative_match_iou = 0.3f;
  // Detections scoring below min_score are ignored. bytetrack: scores in [min_score, high_score)
  // are low-score detections (second stage only), high_score and above are high-score ones.
  float min_score = 0.1f;
  float high_score = 0.5f;
  // Smallest score that starts a track.
  float new_track_score = 0.6f;
  int min_hits = 2;
  int max_age = 30;
};

// Each algorithm's published defaults, with their sources in tracker.cpp.
TrackerParams default_tracker_params(TrackerKind kind);
// kInvalidArgument naming the parameter and the reason (IoUs and scores in [0, 1], min_hits >= 1,
// max_age >= 0, min_score <= high_score).
Status validate_tracker_params(const TrackerParams& params);

struct Detection {
  Box box;  // corners, pixels
  int class_id = 0;
  float score = 0.0f;
};

struct TrackedObject {
  std::uint64_t track_id = 0;
  Box box;  // the detection's box, or the track's predicted box when `predicted`
  int class_id = 0;
  float score = 0.0f;  // the detection's, or the track's last detection's when predicted
  bool predicted = false;
  // The index of the detection this object is, in the frame's input; empty when predicted.
  std::optional<std::uint32_t> detection;
  int age = 0;   // frames since the track started
  int hits = 0;  // detections matched to it
};

// One frame of a batch: its source, and its detections unless the detector skipped the frame.
struct FrameDetections {
  std::uint32_t source = 0;
  bool detected = true;
  std::span<const Detection> detections;
};

class Tracker {
 public:
  static Result<std::unique_ptr<Tracker>> create(const TrackerParams& params);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // A batch of frames (several sources, in order; a source may appear more than once). out[i]
  // receives frame i's objects; out's vectors are reused, so a steady state does not allocate.
  void update(std::span<const FrameDetections> frames, std::vector<std::vector<TrackedObject>>& out);
  // One frame with detections, and one without.
  void update(std::uint32_t source, std::span<const Detection> detections, std::vector<TrackedObject>& out);
  void predict(std::uint32_t source, std::vector<TrackedObject>& out);

  void reset(std::uint32_t source);
  const TrackerParams& params() const;
  // Tracks alive for a source (tentative, tracked and lost).
  std::size_t track_count(std::uint32_t source) const;
  std::uint64_t ignored_detections() const;

 private:
  struct State;
  explicit Tracker(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace fovea::track
