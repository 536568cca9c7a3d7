// The per-frame metadata record: one JSON object per frame, one frame per line (JSON Lines), the
// format of the metadata sink's files. docs/metadata.md is the schema (version 1); this header
// writes it and reads it back.
//
// The writer is hand-written rather than built on nlohmann::json: it runs for every frame of every
// source (64 sources at hundreds of fps), and building a JSON tree per frame costs several times
// the text itself (a 100-object record: 19 us here, about 115 us through nlohmann::json). Floats are float32
// on the way in, so they are written as the shortest text that reads back to the same float32 (0.87, not
// 0.8700000047683716). The reader is nlohmann::json plus a schema check; it serves tests and C++ consumers of
// the files, not the hot path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "pipeline/frame_batch.h"

namespace fovea::pipeline {

// The schema version, the record's "v". A change to a key's name, type or meaning, or a new key,
// gives a new version. Version 2 added "classes" (classification records); the reader takes
// version 1 records too, which are version 2 records without it.
inline constexpr int kFrameRecordVersion = 2;
inline constexpr int kOldestFrameRecordVersion = 1;

// What the record says about the frame besides its results.
struct FrameRecordContext {
  std::string_view source;             // the source's name
  std::size_t source_id = 0;           // its position in the flow's source list
  std::int64_t frame = 0;              // 0-based per source (MuxFrame::index)
  std::optional<std::int64_t> pts_us;  // none when the stream carries no timestamps
  // When the frame was captured, µs since the Unix epoch (SourceFrame::capture_time_us); none
  // where the flow has no clock for it.
  std::optional<std::int64_t> capture_time_us;
  std::uint64_t batch = 0;  // the mux batch that carried the frame
  // The primary model's class names, line i of its label file = class id i; empty without one.
  std::span<const std::string> labels;
  int version = kFrameRecordVersion;  // written as "v"
};

// The record as one line of JSON, without the newline. A frame whose results carry classes gives a
// classification record, one with a target_fraction a segmentation record (neither has "objects");
// any other frame a detection record.
std::string frame_record_json(const FrameRecordContext& context, const FrameResults& results);

// One line read back: the schema's keys as C++ values. Float keys written as null (a non-finite
// value) read as NaN.
struct ParsedObject {
  std::array<float, 4> box{};  // x1, y1, x2, y2
  int class_id = -1;
  std::optional<std::string> label;
  float score = 0.0f;
  std::optional<std::int64_t> track_id;
  bool predicted = false;                 // the record's "predicted", false when absent
  std::vector<SecondaryLabel> secondary;  // label "" where the record has none
  bool operator==(const ParsedObject&) const = default;
};

struct ParsedFrameRecord {
  int version = kFrameRecordVersion;
  std::string source;
  std::size_t source_id = 0;
  std::int64_t frame = 0;
  std::optional<std::int64_t> pts_us;
  std::optional<std::int64_t> capture_time_us;
  std::uint64_t batch = 0;
  bool inferred = false;
  std::optional<std::vector<ParsedObject>> objects;  // detection records
  std::optional<double> target_fraction;             // segmentation records
  std::optional<std::vector<ClassLabel>> classes;    // classification records (label "" where none)
  bool operator==(const ParsedFrameRecord&) const = default;
};

// Checks one line against the schema: the version, every required key, the types and ranges, no
// unknown keys. An error names the key by its path ("objects[2].box[3]").
Result<ParsedFrameRecord> parse_frame_record(std::string_view line);

}  // namespace fovea::pipeline
