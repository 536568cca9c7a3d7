#include "pipeline/track_quality.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "io/synthetic_clip.h"
#include "pipeline/flow.h"
#include "pipeline/frame_record.h"
#include "track/metrics.h"

namespace fovea::pipeline {

track::MotSequence synthetic_clip_truth(int frames, int width, int height) {
  track::MotSequence truth;
  truth.frames.resize(static_cast<std::size_t>(frames));
  for (int f = 0; f < frames; ++f) {
    for (const io::SyntheticObject& shape : io::ground_truth_boxes(f, width, height)) {
      truth.frames[static_cast<std::size_t>(f)].push_back({.id = shape.class_id, .box = shape.box});
    }
  }
  return truth;
}

Result<track::MotSequence> tracked_objects(const std::filesystem::path& metadata, std::size_t source) {
  std::ifstream file(metadata);
  if (!file) {
    return make_error(StatusCode::kNotFound, metadata.string(), ": cannot read the metadata");
  }
  track::MotSequence sequence;
  int number = 0;
  for (std::string line; std::getline(file, line);) {
    ++number;
    Result<ParsedFrameRecord> record = parse_frame_record(line);
    if (!record.is_ok()) {
      return record.status().with_context(fmt::format("{}: line {}", metadata.string(), number));
    }
    if (!record->objects) {
      return make_error(StatusCode::kInvalidArgument, metadata.string(), ": line ", std::to_string(number),
                        " is not a detection record");
    }
    if (record->source_id != source) continue;
    const auto frame = static_cast<std::size_t>(record->frame);
    if (sequence.frames.size() <= frame) sequence.frames.resize(frame + 1);
    for (const ParsedObject& object : *record->objects) {
      if (!object.track_id || *object.track_id < 0) continue;
      sequence.frames[frame].push_back(
          {.id = *object.track_id,
           .box = Box{object.box[0], object.box[1], object.box[2], object.box[3]},
           .confidence = object.score});
    }
  }
  return sequence;
}

Result<std::vector<track::QualityRow>> flow_quality_report(const PipelineConfig& base,
                                                           const track::MotSequence& truth,
                                                           std::span<const track::TrackerKind> trackers,
                                                           std::span<const int> intervals,
                                                           const FlowOptions& options) {
  if (!base.sinks.metadata) {
    return make_error(StatusCode::kInvalidArgument, "the tracker quality report reads the flow's metadata: ",
                      "the configuration needs a metadata sink");
  }
  std::vector<track::QualityRow> rows;
  for (const track::TrackerKind kind : trackers) {
    for (const int interval : intervals) {
      PipelineConfig config = base;
      config.track = TrackConfig{.enabled = true, .tracker = kind};
      config.detect.interval = interval;
      const std::string run = fmt::format("{} at interval {}", track::tracker_name(kind), interval);
      Result<FlowResult> result = run_flow(config, options);
      if (!result.is_ok()) return result.status().with_context(run);
      Result<track::MotSequence> hypothesis = tracked_objects(config.sinks.metadata->path, 0);
      if (!hypothesis.is_ok()) return hypothesis.status().with_context(run);
      rows.push_back({.kind = kind,
                      .truth_boxes = false,
                      .interval = interval,
                      .clear = track::clear_mot(truth, *hypothesis),
                      .identity = track::identity_metrics(truth, *hypothesis),
                      .hota = track::hota(truth, *hypothesis)});
    }
  }
  return rows;
}

std::string format_flow_quality_table(std::span<const track::QualityRow> rows) {
  std::string table =
      "| tracker | interval | IDF1 | MOTA | HOTA | DetA | AssA | ID switches | FP | FN |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const track::QualityRow& r : rows) {
    fmt::format_to(std::back_inserter(table),
                   "| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} | {} | {} |\n",
                   track::tracker_name(r.kind), r.interval, r.identity.idf1, r.clear.mota, r.hota.hota,
                   r.hota.deta, r.hota.assa, r.clear.id_switches, r.clear.false_positives,
                   r.clear.false_negatives);
  }
  return table;
}

}  // namespace fovea::pipeline
