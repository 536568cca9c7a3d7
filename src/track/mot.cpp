#include "track/mot.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/input_file.h"
#include "core/output_file.h"

namespace fovea::track {
namespace {

// The fields of one line, split at commas, surrounding spaces dropped.
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    std::string_view field = line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '\t' || field.back() == '\r')) {
      field.remove_suffix(1);
    }
    fields.push_back(field);
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

constexpr std::array<const char*, 7> kFieldNames = {"frame",    "id",        "bb_left", "bb_top",
                                                    "bb_width", "bb_height", "conf"};

Result<double> parse_number(std::string_view field, std::size_t index, std::string_view where) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size() || !std::isfinite(value)) {
    return make_error(StatusCode::kCorruptData, where, ": field ", kFieldNames[index], " '", field,
                      "' is not a finite number");
  }
  return value;
}

Status parse_line(std::string_view line, std::string_view where, MotSequence& sequence) {
  const std::vector<std::string_view> fields = split_fields(line);
  if (fields.size() < kFieldNames.size()) {
    return make_error(
        StatusCode::kCorruptData, where, ": ", fmt::format("{}", fields.size()),
        " fields; a MOTChallenge line has at least 7 (frame, id, left, top, width, height, conf)");
  }
  std::array<double, 7> v{};
  for (std::size_t i = 0; i < v.size(); ++i) {
    FOVEA_ASSIGN_OR_RETURN(v[i], parse_number(fields[i], i, where));
  }
  if (v[0] < 1 || v[0] != std::floor(v[0]) || v[0] > 1e7) {
    return make_error(StatusCode::kCorruptData, where, ": frame ", fields[0],
                      " is not a whole number from 1 to 10^7");
  }
  if (v[1] != std::floor(v[1]) || std::fabs(v[1]) > 9e15) {
    return make_error(StatusCode::kCorruptData, where, ": id ", fields[1], " is not a whole number");
  }
  if (v[4] < 0 || v[5] < 0) {
    return make_error(StatusCode::kCorruptData, where, ": negative bb_width or bb_height");
  }
  const auto frame = static_cast<std::size_t>(v[0]) - 1;
  if (sequence.frames.size() <= frame) sequence.frames.resize(frame + 1);
  const auto id = static_cast<std::int64_t>(v[1]);
  std::vector<MotObject>& objects = sequence.frames[frame];
  if (std::any_of(objects.begin(), objects.end(), [&](const MotObject& o) { return o.id == id; })) {
    return make_error(StatusCode::kCorruptData, where, ": id ", fields[1], " appears twice in frame ",
                      fields[0]);
  }
  const auto f = [](double d) { return static_cast<float>(d); };
  objects.push_back({id, Box{f(v[2]), f(v[3]), f(v[2] + v[4]), f(v[3] + v[5])}, f(v[6])});
  return Status::ok();
}

}  // namespace

Result<MotSequence> parse_mot(std::string_view text, std::string_view name) {
  MotSequence sequence;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    FOVEA_TRY(parse_line(line, fmt::format("{}:{}", name, line_number), sequence));
  }
  return sequence;
}

Result<MotSequence> read_mot(const std::filesystem::path& path) {
  // MOT17's largest ground truth is a few megabytes.
  constexpr std::uintmax_t kMaxMotBytes = std::uintmax_t{1} << 30;
  FOVEA_ASSIGN_OR_RETURN(const std::string text, read_regular_file(path, "MOTChallenge file", kMaxMotBytes));
  return parse_mot(text, path.string());
}

std::string format_mot(const MotSequence& sequence) {
  std::string text;
  for (std::size_t f = 0; f < sequence.frames.size(); ++f) {
    for (const MotObject& o : sequence.frames[f]) {
      fmt::format_to(std::back_inserter(text), "{},{},{},{},{},{},{},-1,-1,-1\n", f + 1, o.id, o.box.x1,
                     o.box.y1, o.box.x2 - o.box.x1, o.box.y2 - o.box.y1, o.confidence);
    }
  }
  return text;
}

Status write_mot(const std::filesystem::path& path, const MotSequence& sequence) {
  return write_file_atomically(path, format_mot(sequence), "MOTChallenge file");
}

}  // namespace fovea::track
