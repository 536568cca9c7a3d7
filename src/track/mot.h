// Tracking results and ground truth as sequences of frames, and the MOTChallenge text format.
//
// MOTChallenge lines (Milan et al., "MOT16: A Benchmark for Multi-Object Tracking", 2016):
//   frame, id, bb_left, bb_top, bb_width, bb_height, conf, x, y, z
// frames count from 1, boxes are pixels (left, top, width, height). Ground-truth files put a
// class and a visibility after conf instead of x, y, z; fields after conf are read as text and
// ignored, and written as -1, -1, -1.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/box.h"
#include "core/status.h"

namespace fovea::track {

struct MotObject {
  std::int64_t id = 0;
  Box box;  // corners
  float confidence = 1.0f;
};

// frames[i] holds frame i + 1's objects; ids are unique within a frame.
struct MotSequence {
  std::vector<std::vector<MotObject>> frames;
};

// Parses MOTChallenge text; `name` (a file name) starts every error, with the line and the field:
// fewer than 7 fields, a field that is not a number, a frame below 1, a negative width or height,
// an id twice in one frame. Empty lines are skipped.
Result<MotSequence> parse_mot(std::string_view text, std::string_view name);
Result<MotSequence> read_mot(const std::filesystem::path& path);

// One line per object, frames in order; numbers in their shortest form that reads back to the
// same float (the width and height are differences of corners, so corners read back within a
// rounding of the float sum).
std::string format_mot(const MotSequence& sequence);
// Written through core/output_file.h (a temporary name, renamed when complete).
Status write_mot(const std::filesystem::path& path, const MotSequence& sequence);

}  // namespace fovea::track
