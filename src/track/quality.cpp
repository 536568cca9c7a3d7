#include "track/quality.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fovea::track {
namespace {

// Ids of scene i become i * kSceneIdStride + id, apart from every other scene's (a scene has far
// fewer than a million objects).
constexpr std::int64_t kSceneIdStride = 1'000'000;

void append(MotSequence& all, const MotSequence& part, std::int64_t id_offset) {
  for (const std::vector<MotObject>& frame : part.frames) {
    std::vector<MotObject>& out = all.frames.emplace_back(frame);
    for (MotObject& o : out) o.id += id_offset;
  }
}

struct SceneData {
  MotSequence truth;
  std::vector<std::vector<Detection>> exact;
  std::vector<std::vector<Detection>> noisy;
};

Result<std::vector<SceneData>> make_scenes(const SceneParams& params, const DetectionNoise& noise,
                                           int count) {
  std::vector<SceneData> scenes;
  for (int i = 0; i < count; ++i) {
    SceneParams p = params;
    p.seed += static_cast<std::uint32_t>(i);
    DetectionNoise n = noise;
    n.seed += static_cast<std::uint32_t>(i);
    FOVEA_ASSIGN_OR_RETURN(const SyntheticScene scene, generate_scene(p));
    FOVEA_ASSIGN_OR_RETURN(std::vector<std::vector<Detection>> noisy, noisy_detections(scene, n));
    scenes.push_back({truth_sequence(scene), truth_detections(scene), std::move(noisy)});
  }
  return scenes;
}

QualityRow evaluate(TrackerKind kind, bool truth_boxes, int interval, const std::vector<SceneData>& scenes,
                    const MotSequence& truth) {
  Result<std::unique_ptr<Tracker>> tracker = Tracker::create(default_tracker_params(kind));
  FOVEA_CHECK(tracker.is_ok());  // the defaults are valid (tested)
  MotSequence result;
  for (std::size_t i = 0; i < scenes.size(); ++i) {
    const auto& detections = truth_boxes ? scenes[i].exact : scenes[i].noisy;
    append(result, track_sequence(**tracker, static_cast<std::uint32_t>(i), detections, interval),
           static_cast<std::int64_t>(i) * kSceneIdStride);
  }
  return {kind,
          truth_boxes,
          interval,
          clear_mot(truth, result),
          identity_metrics(truth, result),
          hota(truth, result)};
}

}  // namespace

MotSequence track_sequence(Tracker& tracker, std::uint32_t source,
                           std::span<const std::vector<Detection>> detections, int interval) {
  FOVEA_CHECK(interval >= 0);
  MotSequence sequence;
  std::vector<TrackedObject> objects;
  for (std::size_t f = 0; f < detections.size(); ++f) {
    if (f % static_cast<std::size_t>(interval + 1) == 0) {
      tracker.update(source, detections[f], objects);
    } else {
      tracker.predict(source, objects);
    }
    std::vector<MotObject>& out = sequence.frames.emplace_back();
    for (const TrackedObject& o : objects) {
      out.push_back({static_cast<std::int64_t>(o.track_id), o.box, o.score});
    }
  }
  return sequence;
}

Result<std::vector<QualityRow>> quality_report(const SceneParams& scene_params, const DetectionNoise& noise,
                                               std::span<const int> intervals, int scenes) {
  if (scenes < 1 || scenes > 1000) {
    return make_error(StatusCode::kInvalidArgument, "quality report scenes: ", fmt::format("{}", scenes),
                      " is not in [1, 1000]");
  }
  for (const int interval : intervals) {
    if (interval < 0) {
      return make_error(StatusCode::kInvalidArgument, "detector interval ", fmt::format("{}", interval),
                        " is negative");
    }
  }
  FOVEA_ASSIGN_OR_RETURN(const std::vector<SceneData> data, make_scenes(scene_params, noise, scenes));
  MotSequence truth;
  for (std::size_t i = 0; i < data.size(); ++i)
    append(truth, data[i].truth, static_cast<std::int64_t>(i) * kSceneIdStride);
  std::vector<QualityRow> rows;
  for (const bool truth_boxes : {true, false}) {
    for (const int interval : intervals) {
      for (const TrackerKind kind : all_tracker_kinds())
        rows.push_back(evaluate(kind, truth_boxes, interval, data, truth));
    }
  }
  return rows;
}

std::string format_quality_table(std::span<const QualityRow> rows) {
  std::string table =
      "| detections | interval | tracker | IDF1 | MOTA | HOTA | DetA | AssA | ID switches | FP | FN |\n"
      "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const QualityRow& r : rows) {
    fmt::format_to(std::back_inserter(table),
                   "| {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} | {} | {} |\n",
                   r.truth_boxes ? "ground truth" : "noisy", r.interval, tracker_name(r.kind),
                   r.identity.idf1, r.clear.mota, r.hota.hota, r.hota.deta, r.hota.assa, r.clear.id_switches,
                   r.clear.false_positives, r.clear.false_negatives);
  }
  return table;
}

}  // namespace fovea::track
