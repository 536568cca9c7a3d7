#include "pipeline/track_ops.h"

#include <algorithm>

#include "core/log.h"

namespace fovea::pipeline {

TrackOp::TrackOp(std::unique_ptr<track::Tracker> tracker, std::size_t sources)
    : tracker_(std::move(tracker)), last_(sources) {}

Result<std::unique_ptr<TrackOp>> TrackOp::create(const track::TrackerParams& params, std::size_t sources) {
  Result<std::unique_ptr<track::Tracker>> tracker = track::Tracker::create(params);
  if (!tracker.is_ok()) return tracker.status().with_context("track");
  return std::unique_ptr<TrackOp>(new TrackOp(std::move(*tracker), sources));
}

void TrackOp::reset_on_restart(const BatchFrame& frame) {
  std::optional<Position>& last = last_[frame.source];
  const int pass = frame.payload.pass;
  const std::int64_t max_gap = static_cast<std::int64_t>(tracker_->params().max_age) + 1;
  if (last && (pass != last->pass || frame.index <= last->index || frame.index - last->index > max_gap)) {
    log_debug("track: source {} went from frame {} (pass {}) to {} (pass {}): its tracks start again",
              frame.source, last->index, last->pass, frame.index, pass);
    tracker_->reset(static_cast<std::uint32_t>(frame.source));
    ++resets_;
  }
  last = Position{.pass = pass, .index = frame.index};
}

void TrackOp::track_detections(std::uint32_t source, std::vector<ObjectResult>& objects) {
  detections_.clear();
  for (const ObjectResult& object : objects) {
    detections_.push_back({.box = object.box, .class_id = object.class_id, .score = object.score});
  }
  tracker_->update(source, detections_, tracked_);
  for (ObjectResult& object : objects) object.track_id = -1;
  for (const track::TrackedObject& t : tracked_) {
    objects[*t.detection].track_id = static_cast<std::int64_t>(t.track_id);
  }
}

void TrackOp::track_prediction(std::uint32_t source, int width, int height,
                               std::vector<ObjectResult>& objects) {
  tracker_->predict(source, tracked_);
  objects.clear();
  for (const track::TrackedObject& t : tracked_) {
    // The motion model can carry a box past the frame's edge; detections are clipped to the frame
    // (docs/metadata.md), so are predictions. One wholly outside is not shown.
    const Box box{.x1 = std::clamp(t.box.x1, 0.0f, static_cast<float>(width)),
                  .y1 = std::clamp(t.box.y1, 0.0f, static_cast<float>(height)),
                  .x2 = std::clamp(t.box.x2, 0.0f, static_cast<float>(width)),
                  .y2 = std::clamp(t.box.y2, 0.0f, static_cast<float>(height))};
    if (box.x2 <= box.x1 || box.y2 <= box.y1) continue;
    objects.push_back({.box = box,
                       .class_id = t.class_id,
                       .score = t.score,
                       .track_id = static_cast<std::int64_t>(t.track_id),
                       .predicted = true});
  }
}

Status TrackOp::run_host(FrameBatch& batch) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const BatchFrame& frame = batch.frames[i];
    if (frame.source >= last_.size()) {
      return make_error(StatusCode::kInternal, "track: a frame of source ", std::to_string(frame.source),
                        " in a flow of ", std::to_string(last_.size()), " sources");
    }
    reset_on_restart(frame);
    const auto source = static_cast<std::uint32_t>(frame.source);
    FrameResults& results = batch.results[i];
    if (results.inferred) {
      track_detections(source, results.objects);
    } else {
      const ImageView image = batch.image(i);
      track_prediction(source, image.width, image.height, results.objects);
    }
  }
  return Status::ok();
}

}  // namespace fovea::pipeline
