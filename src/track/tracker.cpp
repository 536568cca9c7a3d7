#include "track/tracker.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "track/assignment.h"
#include "track/kalman.h"

namespace fovea::track {
namespace {

// How long a lost track is kept: ByteTrack's track_buffer, 30 frames (a second at 30 fps, the
// longest occlusion the issue asks to bridge), for all three trackers. SORT's published max_age
// of 1 ends a track at its first missed detection, and with a detector interval every miss is
// one (measured on synthetic.h's default scene with noisy detections: SORT's IDF1 0.46 at interval
// 0 and 0.21 at interval 1 with max_age 1, against 0.91 and 0.88 with 30).
constexpr int kTrackLifetime = 30;

constexpr std::array<TrackerKind, 3> kKinds = {TrackerKind::kIou, TrackerKind::kSort,
                                               TrackerKind::kByteTrack};

struct Track {
  std::optional<std::uint64_t> id;  // set when confirmed
  int class_id = 0;
  Box box;  // last detection's box, or the prediction on frames since
  float score = 0.0f;
  BoxKalman kalman;  // unused by iou
  int age = 0;
  int hits = 0;
  int since_match = 0;
  bool lost = false;
  bool matched_now = false;
  std::uint32_t detection = 0;  // valid while matched_now

  bool confirmed() const { return id.has_value(); }
};

struct SourceTracks {
  std::vector<Track> tracks;
  std::uint64_t next_id = 1;
};

bool is_trackable(const Detection& d) {
  return std::isfinite(d.box.x1) && std::isfinite(d.box.y1) && std::isfinite(d.box.x2) &&
         std::isfinite(d.box.y2) && std::isfinite(d.score) && d.box.x2 > d.box.x1 && d.box.y2 > d.box.y1;
}

Status check_unit(float value, std::string_view name) {
  if (value >= 0.0f && value <= 1.0f) return Status::ok();
  return make_error(StatusCode::kInvalidArgument, "tracker parameter ", name, ": ", fmt::format("{}", value),
                    " is not in [0, 1]");
}

}  // namespace

Result<TrackerKind> parse_tracker_name(std::string_view name) {
  for (TrackerKind kind : kKinds) {
    if (tracker_name(kind) == name) return kind;
  }
  return make_error(StatusCode::kInvalidArgument, "unknown tracker '", name,
                    "'; known trackers: iou, sort, bytetrack");
}

std::string_view tracker_name(TrackerKind kind) {
  switch (kind) {
    case TrackerKind::kIou: return "iou";
    case TrackerKind::kSort: return "sort";
    case TrackerKind::kByteTrack: return "bytetrack";
  }
  return "unknown";
}

std::span<const TrackerKind> all_tracker_kinds() {
  return kKinds;
}

TrackerParams default_tracker_params(TrackerKind kind) {
  TrackerParams p;
  p.kind = kind;
  switch (kind) {
    case TrackerKind::kIou:
      // Bochinski et al.: sigma_IOU = 0.5; min_hits as SORT's, within the IOU tracker's t_min of
      // 2..5. IOU and SORT see the same confident detections (ByteTrack's high-score threshold) and
      // keep tracks as long as ByteTrack (kTrackLifetime), so the three differ by association only.
      p.match_iou = 0.5f;
      p.min_score = p.high_score = p.new_track_score = 0.5f;
      p.min_hits = 3;
      p.max_age = kTrackLifetime;
      break;
    case TrackerKind::kSort:
      // abewley/sort's defaults: iou_threshold 0.3, min_hits 3. Its max_age of 1 is replaced by
      // kTrackLifetime (see there).
      p.match_iou = 0.3f;
      p.min_score = p.high_score = p.new_track_score = 0.5f;
      p.min_hits = 3;
      p.max_age = kTrackLifetime;
      break;
    case TrackerKind::kByteTrack:
      // ByteTrack's byte_tracker.py: match_thresh 0.8 (a cost, 1 - IoU), 0.5 and 0.7 for the
      // second stage and the unconfirmed tracks, track_thresh 0.5, det_thresh = track_thresh + 0.1,
      // low-score detections above 0.1, track_buffer 30 frames; a track is activated by its second
      // detection.
      p.match_iou = 0.2f;
      p.low_match_iou = 0.5f;
      p.tentative_match_iou = 0.3f;
      p.min_score = 0.1f;
      p.high_score = 0.5f;
      p.new_track_score = 0.6f;
      p.min_hits = 2;
      p.max_age = kTrackLifetime;
      break;
  }
  return p;
}

Status validate_tracker_params(const TrackerParams& p) {
  FOVEA_TRY(check_unit(p.match_iou, "match_iou"));
  FOVEA_TRY(check_unit(p.low_match_iou, "low_match_iou"));
  FOVEA_TRY(check_unit(p.tentative_match_iou, "tentative_match_iou"));
  FOVEA_TRY(check_unit(p.min_score, "min_score"));
  FOVEA_TRY(check_unit(p.high_score, "high_score"));
  FOVEA_TRY(check_unit(p.new_track_score, "new_track_score"));
  if (p.min_score > p.high_score) {
    return make_error(StatusCode::kInvalidArgument, "tracker parameter min_score: ",
                      fmt::format("{} is above high_score {}", p.min_score, p.high_score));
  }
  if (p.min_hits < 1) {
    return make_error(StatusCode::kInvalidArgument, "tracker parameter min_hits: ",
                      fmt::format("{} is below 1 (a track needs a detection to exist)", p.min_hits));
  }
  if (p.max_age < 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "tracker parameter max_age: ", fmt::format("{} is negative", p.max_age));
  }
  return Status::ok();
}

struct Tracker::State {
  TrackerParams params;
  std::unordered_map<std::uint32_t, SourceTracks> sources;
  std::uint64_t ignored = 0;
  // Work buffers reused across frames.
  std::vector<std::uint32_t> valid, high, low, rows, cols;
  std::vector<char> det_taken;
  std::vector<Candidate> candidates;

  bool has_motion() const { return params.kind != TrackerKind::kIou; }
  AssignmentMethod method() const {
    return params.kind == TrackerKind::kIou ? AssignmentMethod::kGreedy : AssignmentMethod::kOptimal;
  }

  void advance(SourceTracks& s) {
    for (Track& t : s.tracks) {
      ++t.age;
      ++t.since_match;
      t.matched_now = false;
      if (has_motion()) {
        t.kalman.predict(t.lost);
        t.box = t.kalman.box();
      }
    }
  }

  // Matches tracks[rows] to detections[cols] (both unmatched so far) with IoU >= min_iou, same
  // class, and records each pair in the track.
  void match_stage(std::vector<Track>& tracks, std::span<const Detection> detections, float min_iou) {
    candidates.clear();
    for (std::uint32_t r = 0; r < rows.size(); ++r) {
      const Track& t = tracks[rows[r]];
      for (std::uint32_t c = 0; c < cols.size(); ++c) {
        const Detection& d = detections[cols[c]];
        // Most pairs do not even overlap; rejecting them before box_iou's division is most of
        // the speed at 100 objects per frame (10,000 pairs, ~100 overlapping).
        if (d.class_id != t.class_id || d.box.x1 >= t.box.x2 || t.box.x1 >= d.box.x2 ||
            d.box.y1 >= t.box.y2 || t.box.y1 >= d.box.y2) {
          continue;
        }
        const float iou = box_iou(t.box, d.box);
        if (iou > 0.0f && iou >= min_iou) candidates.push_back({r, c, 1.0 - double{iou}});
      }
    }
    if (candidates.empty()) return;
    for (const Match& m : assign_candidates(candidates, static_cast<std::uint32_t>(rows.size()),
                                            static_cast<std::uint32_t>(cols.size()), method())) {
      Track& t = tracks[rows[m.row]];
      t.matched_now = true;
      t.detection = cols[m.col];
      det_taken[cols[m.col]] = 1;
    }
  }

  // rows = tracks passing `keep` and unmatched; cols = `from` detections not taken.
  template <typename Keep>
  void select(const std::vector<Track>& tracks, Keep keep, const std::vector<std::uint32_t>& from) {
    rows.clear();
    cols.clear();
    for (std::uint32_t i = 0; i < tracks.size(); ++i) {
      if (!tracks[i].matched_now && keep(tracks[i])) rows.push_back(i);
    }
    for (std::uint32_t d : from) {
      if (!det_taken[d]) cols.push_back(d);
    }
  }

  void associate(std::vector<Track>& tracks, std::span<const Detection> detections) {
    const TrackerParams& p = params;
    if (p.kind != TrackerKind::kByteTrack) {
      select(
          tracks, [](const Track&) { return true; }, valid);
      match_stage(tracks, detections, p.match_iou);
      return;
    }
    high.clear();
    low.clear();
    for (std::uint32_t d : valid) (detections[d].score >= p.high_score ? high : low).push_back(d);
    select(
        tracks, [](const Track& t) { return t.confirmed(); }, high);
    match_stage(tracks, detections, p.match_iou);
    select(
        tracks, [](const Track& t) { return t.confirmed() && !t.lost; }, low);
    match_stage(tracks, detections, p.low_match_iou);
    select(
        tracks, [](const Track& t) { return !t.confirmed(); }, high);
    match_stage(tracks, detections, p.tentative_match_iou);
  }

  void apply_matches(SourceTracks& s, std::span<const Detection> detections) {
    for (Track& t : s.tracks) {
      if (!t.matched_now) continue;
      const Detection& d = detections[t.detection];
      if (has_motion()) t.kalman.update(d.box);
      t.box = d.box;
      t.score = d.score;
      ++t.hits;
      t.since_match = 0;
      t.lost = false;
      if (!t.confirmed() && t.hits >= params.min_hits) t.id = s.next_id++;
    }
  }

  // Tentative tracks that missed go; confirmed ones become lost and go after max_age frames.
  void retire_unmatched(SourceTracks& s) {
    std::erase_if(s.tracks, [&](Track& t) {
      if (t.matched_now) return false;
      t.lost = true;
      return !t.confirmed() || t.since_match > params.max_age;
    });
  }

  void start_tracks(SourceTracks& s, std::span<const Detection> detections) {
    const std::vector<std::uint32_t>& starters = params.kind == TrackerKind::kByteTrack ? high : valid;
    for (std::uint32_t d : starters) {
      if (det_taken[d] || detections[d].score < params.new_track_score) continue;
      Track t;
      t.class_id = detections[d].class_id;
      t.box = detections[d].box;
      t.score = detections[d].score;
      if (has_motion()) t.kalman = BoxKalman(t.box);
      t.hits = 1;
      t.matched_now = true;
      t.detection = d;
      if (params.min_hits <= 1) t.id = s.next_id++;
      s.tracks.push_back(t);
    }
  }

  void update(std::uint32_t source, std::span<const Detection> detections, std::vector<TrackedObject>& out) {
    SourceTracks& s = sources[source];
    valid.clear();
    for (std::uint32_t d = 0; d < detections.size(); ++d) {
      if (!is_trackable(detections[d])) {
        ++ignored;
      } else if (detections[d].score >= params.min_score) {
        valid.push_back(d);
      }
    }
    det_taken.assign(detections.size(), 0);
    advance(s);
    associate(s.tracks, detections);
    apply_matches(s, detections);
    retire_unmatched(s);
    start_tracks(s, detections);
    out.clear();
    for (const Track& t : s.tracks) {
      if (t.matched_now && t.confirmed()) {
        out.push_back({*t.id, t.box, t.class_id, t.score, false, t.detection, t.age, t.hits});
      }
    }
  }

  void predict(std::uint32_t source, std::vector<TrackedObject>& out) {
    SourceTracks& s = sources[source];
    advance(s);
    out.clear();
    for (const Track& t : s.tracks) {
      if (t.confirmed() && !t.lost) {
        out.push_back({*t.id, t.box, t.class_id, t.score, true, std::nullopt, t.age, t.hits});
      }
    }
  }
};

Result<std::unique_ptr<Tracker>> Tracker::create(const TrackerParams& params) {
  FOVEA_TRY(validate_tracker_params(params));
  auto state = std::make_unique<State>();
  state->params = params;
  return std::unique_ptr<Tracker>(new Tracker(std::move(state)));
}

Tracker::Tracker(std::unique_ptr<State> state) : state_(std::move(state)) {}
Tracker::~Tracker() = default;

void Tracker::update(std::span<const FrameDetections> frames, std::vector<std::vector<TrackedObject>>& out) {
  out.resize(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].detected) {
      state_->update(frames[i].source, frames[i].detections, out[i]);
    } else {
      state_->predict(frames[i].source, out[i]);
    }
  }
}

void Tracker::update(std::uint32_t source, std::span<const Detection> detections,
                     std::vector<TrackedObject>& out) {
  state_->update(source, detections, out);
}

void Tracker::predict(std::uint32_t source, std::vector<TrackedObject>& out) {
  state_->predict(source, out);
}

void Tracker::reset(std::uint32_t source) {
  const auto it = state_->sources.find(source);
  if (it != state_->sources.end()) it->second.tracks.clear();
}

const TrackerParams& Tracker::params() const {
  return state_->params;
}

std::size_t Tracker::track_count(std::uint32_t source) const {
  const auto it = state_->sources.find(source);
  return it == state_->sources.end() ? 0 : it->second.tracks.size();
}

std::uint64_t Tracker::ignored_detections() const {
  return state_->ignored;
}

}  // namespace fovea::track
