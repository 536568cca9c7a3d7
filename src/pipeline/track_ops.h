// The track stage's op: identities for the detect stage's objects across frames (track/tracker.h),
// a host op on its own stage thread after the inference stage.
//
// For each frame of a batch, in order, with the state of the frame's source:
//   - a frame the detector ran on (FrameResults::inferred) updates the tracker with its objects;
//     every object stays, in the detector's order, and the ones a confirmed track took carry its
//     id (ObjectResult::track_id, unique per source and stable for the run); the others (not yet
//     confirmed, below the tracker's min_score) keep track_id -1;
//   - a frame the detector skipped (detect.interval, GateOp) moves every track one frame forward,
//     and its objects become the confirmed tracks' predicted boxes, flagged `predicted`.
// A source's tracks are dropped (its ids keep counting) when it starts its stream again: a new pass
// (SourceFrame::pass, a loop; the mux counts a looping source's frames on across its passes, so
// the index alone would not show it), or a frame index that goes backwards or jumps by more than
// the tracker's max_age frames. After a restart no track can be where it was.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/op.h"
#include "track/tracker.h"

namespace fovea::pipeline {

class TrackOp final : public HostOp {
 public:
  // `sources`: the flow's source count (MuxFrame::source is below it).
  static Result<std::unique_ptr<TrackOp>> create(const track::TrackerParams& params, std::size_t sources);
  std::string name() const override { return "track"; }
  Status declare(BufferPlan&) override { return Status::ok(); }
  Status run_host(FrameBatch& batch) override;

  // Sources whose tracks were dropped on a restart, counted over the run.
  std::uint64_t resets() const { return resets_.load(); }
  std::vector<StageCounter> counters() const override {
    return {{"sources restarted (tracks reset)", resets_.load()}};
  }

 private:
  TrackOp(std::unique_ptr<track::Tracker> tracker, std::size_t sources);
  // Where a source's last frame was.
  struct Position {
    int pass = 0;
    std::int64_t index = 0;
  };
  // Drops the source's tracks when `frame` is on another pass or does not follow its last frame.
  void reset_on_restart(const BatchFrame& frame);
  void track_detections(std::uint32_t source, std::vector<ObjectResult>& objects);
  // The tracks' predicted boxes, clipped to the frame (width x height).
  void track_prediction(std::uint32_t source, int width, int height, std::vector<ObjectResult>& objects);

  std::unique_ptr<track::Tracker> tracker_;
  std::vector<std::optional<Position>> last_;  // per source
  std::atomic<std::uint64_t> resets_{0};       // read by the progress line while the stage runs
  // Reused every frame: a steady state does not allocate.
  std::vector<track::Detection> detections_;
  std::vector<track::TrackedObject> tracked_;
};

}  // namespace fovea::pipeline
