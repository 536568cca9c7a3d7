// The trackers' quality measured through a real detection flow: issue 20's quality report with the
// flow's own detector, preprocess and interval gate in the loop, not detections drawn from a noise
// model (track/quality.h does that one, on the tracker alone).
//
// The flow runs on one synthetic clip (io/synthetic_clip.h) whose shapes are known, once per
// tracker and detector interval, and its metadata (JSON Lines, docs/metadata.md, read back with
// parse_frame_record) is scored against the clip's ground truth with MOTA, IDF1 and HOTA
// (track/metrics.h). The ground truth's ids are the shapes' classes: the scene has one shape per
// class, so a shape's class is its identity. tests/pipeline/track_quality_flow_test.cpp checks the
// ordering the issue expects; bench/track_quality_flow.cpp prints the table for docs/perf.md.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/config.h"
#include "pipeline/flow_runner.h"
#include "track/mot.h"
#include "track/quality.h"
#include "track/tracker.h"

namespace fovea::pipeline {

// The ground truth of a synthetic clip of `frames` frames at width x height
// (io::ground_truth_boxes): one trajectory per shape, its id the shape's class.
track::MotSequence synthetic_clip_truth(int frames, int width, int height);

// One source's tracked objects in a metadata file, frame i of the sequence from the record of
// frame index i (frames without a record stay empty). Objects without a track id (not confirmed
// by the tracker) are left out, as a tracker's MOTChallenge output leaves them. Errors: the file
// cannot be read, a line is not a detection record (naming the line).
Result<track::MotSequence> tracked_objects(const std::filesystem::path& metadata, std::size_t source);

// Runs `base` (a detection flow over one synthetic clip, with a metadata sink) once per tracker
// (its default parameters, as `track: {tracker: <name>}` gives) and per detector interval, and
// scores each run's source 0 against `truth`. Rows in tracker order, then interval order; their
// truth_boxes is false (the flow's detector made the boxes).
Result<std::vector<track::QualityRow>> flow_quality_report(const PipelineConfig& base,
                                                           const track::MotSequence& truth,
                                                           std::span<const track::TrackerKind> trackers,
                                                           std::span<const int> intervals,
                                                           const FlowOptions& options);

// A Markdown table, one row per QualityRow, for docs/perf.md.
std::string format_flow_quality_table(std::span<const track::QualityRow> rows);

}  // namespace fovea::pipeline
