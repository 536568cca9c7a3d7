#include "pipeline/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include "core/check.h"
#include "core/input_file.h"
#include "core/log.h"
#include "image/blur.h"
#include "image/blur_composite.h"
#include "io/demuxer.h"
#include "io/image_files.h"

namespace fovea::pipeline {
namespace {

// Batches beyond this are typos (an extra digit), not plans: the scaling runs go to 16 sources.
constexpr int kMaxBatchSize = 1024;
// Frames one source may queue in the mux: each is a decoded frame held in the source's pool (12 MB
// at 4K), so more than 64 per source is a typo, not a plan.
constexpr int kMaxSourceQueue = 64;
// A configuration is a page of YAML; a larger file is some other file named by mistake.
constexpr std::uintmax_t kMaxConfigBytes = 16u << 20;

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

constexpr EnumName<io::DecoderBackend> kDecoderNames[] = {{io::DecoderBackend::kAuto, "auto"},
                                                          {io::DecoderBackend::kCpu, "cpu"},
                                                          {io::DecoderBackend::kNvdec, "nvdec"}};
constexpr EnumName<io::RtspTransport> kTransportNames[] = {{io::RtspTransport::kTcp, "tcp"},
                                                           {io::RtspTransport::kUdp, "udp"}};
constexpr EnumName<runtime::Precision> kPrecisionNames[] = {{runtime::Precision::kFloat32, "fp32"},
                                                            {runtime::Precision::kFloat16, "fp16"},
                                                            {runtime::Precision::kInt8, "int8"}};
constexpr EnumName<ColorOrder> kColorOrderNames[] = {{ColorOrder::kRgb, "rgb"}, {ColorOrder::kBgr, "bgr"}};
constexpr EnumName<FlowKind> kFlowNames[] = {{FlowKind::kSegmentation, "segmentation"},
                                             {FlowKind::kDetection, "detection"},
                                             {FlowKind::kImage2Image, "image2image"},
                                             {FlowKind::kClassification, "classification"}};
constexpr EnumName<StageKind> kStageNames[] = {{StageKind::kSegment, "segment"},
                                               {StageKind::kDetect, "detect"},
                                               {StageKind::kTrack, "track"},
                                               {StageKind::kClassify, "classify"},
                                               {StageKind::kOsd, "osd"},
                                               {StageKind::kImage2Image, "image2image"},
                                               {StageKind::kClassifyFrames, "classify_frames"}};
constexpr EnumName<JpegCodec> kJpegCodecNames[] = {
    {JpegCodec::kAuto, "auto"}, {JpegCodec::kCpu, "cpu"}, {JpegCodec::kNvjpeg, "nvjpeg"}};
constexpr EnumName<AbSplit> kSplitNames[] = {
    {AbSplit::kNone, "none"}, {AbSplit::kA, "a"}, {AbSplit::kB, "b"}};
constexpr EnumName<ImageOutputFormat> kImageFormatNames[] = {{ImageOutputFormat::kPng, "png"},
                                                             {ImageOutputFormat::kJpeg, "jpeg"}};
constexpr EnumName<track::TrackerKind> kTrackerNames[] = {{track::TrackerKind::kIou, "iou"},
                                                          {track::TrackerKind::kSort, "sort"},
                                                          {track::TrackerKind::kByteTrack, "bytetrack"}};
constexpr EnumName<TaskType> kTaskTypeNames[] = {{TaskType::kSegmentation, "segmentation"}};
constexpr EnumName<io::EncoderCodec> kCodecNames[] = {{io::EncoderCodec::kH264, "h264"},
                                                      {io::EncoderCodec::kHevc, "hevc"}};

// x264's preset names and NVENC's; the encoder maps one family onto the other (io/encoder.cpp).
constexpr std::string_view kPresets[] = {"ultrafast", "superfast", "veryfast", "faster",  "fast", "medium",
                                         "slow",      "slower",    "veryslow", "placebo", "p1",   "p2",
                                         "p3",        "p4",        "p5",       "p6",      "p7"};

template <typename E, std::size_t N>
std::string_view enum_name(const EnumName<E> (&names)[N], E value) {
  for (const auto& entry : names) {
    if (entry.value == value) return entry.name;
  }
  FOVEA_CHECK_MSG(false, "an enum value has no name in its config table");
}

std::string join_names(const auto& names) {
  std::string joined;
  for (const auto& entry : names) {
    if (!joined.empty()) joined += ", ";
    if constexpr (requires { entry.name; }) {
      joined += entry.name;
    } else {
      joined += entry;
    }
  }
  return joined;
}

std::string join_path(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest known key within two edits (typos, not different words), or none.
std::optional<std::string_view> closest_key(std::string_view key, std::span<const std::string_view> known) {
  std::optional<std::string_view> best;
  std::size_t best_distance = 3;
  for (std::string_view candidate : known) {
    const std::size_t distance = edit_distance(key, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

// A YAML null key (`null:` or `~:`) keeps no text in yaml-cpp; the only such key fovea knows is
// sinks.null.
std::string key_text(const YAML::Node& key) {
  return key.IsNull() ? "null" : key.Scalar();
}

// The value of `key` in `map`, by key text: yaml-cpp's own lookup cannot find a null key.
std::optional<YAML::Node> lookup(const YAML::Node& map, std::string_view key) {
  for (const auto& entry : map) {
    if (key_text(entry.first) == key) return entry.second;
  }
  return std::nullopt;
}

std::string describe(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "nothing";
  return "'" + node.Scalar() + "'";
}

// Where the text came from, and how errors point into it: "file:line:col: key: reason" for a
// file, "--set ...: key: reason" for an override, or the caller's own name for the key (check_config).
class Parser {
 public:
  Parser(std::string_view source_name, bool with_marks)
      : source_name_(source_name), with_marks_(with_marks) {}
  explicit Parser(KeyNamer name_key) : name_key_(std::move(name_key)) {}

  Status error(const YAML::Node& node, std::string_view path, std::string_view reason) const {
    std::string message;
    if (name_key_) {
      message = name_key_(path) + ": ";
    } else {
      message = source_name_;
      if (with_marks_ && !node.Mark().is_null()) {
        message += ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
      }
      message += ": ";
      if (!path.empty()) message += std::string(path) + ": ";
    }
    message += reason;
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }

  // `node` must be a map whose keys are all in `known`, each once.
  Status check_map(const YAML::Node& node, std::string_view path,
                   const std::vector<std::string_view>& known) const {
    if (!node.IsMap()) return error(node, path, "expected a map, got " + describe(node));
    std::vector<std::string> seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar() && !entry.first.IsNull()) {
        return error(entry.first, path, "keys must be names, got " + describe(entry.first));
      }
      const std::string key = key_text(entry.first);
      const std::string key_path = join_path(path, key);
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string reason = "unknown key '" + key_path + "'";
        if (const auto suggestion = closest_key(key, known)) {
          reason += " (did you mean '" + std::string(*suggestion) + "'?)";
        }
        return error(entry.first, "", reason);
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return error(entry.first, "", "duplicate key '" + key_path + "'");
      }
      seen.push_back(key);
    }
    return Status::ok();
  }

  Status missing(const YAML::Node& parent, std::string_view key_path) const {
    return error(parent, "", "missing required key '" + std::string(key_path) + "'");
  }

 private:
  std::string source_name_;
  bool with_marks_ = false;
  KeyNamer name_key_;
};

// One value of a map: the node, its key path and the parser that reports on it.
struct Field {
  const Parser& parser;
  YAML::Node node;
  std::string path;

  Status error(std::string_view reason) const { return parser.error(node, path, reason); }
  Status expected(std::string_view what) const {
    return error("expected " + std::string(what) + ", got " + describe(node));
  }
};

Result<std::int64_t> to_integer(const Field& field) {
  if (!field.node.IsScalar()) return field.expected("an integer");
  const std::string& text = field.node.Scalar();
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range) return field.error("'" + text + "' is out of range");
  if (error != std::errc() || end != text.data() + text.size()) return field.expected("an integer");
  return value;
}

Result<double> to_number(const Field& field) {
  if (!field.node.IsScalar()) return field.expected("a number");
  const std::string& text = field.node.Scalar();
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return field.expected("a number");
  }
  return value;
}

Result<bool> to_bool(const Field& field) {
  if (field.node.IsScalar()) {
    std::string text = field.node.Scalar();
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
  }
  return field.expected("true or false");
}

Result<std::string> to_text(const Field& field) {
  if (!field.node.IsScalar()) return field.expected("a string");
  return field.node.Scalar();
}

template <typename E, std::size_t N>
Result<E> to_enum(const Field& field, const EnumName<E> (&names)[N]) {
  if (field.node.IsScalar()) {
    for (const auto& entry : names) {
      if (entry.name == field.node.Scalar()) return entry.value;
    }
  }
  return field.expected("one of " + join_names(names));
}

// Reading fields into the config: absent keys keep their defaults.
class MapReader {
 public:
  MapReader(const Parser& parser, const YAML::Node& node, std::string path)
      : parser_(parser), node_(node), path_(std::move(path)) {}

  bool has(std::string_view key) const { return lookup(node_, key).has_value(); }
  Field field(std::string_view key) const {
    return {parser_, lookup(node_, key).value_or(YAML::Node()), join_path(path_, key)};
  }

  Status read(std::string_view key, int& out, int min, int max) const {
    if (!has(key)) return Status::ok();
    std::int64_t value = 0;
    FOVEA_TRY(read(key, value, min, max));
    out = static_cast<int>(value);
    return Status::ok();
  }

  Status read(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max) const {
    if (!has(key)) return Status::ok();
    const Field value_field = field(key);
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t value, to_integer(value_field));
    if (value < min || value > max) {
      return value_field.error("must be between " + std::to_string(min) + " and " + std::to_string(max) +
                               ", got " + std::to_string(value));
    }
    out = value;
    return Status::ok();
  }

  // Optional keys: null (`~`) is "absent"; any other value is read as the plain key's.
  template <typename T, typename... Rules>
  Status read_optional(std::string_view key, std::optional<T>& out, Rules... rules) const {
    if (!has(key)) return Status::ok();
    if (field(key).node.IsNull()) {
      out.reset();
      return Status::ok();
    }
    T value{};
    FOVEA_TRY(read(key, value, rules...));
    out = std::move(value);
    return Status::ok();
  }

  // `strictly_positive`: 0 is out of range too (durations, sigmas, std).
  Status read(std::string_view key, double& out, bool strictly_positive) const {
    if (!has(key)) return Status::ok();
    return read_number(field(key), out, strictly_positive);
  }

  Status read(std::string_view key, bool& out) const {
    if (!has(key)) return Status::ok();
    FOVEA_ASSIGN_OR_RETURN(out, to_bool(field(key)));
    return Status::ok();
  }

  Status read(std::string_view key, std::string& out) const {
    if (!has(key)) return Status::ok();
    const Field value_field = field(key);
    FOVEA_ASSIGN_OR_RETURN(std::string value, to_text(value_field));
    if (value.empty()) return value_field.error("must not be empty");
    out = std::move(value);
    return Status::ok();
  }

  Status read_required(std::string_view key, std::string& out) const {
    if (!has(key)) return parser_.missing(node_, join_path(path_, key));
    return read(key, out);
  }

  template <typename E, std::size_t N>
  Status read(std::string_view key, E& out, const EnumName<E> (&names)[N]) const {
    if (!has(key)) return Status::ok();
    FOVEA_ASSIGN_OR_RETURN(out, to_enum(field(key), names));
    return Status::ok();
  }

 private:
  static Status read_number(const Field& value_field, double& out, bool strictly_positive) {
    FOVEA_ASSIGN_OR_RETURN(const double value, to_number(value_field));
    if (strictly_positive ? value <= 0.0 : value < 0.0) {
      return value_field.error(std::string(strictly_positive ? "must be positive" : "must not be negative") +
                               ", got " + value_field.node.Scalar());
    }
    out = value;
    return Status::ok();
  }

  const Parser& parser_;
  YAML::Node node_;
  std::string path_;
};

// --- Schema tables ---------------------------------------------------------------------------------
// The sections written as tables (the models' entries, detect, osd, sinks.video.mosaic, sinks.mqtt):
// each key once, with its member, its rules and its line in docs/config.md. Parsing, the unknown-key
// check (with the nearest key), the dump and schema_keys() (the docs check) all read the same table.

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// What a value may be. Integers and numbers lie in [min, max] (min itself excluded when
// `min_exclusive`); for lists of numbers and class thresholds, each entry does.
struct KeyRules {
  double min = -kUnbounded;
  double max = kUnbounded;
  bool min_exclusive = false;
  bool even = false;              // frame sides (4:2:0 frames)
  bool required = false;          // the key must be given
  bool may_be_empty = false;      // strings: "" is a value ("" names the first model)
  std::string_view default_text;  // docs: words for a default its value does not say
};

std::string format_number(double value) {
  return fmt::format("{}", value);
}

// "1..64", "≥ 0", "in (0, 1]": the range as docs/config.md writes it.
std::string range_text(const KeyRules& rules) {
  if (rules.max == kUnbounded) return (rules.min_exclusive ? "> " : "≥ ") + format_number(rules.min);
  if (rules.min_exclusive) return fmt::format("in ({}, {}]", rules.min, rules.max);
  return fmt::format("{}..{}", rules.min, rules.max);
}

// Why `value` is out of `rules`' range, in the words the hand-written sections use; "" when in it.
std::string range_problem(double value, const KeyRules& rules) {
  const bool below = rules.min_exclusive ? value <= rules.min : value < rules.min;
  if (!below && value <= rules.max) return {};
  if (rules.max == kUnbounded) {
    if (rules.min == 0.0) return rules.min_exclusive ? "must be positive" : "must not be negative";
    return "must be at least " + format_number(rules.min);
  }
  if (rules.min_exclusive) return fmt::format("must be above {} and at most {}", rules.min, rules.max);
  return fmt::format("must be between {} and {}", rules.min, rules.max);
}

Result<double> checked_number(const Field& field, const KeyRules& rules, bool integer) {
  double value = 0.0;
  if (integer) {
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t whole, to_integer(field));
    value = static_cast<double>(whole);
  } else {
    FOVEA_ASSIGN_OR_RETURN(value, to_number(field));
  }
  if (const std::string problem = range_problem(value, rules); !problem.empty()) {
    return field.error(problem + ", got " + field.node.Scalar());
  }
  if (rules.even && std::fmod(value, 2.0) != 0.0) {
    return field.error("must be even (4:2:0 frames), got " + field.node.Scalar());
  }
  return value;
}

Result<int> to_class_id(const Field& field) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t value, to_integer(field));
  if (value < 0 || value > std::numeric_limits<int>::max()) {
    return field.error("must be a class id (0 or more), got " + std::to_string(value));
  }
  return static_cast<int>(value);
}

Status repeated_class(const Field& field, int class_id) {
  return field.error("class " + std::to_string(class_id) + " is listed twice");
}

Field element(const Field& list, std::size_t index) {
  return {list.parser, list.node[index], list.path + "." + std::to_string(index)};
}

// The parsers post/detect_post.h knows, for the docs' list of choices.
constexpr post::DetectParser kDetectParsers[] = {post::DetectParser::kSsd, post::DetectParser::kYolo,
                                                 post::DetectParser::kDetectNet, post::DetectParser::kBoxes};

std::vector<std::string_view> detect_parser_names() {
  std::vector<std::string_view> names;
  for (const post::DetectParser parser : kDetectParsers) names.push_back(post::detect_parser_name(parser));
  return names;
}

// Reading one value of each member type; `rules` as above.
Status read_value(const Field& field, const KeyRules& rules, int& out) {
  FOVEA_ASSIGN_OR_RETURN(const double value, checked_number(field, rules, true));
  out = static_cast<int>(value);
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules& rules, float& out) {
  FOVEA_ASSIGN_OR_RETURN(const double value, checked_number(field, rules, false));
  out = static_cast<float>(value);
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, bool& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_bool(field));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules& rules, std::string& out) {
  FOVEA_ASSIGN_OR_RETURN(std::string value, to_text(field));
  if (value.empty() && !rules.may_be_empty) return field.error("must not be empty");
  out = std::move(value);
  return Status::ok();
}

// Class ids: 0 or more, each once.
Status read_value(const Field& field, const KeyRules&, std::vector<int>& out) {
  if (!field.node.IsSequence()) return field.expected("a list of class ids");
  std::vector<int> values;
  for (std::size_t i = 0; i < field.node.size(); ++i) {
    const Field entry = element(field, i);
    FOVEA_ASSIGN_OR_RETURN(const int class_id, to_class_id(entry));
    if (std::find(values.begin(), values.end(), class_id) != values.end())
      return repeated_class(entry, class_id);
    values.push_back(class_id);
  }
  out = std::move(values);
  return Status::ok();
}

// {class id: threshold}, each class once; `rules` bound the thresholds.
Status read_value(const Field& field, const KeyRules& rules, std::vector<ClassThreshold>& out) {
  if (!field.node.IsMap()) return field.expected("a map of class id: threshold");
  std::vector<ClassThreshold> values;
  for (const auto& entry : field.node) {
    const std::string path = field.path + "." + key_text(entry.first);
    FOVEA_ASSIGN_OR_RETURN(const int class_id, to_class_id(Field{field.parser, entry.first, path}));
    const bool repeated = std::any_of(values.begin(), values.end(), [&](const ClassThreshold& given) {
      return given.class_id == class_id;
    });
    if (repeated) return repeated_class(Field{field.parser, entry.first, path}, class_id);
    FOVEA_ASSIGN_OR_RETURN(const double threshold,
                           checked_number(Field{field.parser, entry.second, path}, rules, false));
    values.push_back({class_id, static_cast<float>(threshold)});
  }
  out = std::move(values);
  return Status::ok();
}

// Exactly three numbers: one per channel.
Status read_value(const Field& field, const KeyRules& rules, std::array<float, 3>& out) {
  if (!field.node.IsSequence() || field.node.size() != out.size())
    return field.expected("a list of 3 numbers");
  std::array<float, 3> values{};
  for (std::size_t i = 0; i < values.size(); ++i) {
    FOVEA_ASSIGN_OR_RETURN(const double value, checked_number(element(field, i), rules, false));
    values[i] = static_cast<float>(value);
  }
  out = values;
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, runtime::Precision& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kPrecisionNames));
  return Status::ok();
}

// Paths: one or more, none empty.
Status read_value(const Field& field, const KeyRules&, std::vector<std::string>& out) {
  if (!field.node.IsSequence()) return field.expected("a list of paths");
  std::vector<std::string> values;
  for (std::size_t i = 0; i < field.node.size(); ++i) {
    const Field entry = element(field, i);
    FOVEA_ASSIGN_OR_RETURN(std::string value, to_text(entry));
    if (value.empty()) return entry.error("must not be empty");
    values.push_back(std::move(value));
  }
  if (values.empty()) return field.error("must list at least one path");
  out = std::move(values);
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, JpegCodec& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kJpegCodecNames));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, AbSplit& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kSplitNames));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, ImageOutputFormat& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kImageFormatNames));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, ColorOrder& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kColorOrderNames));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, track::TrackerKind& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kTrackerNames));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, io::EncoderCodec& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kCodecNames));
  return Status::ok();
}

Status read_value(const Field& field, const KeyRules&, io::RtspTransport& out) {
  FOVEA_ASSIGN_OR_RETURN(out, to_enum(field, kTransportNames));
  return Status::ok();
}

// A mosaic map, by its own table (defined with it below).
Status read_value(const Field& field, const KeyRules& rules, MosaicConfig& out);

// post names the parsers, and its error lists them.
Status read_value(const Field& field, const KeyRules&, post::DetectParser& out) {
  FOVEA_ASSIGN_OR_RETURN(const std::string name, to_text(field));
  Result<post::DetectParser> parser = post::parse_parser_name(name);
  if (!parser.is_ok()) return field.error(parser.status().message());
  out = *parser;
  return Status::ok();
}

// Optional keys: null (`~`, or nothing) is "absent".
template <typename T>
Status read_value(const Field& field, const KeyRules& rules, std::optional<T>& out) {
  if (field.node.IsNull()) {
    out.reset();
    return Status::ok();
  }
  T value{};
  FOVEA_TRY(read_value(field, rules, value));
  out = std::move(value);
  return Status::ok();
}

// Writing one value as the dump does; parse reads it back equal.
template <typename T>
requires(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) YAML::Node to_node(const T& value) {
  return YAML::Node(value);
}

YAML::Node to_node(const std::vector<int>& class_ids) {
  YAML::Node node(YAML::NodeType::Sequence);
  for (const int class_id : class_ids) node.push_back(class_id);
  return node;
}

// Written with text keys: yaml-cpp would turn a null node given the integer key 0 into a list.
YAML::Node to_node(const std::vector<ClassThreshold>& thresholds) {
  YAML::Node node(YAML::NodeType::Map);
  for (const ClassThreshold& entry : thresholds) node[std::to_string(entry.class_id)] = entry.threshold;
  return node;
}

YAML::Node to_node(const std::array<float, 3>& values) {
  return YAML::Node(std::vector<float>(values.begin(), values.end()));
}

YAML::Node to_node(runtime::Precision value) {
  return YAML::Node(std::string(enum_name(kPrecisionNames, value)));
}

YAML::Node to_node(const std::vector<std::string>& values) {
  return YAML::Node(values);
}

YAML::Node to_node(JpegCodec value) {
  return YAML::Node(std::string(enum_name(kJpegCodecNames, value)));
}

YAML::Node to_node(AbSplit value) {
  return YAML::Node(std::string(enum_name(kSplitNames, value)));
}

YAML::Node to_node(ImageOutputFormat value) {
  return YAML::Node(std::string(enum_name(kImageFormatNames, value)));
}

YAML::Node to_node(ColorOrder value) {
  return YAML::Node(std::string(enum_name(kColorOrderNames, value)));
}

YAML::Node to_node(track::TrackerKind value) {
  return YAML::Node(std::string(enum_name(kTrackerNames, value)));
}

YAML::Node to_node(io::EncoderCodec value) {
  return YAML::Node(std::string(enum_name(kCodecNames, value)));
}

YAML::Node to_node(io::RtspTransport value) {
  return YAML::Node(std::string(enum_name(kTransportNames, value)));
}

YAML::Node to_node(const MosaicConfig& mosaic);

YAML::Node to_node(post::DetectParser value) {
  return YAML::Node(std::string(post::detect_parser_name(value)));
}

template <typename T>
YAML::Node to_node(const std::optional<T>& value) {
  return value ? to_node(*value) : YAML::Node(YAML::NodeType::Null);
}

// What docs/config.md's "type" column says of each member type.
std::string quoted_choices(const auto& names) {
  std::string text;
  for (const auto& entry : names) {
    if constexpr (requires { entry.name; }) {
      text += (text.empty() ? "`" : ", `") + std::string(entry.name) + "`";
    } else {
      text += (text.empty() ? "`" : ", `") + std::string(entry) + "`";
    }
  }
  return text;
}

template <typename T>
std::string kind_text(std::type_identity<T>, const KeyRules& rules) {
  if constexpr (std::is_same_v<T, int>) {
    return (rules.even ? "even integer " : "integer ") + range_text(rules);
  } else if constexpr (std::is_same_v<T, float>) {
    return "number " + range_text(rules);
  } else if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "string";
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return "list of integers ≥ 0, no repeats";
  } else if constexpr (std::is_same_v<T, std::vector<ClassThreshold>>) {
    return "map of class id: number " + range_text(rules);
  } else if constexpr (std::is_same_v<T, std::array<float, 3>>) {
    return "3 numbers " + range_text(rules);
  } else if constexpr (std::is_same_v<T, runtime::Precision>) {
    return quoted_choices(kPrecisionNames);
  } else if constexpr (std::is_same_v<T, ColorOrder>) {
    return quoted_choices(kColorOrderNames);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return "list of paths";
  } else if constexpr (std::is_same_v<T, JpegCodec>) {
    return quoted_choices(kJpegCodecNames);
  } else if constexpr (std::is_same_v<T, AbSplit>) {
    return quoted_choices(kSplitNames);
  } else if constexpr (std::is_same_v<T, ImageOutputFormat>) {
    return quoted_choices(kImageFormatNames);
  } else if constexpr (std::is_same_v<T, track::TrackerKind>) {
    return quoted_choices(kTrackerNames);
  } else if constexpr (std::is_same_v<T, post::DetectParser>) {
    return quoted_choices(detect_parser_names());
  } else if constexpr (std::is_same_v<T, io::EncoderCodec>) {
    return quoted_choices(kCodecNames);
  } else if constexpr (std::is_same_v<T, io::RtspTransport>) {
    return quoted_choices(kTransportNames);
  } else if constexpr (std::is_same_v<T, MosaicConfig>) {
    return "map";
  } else {
    return kind_text(std::type_identity<typename T::value_type>{}, rules);  // std::optional
  }
}

// A default as docs/config.md's "default" column writes it.
template <typename T>
std::string default_text(const T& value) {
  if constexpr (requires { value.has_value(); }) {
    return value ? default_text(*value) : "absent";
  } else if constexpr (std::is_same_v<T, std::vector<ClassThreshold>>) {
    std::vector<std::string> entries;
    for (const ClassThreshold& entry : value)
      entries.push_back(fmt::format("{}: {}", entry.class_id, entry.threshold));
    return fmt::format("`{{{}}}`", fmt::join(entries, ", "));
  } else if constexpr (std::is_same_v<T, std::vector<int>> || std::is_same_v<T, std::array<float, 3>>) {
    return fmt::format("`[{}]`", fmt::join(value, ", "));
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return value.empty() ? "required" : fmt::format("`[{}]`", fmt::join(value, ", "));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "`true`" : "`false`";
  } else if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    return fmt::format("`{}`", value);
  } else {
    return "`" + YAML::Dump(to_node(value)) + "`";  // enums: their name
  }
}

// One key of a table: its name in the section, its rules, its line in the docs, and the functions
// that read it into, write it from and describe its member (made by key<&Section::member>).
template <typename Section>
struct KeySpec {
  std::string_view name;
  KeyRules rules;
  std::string_view doc;
  Status (*read)(const Field&, const KeyRules&, Section&);
  YAML::Node (*write)(const Section&);
  std::string (*kind)(const KeyRules&);
  std::string (*default_value)(const KeyRules&);
};

template <typename>
struct MemberTraits;
template <typename S, typename V>
struct MemberTraits<V S::*> {
  using Section = S;
  using Value = V;
};

template <auto member>
auto key(std::string_view name, KeyRules rules, std::string_view doc) {
  using Section = typename MemberTraits<decltype(member)>::Section;
  using Value = typename MemberTraits<decltype(member)>::Value;
  return KeySpec<Section>{
      .name = name,
      .rules = rules,
      .doc = doc,
      .read = [](const Field& field, const KeyRules& key_rules,
                 Section& section) { return read_value(field, key_rules, section.*member); },
      .write = [](const Section& section) { return to_node(section.*member); },
      .kind = [](const KeyRules& key_rules) { return kind_text(std::type_identity<Value>{}, key_rules); },
      .default_value = [](const KeyRules& key_rules) -> std::string {
        if (key_rules.required) return "required";
        if (!key_rules.default_text.empty()) return std::string(key_rules.default_text);
        return default_text(Section{}.*member);
      }};
}

// models: entries (and the lone model:, which takes every key but the name, the first).
const KeySpec<ModelConfig> kModelKeys[] = {
    key<&ModelConfig::name>(
        "name", {.required = true},
        "How stages name the model (`detect.model`); unique. A lone `model:` is named `model`."),
    key<&ModelConfig::path>("path", {.required = true}, "The ONNX file."),
    key<&ModelConfig::input_name>("input_name", {},
                                  "The input tensor to feed; absent: the model's only input."),
    key<&ModelConfig::precision>("precision", {},
                                 "Inference precision on the GPU (the CPU runs fp32, or int8 when asked)."),
    key<&ModelConfig::mean>("mean", {.min = 0},
                            "Per channel, on the 0..1 scale: the tensor holds `(pixel / 255 - mean) / std`."),
    key<&ModelConfig::std>("std", {.min = 0, .min_exclusive = true},
                           "Per channel, on the 0..1 scale (ImageNet's by default)."),
    key<&ModelConfig::color_order>("color_order", {},
                                   "Channel order of the input tensor; `mean` and `std` are in this order."),
    key<&ModelConfig::input_width>("input_width", {.min = 1, .max = kMaxFrameSide},
                                   "Network input width; give it with `input_height`."),
    key<&ModelConfig::input_height>("input_height", {.min = 1, .max = kMaxFrameSide},
                                    "Network input height."),
    key<&ModelConfig::keep_aspect>(
        "keep_aspect", {}, "Letterbox (keep the aspect ratio, pad) instead of stretching to the input size."),
    key<&ModelConfig::engine_cache>("engine_cache", {},
                                    "GPU: a folder where the planned model is kept as an engine."),
    key<&ModelConfig::calibration>(
        "calibration", {}, "The calibration cache `precision: int8` runs with (`fovea model calibrate`)."),
    key<&ModelConfig::parser>(
        "parser", {},
        "How a detector's outputs read (`src/post/detect_post.h`); the detect stage's model "
        "needs one."),
    key<&ModelConfig::labels>("labels", {},
                              "A text file of class names, one per line, line 1 naming class 0."),
    key<&ModelConfig::batch_size>("batch_size",
                                  {.min = 1, .max = kMaxBatchSize, .default_text = "absent (16)"},
                                  "The model's own batch when it runs on objects (a secondary model)."),
};

const KeySpec<DetectConfig> kDetectKeys[] = {
    key<&DetectConfig::model>("model", {.may_be_empty = true, .default_text = "`\"\"` (the first model)"},
                              "The `models` entry the detect stage runs, by name."),
    key<&DetectConfig::confidence>("confidence", {.min = 0, .max = 1},
                                   "A detection counts when its score is above this."),
    key<&DetectConfig::class_confidence>(
        "class_confidence", {.min = 0, .max = 1},
        "Per-class thresholds in place of `confidence`, e.g. `{0: 0.6, 2: 0.3}`."),
    key<&DetectConfig::iou>(
        "iou", {.min = 0, .max = 1, .min_exclusive = true},
        "Non-maximum suppression per class: a box overlapping a better one by more than this "
        "IoU is dropped."),
    key<&DetectConfig::classes>("classes", {}, "Keep only these classes; empty: every class."),
    key<&DetectConfig::top_k>("top_k", {.min = 1, .max = 10000},
                              "At most this many detections per frame, the best."),
    key<&DetectConfig::candidates_per_class>(
        "candidates_per_class", {.min = 1, .max = 100000, .default_text = "absent (the parser's)"},
        "The best boxes of each class that go into non-maximum suppression; absent: the parser's "
        "customary number (ssd 400 as torchvision's SSD300, the others 1024)."),
    key<&DetectConfig::min_width>("min_width", {.min = 0},
                                  "Boxes narrower than this (frame pixels) are dropped."),
    key<&DetectConfig::min_height>("min_height", {.min = 0},
                                   "Boxes lower than this (frame pixels) are dropped."),
    key<&DetectConfig::interval>(
        "interval", {.min = 0, .max = 1000},
        "Frames skipped between two inferences, per source (DeepStream's `interval`)."),
};

const KeySpec<ClassifyFramesConfig> kClassifyFramesKeys[] = {
    key<&ClassifyFramesConfig::model>("model",
                                      {.may_be_empty = true, .default_text = "`\"\"` (the first model)"},
                                      "The `models` entry the classify_frames stage runs, by name."),
    key<&ClassifyFramesConfig::top_k>("top_k", {.min = 1, .max = 1000},
                                      "Classes kept per frame, the most likely first."),
    key<&ClassifyFramesConfig::min_score>("min_score", {.min = 0, .max = 1},
                                          "Classes less likely than this (after the softmax) are left out."),
};

// The tracker's own default applies to each parameter left out (track::default_tracker_params).
constexpr std::string_view kTrackerDefault = "absent (the tracker's)";

const KeySpec<TrackConfig> kTrackKeys[] = {
    key<&TrackConfig::enabled>("enabled", {}, "The `detection` preset runs the track stage after `detect`."),
    key<&TrackConfig::tracker>("tracker", {}, "The algorithm (`src/track/tracker.h`)."),
    key<&TrackConfig::match_iou>("match_iou", {.min = 0, .max = 1, .default_text = kTrackerDefault},
                                 "Smallest IoU for a detection to continue a track."),
    key<&TrackConfig::low_match_iou>("low_match_iou", {.min = 0, .max = 1, .default_text = kTrackerDefault},
                                     "`bytetrack`: the IoU of its second stage (low-score detections)."),
    key<&TrackConfig::tentative_match_iou>("tentative_match_iou",
                                           {.min = 0, .max = 1, .default_text = kTrackerDefault},
                                           "`bytetrack`: the IoU with tracks not yet confirmed."),
    key<&TrackConfig::min_score>("min_score", {.min = 0, .max = 1, .default_text = kTrackerDefault},
                                 "Detections scoring below this are not tracked."),
    key<&TrackConfig::high_score>("high_score", {.min = 0, .max = 1, .default_text = kTrackerDefault},
                                  "`bytetrack`: detections from this score up are high-score ones."),
    key<&TrackConfig::new_track_score>("new_track_score",
                                       {.min = 0, .max = 1, .default_text = kTrackerDefault},
                                       "Smallest score that starts a track."),
    key<&TrackConfig::min_hits>("min_hits", {.min = 1, .max = 1000, .default_text = kTrackerDefault},
                                "Detections a track needs before it gets its id and is output."),
    key<&TrackConfig::max_age>("max_age", {.min = 0, .max = 100000, .default_text = kTrackerDefault},
                               "Frames a lost track is kept (predicted, not output) before it is removed."),
};

const KeySpec<SecondaryConfig> kSecondaryKeys[] = {
    key<&SecondaryConfig::model>("model", {.required = true}, "The `models` entry to run, by name."),
    key<&SecondaryConfig::operate_on_classes>("operate_on_classes", {},
                                              "The detector's classes it classifies; empty: every class."),
    key<&SecondaryConfig::min_width>("min_width", {.min = 0},
                                     "Objects narrower than this (frame pixels) are not classified."),
    key<&SecondaryConfig::min_height>("min_height", {.min = 0},
                                      "Objects lower than this (frame pixels) are not classified."),
    key<&SecondaryConfig::reinfer_interval>(
        "reinfer_interval", {.min = 0, .max = 100000},
        "Frames between two classifications of a tracked object; 0 or 1: every frame."),
    key<&SecondaryConfig::top_k>("top_k", {.min = 1, .max = 1000},
                                 "Labels kept per object, the most likely first."),
    key<&SecondaryConfig::skip_untracked>(
        "skip_untracked", {},
        "Objects without a track (detections no confirmed track has taken yet) are not classified "
        "and carry no labels; needs the track stage."),
};

const KeySpec<OsdConfig> kOsdKeys[] = {
    key<&OsdConfig::enabled>("enabled", {}, "Draw the detections on the frames."),
    key<&OsdConfig::thickness>("thickness", {.min = 1, .max = 64}, "Box border width in pixels."),
    key<&OsdConfig::fill_alpha>("fill_alpha", {.min = 0, .max = 1},
                                "Opacity of a fill in the box's class color; 0: no fill."),
    key<&OsdConfig::labels>("labels", {}, "The class name (or number) above each box."),
    key<&OsdConfig::scores>("scores", {}, "The score after the class name."),
    key<&OsdConfig::text_scale>("text_scale", {.min = 1, .max = 16},
                                "Label font magnification; the font's cells are 8x8 pixels."),
    key<&OsdConfig::blur_classes>("blur_classes", {},
                                  "Privacy: these classes' boxes are blurred, not drawn."),
};

const KeySpec<MosaicConfig> kMosaicKeys[] = {
    key<&MosaicConfig::width>("width", {.min = 16, .max = kMaxFrameSide, .even = true},
                              "Width of the mosaic video."),
    key<&MosaicConfig::height>("height", {.min = 16, .max = kMaxFrameSide, .even = true},
                               "Height of the mosaic video."),
    key<&MosaicConfig::columns>("columns", {.min = 1, .max = 64},
                                "Tiles per row; absent: the smallest square grid."),
};

const KeySpec<ImagesConfig> kImagesKeys[] = {
    key<&ImagesConfig::inputs>(
        "inputs", {.required = true},
        "Folders, globs (`photos/*.jpg`), list files (`.txt`/`.lst`/`.list`, a path per line) or image "
        "files: JPEG, PNG, BMP, WebP. Sorted by path, duplicates once."),
    key<&ImagesConfig::recursive>("recursive", {}, "Folders' subfolders too."),
    key<&ImagesConfig::shard>("shard", {},
                              "`i/N`: this process takes every N-th image starting at the i-th, so N "
                              "processes given the same inputs split them."),
    key<&ImagesConfig::threads>("threads", {.min = 0, .max = 1024, .default_text = "`0` (one per core)"},
                                "Decode threads."),
    key<&ImagesConfig::split>("split", {},
                              "pix2pix \"AB\" pairs: `a` takes each image's left half, `b` its right half."),
    key<&ImagesConfig::decoder>(
        "decoder", {},
        "JPEG on the GPU through nvJPEG (`nvjpeg`; `auto` where it loads) or on the CPU "
        "threads (`cpu`); other formats always on the CPU."),
    key<&ImagesConfig::jpeg_threads>("jpeg_threads", {.min = 1, .max = 16},
                                     "Threads that call nvJPEG (`fovea images --jpeg-threads`)."),
    key<&ImagesConfig::jpeg_batch>("jpeg_batch", {.min = 1, .max = 256},
                                   "JPEGs each nvJPEG call decodes (`fovea images --jpeg-batch`)."),
};

const KeySpec<ImageSinkConfig> kImageSinkKeys[] = {
    key<&ImageSinkConfig::output_dir>(
        "output_dir", {.required = true},
        "Folder for the pictures: each input's path below its folder, with the format's extension."),
    key<&ImageSinkConfig::format>("format", {}, "File format of the pictures."),
    key<&ImageSinkConfig::quality>("quality", {.min = 1, .max = 100}, "JPEG quality."),
    key<&ImageSinkConfig::encoder>(
        "encoder", {},
        "JPEG on the GPU through nvJPEG (`nvjpeg`) or on the CPU writer threads (`cpu`, and `auto`: "
        "the faster on the GPU machine); PNG always on the CPU."),
};

// The ranges are the publisher's (io::validate_mqtt_options, which also checks the keys together).
const KeySpec<MqttSinkConfig> kMqttKeys[] = {
    key<&MqttSinkConfig::host>("host", {}, "The broker's host name or address."),
    key<&MqttSinkConfig::port>("port", {.min = 1, .max = 65535}, "The broker's port."),
    key<&MqttSinkConfig::topic_prefix>(
        "topic_prefix", {.may_be_empty = true},
        "Each source's records go to `<topic_prefix>/<source name>`; `<topic_prefix>/+` subscribes to all."),
    key<&MqttSinkConfig::qos>("qos", {.min = 0, .max = 2},
                              "MQTT quality of service: 0 at most once, 1 at least once, 2 exactly once."),
    key<&MqttSinkConfig::client_id>("client_id",
                                    {.may_be_empty = true, .default_text = "`\"\"` (fovea-<pid>)"},
                                    "The client identifier the broker sees; unique per broker."),
    key<&MqttSinkConfig::keepalive_s>(
        "keepalive_s", {.min = 5, .max = 65535},
        "Seconds between keepalive pings; a silent broker is noticed after 1.5 times this."),
    key<&MqttSinkConfig::max_queued_messages>(
        "max_queued_messages", {.min = 1, .max = 10'000'000},
        "Records kept while the broker is away; when full, the oldest are dropped and counted."),
    key<&MqttSinkConfig::reconnect_min_ms>(
        "reconnect_min_ms", {.min = 1, .max = 3'600'000},
        "Wait before the first retry after a lost or failed connection; it doubles per failure."),
    key<&MqttSinkConfig::reconnect_max_ms>("reconnect_max_ms", {.min = 1, .max = 3'600'000},
                                           "The longest wait between retries; at least `reconnect_min_ms`."),
    key<&MqttSinkConfig::username>("username", {}, "For a broker that wants one; absent: anonymous."),
    key<&MqttSinkConfig::password>("password", {.may_be_empty = true},
                                   "With `username`; written in the clear in the file and its dump."),
};

template <typename Section>
std::vector<std::string_view> key_names(std::span<const KeySpec<Section>> keys) {
  std::vector<std::string_view> names;
  for (const KeySpec<Section>& spec : keys) names.push_back(spec.name);
  return names;
}

// Reads the map `node` (at `path`) into `section` by the table `keys`: absent keys keep their value.
template <typename Section>
Status parse_keys(const Parser& parser, const YAML::Node& node, const std::string& path,
                  std::type_identity_t<std::span<const KeySpec<Section>>> keys, Section& section) {
  FOVEA_TRY(parser.check_map(node, path, key_names(keys)));
  for (const KeySpec<Section>& spec : keys) {
    const std::optional<YAML::Node> value = lookup(node, spec.name);
    if (!value) {
      if (spec.rules.required) return parser.missing(node, join_path(path, spec.name));
      continue;
    }
    FOVEA_TRY(spec.read(Field{parser, *value, join_path(path, spec.name)}, spec.rules, section));
  }
  return Status::ok();
}

template <typename Section>
YAML::Node write_keys(std::type_identity_t<std::span<const KeySpec<Section>>> keys, const Section& section) {
  YAML::Node node(YAML::NodeType::Map);
  for (const KeySpec<Section>& spec : keys) node[std::string(spec.name)] = spec.write(section);
  return node;
}

Status read_value(const Field& field, const KeyRules&, MosaicConfig& out) {
  return parse_keys<MosaicConfig>(field.parser, field.node, field.path, kMosaicKeys, out);
}

YAML::Node to_node(const MosaicConfig& mosaic) {
  return write_keys<MosaicConfig>(kMosaicKeys, mosaic);
}

const KeySpec<StreamSinkConfig> kStreamKeys[] = {
    key<&StreamSinkConfig::hls>("hls", {},
                                "A folder for HLS: `<hls>/<source name>/index.m3u8` and its segments per "
                                "source, or `<hls>/mosaic/` with `mosaic`."),
    key<&StreamSinkConfig::rtsp>(
        "rtsp", {},
        "An `rtsp://` server URL to push to (RTSP RECORD): `<rtsp>/<source name>` per "
        "source, or `<rtsp>` itself with `mosaic`."),
    key<&StreamSinkConfig::mosaic>("mosaic", {},
                                   "Every source tiled into one stream, with `sinks.video.mosaic`'s keys."),
    key<&StreamSinkConfig::codec>("codec", {}, "As `sinks.video.codec`."),
    key<&StreamSinkConfig::preset>("preset", {}, "As `sinks.video.preset`; a live encoder must keep up."),
    key<&StreamSinkConfig::qp>("qp", {.min = 0, .max = 51}, "As `sinks.video.qp`."),
    key<&StreamSinkConfig::segment_seconds>(
        "segment_seconds", {.min = 1, .max = 60},
        "HLS segment length; also the keyframe interval, so each segment starts with a keyframe."),
    key<&StreamSinkConfig::playlist_size>(
        "playlist_size", {.min = 1, .max = 10000},
        "Segments the HLS playlist keeps; older segment files are deleted."),
    key<&StreamSinkConfig::transport>("transport", {}, "How RTP reaches the RTSP server."),
    key<&StreamSinkConfig::reconnect_min_ms>(
        "reconnect_min_ms", {.min = 1, .max = 3'600'000},
        "Wait before pushing to the RTSP server again after it went away; it doubles per failure."),
    key<&StreamSinkConfig::reconnect_max_ms>(
        "reconnect_max_ms", {.min = 1, .max = 3'600'000},
        "The longest wait between attempts; at least `reconnect_min_ms`."),
};

template <typename Section>
void append_schema(std::string_view prefix, std::span<const KeySpec<Section>> keys,
                   std::vector<SchemaKey>& out) {
  for (const KeySpec<Section>& spec : keys) {
    out.push_back({.key = std::string(prefix) + std::string(spec.name),
                   .kind = spec.kind(spec.rules),
                   .default_value = spec.default_value(spec.rules),
                   .meaning = std::string(spec.doc)});
  }
}

Status parse_source(const Parser& parser, const YAML::Node& node, const std::string& path,
                    SourceConfig& source) {
  FOVEA_TRY(parser.check_map(node, path,
                             {"uri", "name", "decoder", "loop", "start", "duration", "timeout", "transport",
                              "reconnect", "reconnect_initial", "reconnect_max", "reconnect_attempts"}));
  const MapReader map(parser, node, path);
  FOVEA_TRY(map.read_required("uri", source.uri));
  if (map.has("name") && !map.field("name").node.IsNull()) {
    FOVEA_TRY(map.read("name", source.name));
    // The name becomes a file name (output_dir/NAME.mp4): never a path out of the folder.
    const bool control = std::any_of(source.name.begin(), source.name.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (source.name.empty() || source.name == "." || source.name == ".." ||
        source.name.find('/') != std::string::npos || control) {
      return map.field("name").error(
          fmt::format("'{}': a source's name is its output files' name (NAME.mp4 in the output folder): give "
                      "one without '/', control characters, and other than '.' and '..'",
                      source.name));
    }
  }
  FOVEA_TRY(map.read("decoder", source.decoder, kDecoderNames));
  FOVEA_TRY(map.read("loop", source.loop));
  FOVEA_TRY(map.read("start", source.start, false));
  FOVEA_TRY(map.read_optional("duration", source.duration, true));
  FOVEA_TRY(map.read("timeout", source.timeout, true));
  FOVEA_TRY(map.read("transport", source.transport, kTransportNames));
  FOVEA_TRY(map.read("reconnect", source.reconnect));
  FOVEA_TRY(map.read("reconnect_initial", source.reconnect_initial, true));
  FOVEA_TRY(map.read("reconnect_max", source.reconnect_max, true));
  FOVEA_TRY(map.read("reconnect_attempts", source.reconnect_attempts, 0, 1'000'000));
  if (source.reconnect_max < source.reconnect_initial) {
    return map.field("reconnect_max")
        .error(fmt::format("must be at least reconnect_initial ({} s), got {} s", source.reconnect_initial,
                           source.reconnect_max));
  }
  return Status::ok();
}

// A source as the configuration file writes it (the dump, and the service's source listing).
YAML::Node source_node(const SourceConfig& source) {
  YAML::Node node;
  node["uri"] = source.uri;
  node["name"] = source.name.empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Node(source.name);
  node["decoder"] = std::string(enum_name(kDecoderNames, source.decoder));
  node["loop"] = source.loop;
  node["start"] = source.start;
  node["duration"] = source.duration ? YAML::Node(*source.duration) : YAML::Node(YAML::NodeType::Null);
  node["timeout"] = source.timeout;
  node["transport"] = std::string(enum_name(kTransportNames, source.transport));
  node["reconnect"] = source.reconnect;
  node["reconnect_initial"] = source.reconnect_initial;
  node["reconnect_max"] = source.reconnect_max;
  node["reconnect_attempts"] = source.reconnect_attempts;
  return node;
}

Status parse_sources(const Parser& parser, const YAML::Node& root, std::vector<SourceConfig>& sources) {
  if (!root["sources"] && lookup(root, "images")) return Status::ok();  // an image flow
  if (!root["sources"]) return parser.missing(root, "sources");
  const Field list{parser, root["sources"], "sources"};
  if (!list.node.IsSequence()) return list.expected("a list of sources");
  // An empty list is read (fovea serve starts without sources and takes them at run time); a flow
  // run without one is refused when it starts.
  sources.assign(list.node.size(), SourceConfig{});
  for (std::size_t i = 0; i < sources.size(); ++i) {
    FOVEA_TRY(parse_source(parser, list.node[i], "sources." + std::to_string(i), sources[i]));
  }
  return Status::ok();
}

// Frames are 4:2:0 (NV12 for the GPU, YUV420P for x264): both sides must be even.
Status check_even(const MapReader& map, std::string_view key, int value) {
  if (value % 2 != 0)
    return map.field(key).error("must be even (4:2:0 frames), got " + std::to_string(value));
  return Status::ok();
}

Status parse_mux(const MapReader& map, MuxConfig& mux) {
  FOVEA_TRY(map.read("batch_size", mux.batch_size, 1, kMaxBatchSize));
  FOVEA_TRY(map.read_optional("width", mux.width, 2, kMaxFrameSide));
  FOVEA_TRY(map.read_optional("height", mux.height, 2, kMaxFrameSide));
  // That both or neither are given is checked when the flow runs (with_frame_size): one override
  // (--set, a sweep's --param) sets one of them at a time.
  if (mux.width) FOVEA_TRY(check_even(map, "width", *mux.width));
  if (mux.height) FOVEA_TRY(check_even(map, "height", *mux.height));
  FOVEA_TRY(map.read_optional("push_timeout_us", mux.push_timeout_us, std::int64_t{-1},
                              std::numeric_limits<std::int64_t>::max()));
  FOVEA_TRY(map.read_optional("max_frames_per_source", mux.max_frames_per_source, 1, kMaxBatchSize));
  FOVEA_TRY(map.read("source_queue", mux.source_queue, 1, kMaxSourceQueue));
  return map.read_optional("live", mux.live);
}

// Where a model was given ("models.1", or "model" for the lone form), for the checks that need
// every section read first (the detect stage's parser).
struct ModelSite {
  YAML::Node node;
  std::string path;
};

Status parse_model(const Parser& parser, const YAML::Node& node, const std::string& path,
                   std::span<const KeySpec<ModelConfig>> keys, ModelConfig& model) {
  FOVEA_TRY(parse_keys<ModelConfig>(parser, node, path, keys, model));
  if (model.input_width.has_value() != model.input_height.has_value()) {
    const std::string_view given = model.input_width ? "input_width" : "input_height";
    return Field{parser, *lookup(node, given), join_path(path, given)}.error(
        "input_width and input_height go together; give both or neither");
  }
  if (model.precision == runtime::Precision::kInt8 && !model.calibration) {
    return Field{parser, *lookup(node, "precision"), join_path(path, "precision")}.error(
        "int8 needs `calibration:`, the cache `fovea model calibrate` makes for this model");
  }
  return Status::ok();
}

// `models:`, a list of named models, or the older lone `model:` (named "model").
Status parse_models(const Parser& parser, const YAML::Node& root, std::vector<ModelConfig>& models,
                    std::vector<ModelSite>& sites) {
  const std::optional<YAML::Node> lone = lookup(root, "model");
  const std::optional<YAML::Node> list = lookup(root, "models");
  const bool has_lone = lone && !lone->IsNull();
  const bool has_list = list && !list->IsNull();
  if (has_lone && has_list) {
    return parser.error(*list, "models", "give either 'model' (one model) or 'models' (a list), not both");
  }
  if (has_lone) {
    ModelConfig model;
    FOVEA_TRY(parse_model(parser, *lone, "model", std::span(kModelKeys).subspan(1), model));
    models = {model};
    sites = {{*lone, "model"}};
    return Status::ok();
  }
  if (!has_list) return parser.missing(root, "model.path");
  const Field field{parser, *list, "models"};
  if (!field.node.IsSequence()) return field.expected("a list of models");
  if (field.node.size() == 0) return field.error("must list at least one model");
  models.assign(field.node.size(), ModelConfig{});
  sites.clear();
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Field entry = element(field, i);
    FOVEA_TRY(parse_model(parser, entry.node, entry.path, kModelKeys, models[i]));
    for (std::size_t j = 0; j < i; ++j) {
      if (models[j].name == models[i].name) {
        return Field{parser, entry.node["name"], entry.path + ".name"}.error(
            "'" + models[i].name + "' is already the name of " + sites[j].path + "; model names are unique");
      }
    }
    sites.push_back({entry.node, entry.path});
  }
  return Status::ok();
}

// The stages after detect, in the one order they run in.
constexpr StageKind kObjectStages[] = {StageKind::kTrack, StageKind::kClassify, StageKind::kOsd};

bool is_object_stage(StageKind stage) {
  return std::find(std::begin(kObjectStages), std::end(kObjectStages), stage) != std::end(kObjectStages);
}

// The rules of `stages:`: the primary stage (segment, detect, image2image or classify_frames) first
// and once; track, classify and osd after detect, in that order; no stage twice.
Status check_stage(const Field& entry, const std::vector<StageKind>& before, StageKind stage) {
  const std::string name(enum_name(kStageNames, stage));
  if (std::find(before.begin(), before.end(), stage) != before.end())
    return entry.error(name + " is listed twice");
  const bool primary = !is_object_stage(stage);
  if (before.empty() && !primary) {
    return entry.error(
        "the first stage runs the primary model: segment, detect, image2image or classify_frames, got " +
        name);
  }
  if (!before.empty() && primary) {
    return entry.error("only one stage runs the primary model, and stages.0 (" +
                       std::string(enum_name(kStageNames, before.front())) + ") does; got " + name);
  }
  if (stage == StageKind::kOsd &&
      std::find(before.begin(), before.end(), StageKind::kDetect) == before.end()) {
    return entry.error("osd draws the detect stage's boxes: it comes after detect");
  }
  if (!primary && before.front() != StageKind::kDetect) {
    return entry.error(name + " works on the detect stage's objects: it comes after detect");
  }
  const auto order = [](StageKind kind) {
    return std::find(std::begin(kObjectStages), std::end(kObjectStages), kind) - std::begin(kObjectStages);
  };
  if (!primary && order(before.back()) > order(stage) && is_object_stage(before.back())) {
    return entry.error(name + " comes before " + std::string(enum_name(kStageNames, before.back())) +
                       " (the order is detect, track, classify, osd)");
  }
  return Status::ok();
}

Status parse_stages(const Parser& parser, const YAML::Node& root, std::vector<StageKind>& stages) {
  const std::optional<YAML::Node> node = lookup(root, "stages");
  if (!node || node->IsNull()) return Status::ok();
  const Field list{parser, *node, "stages"};
  if (!list.node.IsSequence()) return list.expected("a list of stages");
  std::vector<StageKind> kinds;
  for (std::size_t i = 0; i < list.node.size(); ++i) {
    const Field entry = element(list, i);
    FOVEA_ASSIGN_OR_RETURN(const StageKind stage, to_enum(entry, kStageNames));
    FOVEA_TRY(check_stage(entry, kinds, stage));
    kinds.push_back(stage);
  }
  stages = std::move(kinds);
  return Status::ok();
}

Status parse_classes(const MapReader& map, std::vector<int>& classes) {
  if (!map.has("classes")) return Status::ok();
  return read_value(map.field("classes"), {}, classes);
}

// The segment stage's settings. The blur kernel's limits are the segment stage's (its fused blur and
// composite); a flow without it keeps its task: section unchecked there.
Status parse_task(const MapReader& map, TaskConfig& task, bool segment_runs) {
  FOVEA_TRY(map.read("type", task.type, kTaskTypeNames));
  FOVEA_TRY(parse_classes(map, task.classes));
  if (!segment_runs) {
    FOVEA_TRY(map.read("blur_kernel", task.blur_kernel, std::numeric_limits<int>::min(),
                       std::numeric_limits<int>::max()));
  } else {
    FOVEA_TRY(map.read("blur_kernel", task.blur_kernel, 1, image::kMaxBlurCompositeKernelSize));
    if (task.blur_kernel % 2 == 0) {
      return map.field("blur_kernel").error("must be odd, got " + std::to_string(task.blur_kernel));
    }
  }
  FOVEA_TRY(map.read_optional("sigma", task.sigma, true));
  return map.read("refine_mask", task.refine_mask);
}

Status parse_video_sink(const Parser& parser, const MapReader& sinks, VideoSinkConfig& video) {
  const Field node = sinks.field("video");
  FOVEA_TRY(parser.check_map(node.node, node.path, {"output_dir", "mosaic", "codec", "preset", "qp"}));
  const MapReader map(parser, node.node, node.path);
  FOVEA_TRY(map.read_required("output_dir", video.output_dir));
  if (map.has("mosaic") && !map.field("mosaic").node.IsNull()) {
    MosaicConfig mosaic;
    FOVEA_TRY(parse_keys<MosaicConfig>(parser, map.field("mosaic").node, node.path + ".mosaic", kMosaicKeys,
                                       mosaic));
    video.mosaic = mosaic;
  }
  FOVEA_TRY(map.read("codec", video.codec, kCodecNames));
  FOVEA_TRY(map.read("preset", video.preset));
  if (std::find(std::begin(kPresets), std::end(kPresets), video.preset) == std::end(kPresets)) {
    return map.field("preset").expected("one of " + join_names(kPresets));
  }
  return map.read_optional("qp", video.qp, 0, 51);
}

// The keys one by one by the table, then together as the publisher checks them.
Status parse_mqtt_sink(const Parser& parser, const MapReader& sinks, MqttSinkConfig& mqtt) {
  const Field node = sinks.field("mqtt");
  FOVEA_TRY(parse_keys<MqttSinkConfig>(parser, node.node, node.path, kMqttKeys, mqtt));
  const Status status = with_sink_mqtt_keys(io::validate_mqtt_options(mqtt_options(mqtt)));
  return status.is_ok() ? status : parser.error(node.node, "", status.message());
}

// The keys one by one by the table, then together.
Status parse_stream_sink(const Parser& parser, const MapReader& sinks, StreamSinkConfig& stream) {
  const Field node = sinks.field("stream");
  FOVEA_TRY(parse_keys<StreamSinkConfig>(parser, node.node, node.path, kStreamKeys, stream));
  const MapReader map(parser, node.node, node.path);
  if (!stream.hls && !stream.rtsp) return parser.error(node.node, node.path, "give hls, rtsp or both");
  if (stream.rtsp && !stream.rtsp->starts_with("rtsp://") && !stream.rtsp->starts_with("rtsps://")) {
    return map.field("rtsp").expected("an rtsp:// or rtsps:// URL");
  }
  if (std::find(std::begin(kPresets), std::end(kPresets), stream.preset) == std::end(kPresets)) {
    return map.field("preset").expected("one of " + join_names(kPresets));
  }
  if (stream.reconnect_max_ms < stream.reconnect_min_ms) {
    return map.field("reconnect_max_ms").error("must be at least reconnect_min_ms");
  }
  return Status::ok();
}

Status parse_metadata_sink(const Parser& parser, const MapReader& sinks, MetadataSinkConfig& metadata) {
  const Field node = sinks.field("metadata");
  FOVEA_TRY(parser.check_map(node.node, node.path, {"path"}));
  return MapReader(parser, node.node, node.path).read_required("path", metadata.path);
}

// A sink section that is present but null (`video:` or `video: ~`) is off, as if absent.
template <typename Sink, typename ParseSink>
Status parse_optional_sink(const Parser& parser, const MapReader& sinks, std::string_view key,
                           std::optional<Sink>& out, ParseSink parse_sink) {
  if (!sinks.has(key) || sinks.field(key).node.IsNull()) {
    out.reset();
    return Status::ok();
  }
  Sink sink;
  FOVEA_TRY(parse_sink(parser, sinks, sink));
  out = std::move(sink);
  return Status::ok();
}

Status parse_sinks(const Parser& parser, const MapReader& map, SinksConfig& sinks) {
  FOVEA_TRY(parse_optional_sink(parser, map, "video", sinks.video, parse_video_sink));
  FOVEA_TRY(parse_optional_sink(parser, map, "metadata", sinks.metadata, parse_metadata_sink));
  FOVEA_TRY(parse_optional_sink(parser, map, "mqtt", sinks.mqtt, parse_mqtt_sink));
  FOVEA_TRY(parse_optional_sink(parser, map, "stream", sinks.stream, parse_stream_sink));
  FOVEA_TRY(parse_optional_sink(
      parser, map, "images", sinks.images, [](const Parser& p, const MapReader& m, ImageSinkConfig& images) {
        const Field node = m.field("images");
        return parse_keys<ImageSinkConfig>(p, node.node, node.path, kImageSinkKeys, images);
      }));
  // One mosaic per flow: the display stage tiles the frames once for every sink.
  if (sinks.video && sinks.video->mosaic && sinks.stream && sinks.stream->mosaic &&
      *sinks.video->mosaic != *sinks.stream->mosaic) {
    return parser.error(map.field("stream").node, "sinks.stream.mosaic",
                        "must be the same as sinks.video.mosaic (one mosaic per flow)");
  }
  return map.read("null", sinks.null);
}

Status check_some_sink(const Parser& parser, const YAML::Node& root, const SinksConfig& sinks) {
  if (sinks.video || sinks.metadata || sinks.mqtt || sinks.stream || sinks.images || sinks.null)
    return Status::ok();
  const YAML::Node where = root["sinks"] ? root["sinks"] : root;
  return parser.error(where, "sinks",
                      "no sink is enabled; set sinks.video, sinks.metadata, sinks.mqtt, sinks.stream, "
                      "sinks.images or sinks.null: true");
}

Status parse_stats(const MapReader& map, StatsConfig& stats) {
  FOVEA_TRY(map.read("progress", stats.progress));
  return map.read_optional("report", stats.report);
}

// Parses the section `key` of the root with `parse`, when present and not empty, after checking its
// keys.
template <typename Section, typename Parse>
Status parse_section(const Parser& parser, const YAML::Node& root, std::string_view key,
                     const std::vector<std::string_view>& known, Section& section, Parse parse) {
  const YAML::Node node = root[std::string(key)];
  if (!node || node.IsNull()) return Status::ok();  // an empty section (`mux:`) keeps the defaults
  FOVEA_TRY(parser.check_map(node, key, known));
  return parse(MapReader(parser, node, std::string(key)), section);
}

// A top-level section written as a table (detect, osd), when present and not empty.
template <typename Section>
Status parse_table_section(const Parser& parser, const YAML::Node& root, const std::string& key,
                           std::type_identity_t<std::span<const KeySpec<Section>>> keys, Section& section) {
  const std::optional<YAML::Node> node = lookup(root, key);
  if (!node || node->IsNull()) return Status::ok();
  return parse_keys<Section>(parser, *node, key, keys, section);
}

bool runs(const PipelineConfig& config, StageKind stage) {
  const std::vector<StageKind> stages = stages_of(config);
  return std::find(stages.begin(), stages.end(), stage) != stages.end();
}

// detect.model names a model, and the detect stage's model says how its outputs read.
Status check_detect_model(const Parser& parser, const YAML::Node& root, const PipelineConfig& config,
                          const std::vector<ModelSite>& sites) {
  const ModelConfig* model = find_model(config, config.detect.model);
  if (model == nullptr) {
    const std::optional<YAML::Node> detect = lookup(root, "detect");
    std::vector<std::string_view> names;
    for (const ModelConfig& entry : config.models) names.push_back(entry.name);
    return Field{parser, *lookup(*detect, "model"), "detect.model"}.error(
        "no model is named '" + config.detect.model + "' (the models: " + join_names(names) + ")");
  }
  if (!runs(config, StageKind::kDetect) || model->parser) return Status::ok();
  const ModelSite& site = sites[static_cast<std::size_t>(model - config.models.data())];
  return parser.error(
      site.node, site.path + ".parser",
      "the detect stage runs this model: give its parser, one of " + join_names(detect_parser_names()));
}

// classify_frames.model names a model.
Status check_classify_frames_model(const Parser& parser, const YAML::Node& root,
                                   const PipelineConfig& config) {
  if (find_model(config, config.classify_frames.model) != nullptr) return Status::ok();
  std::vector<std::string_view> names;
  for (const ModelConfig& entry : config.models) names.push_back(entry.name);
  return Field{parser, *lookup(*lookup(root, "classify_frames"), "model"), "classify_frames.model"}.error(
      "no model is named '" + config.classify_frames.model + "' (the models: " + join_names(names) + ")");
}

// The tracker's parameters together (min_score <= high_score), named by the track section.
Status check_track(const Parser& parser, const YAML::Node& root, const TrackConfig& track) {
  const Status status = track::validate_tracker_params(tracker_params(track));
  if (status.is_ok()) return Status::ok();
  return parser.error(*lookup(root, "track"), "track", status.message());
}

// `secondary:`, a list of classifiers, each naming a model.
Status parse_secondary(const Parser& parser, const YAML::Node& root, const std::vector<ModelConfig>& models,
                       std::vector<SecondaryConfig>& secondary) {
  const std::optional<YAML::Node> node = lookup(root, "secondary");
  if (!node || node->IsNull()) return Status::ok();
  const Field list{parser, *node, "secondary"};
  if (!list.node.IsSequence()) return list.expected("a list of secondary models");
  std::vector<SecondaryConfig> entries(list.node.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Field entry = element(list, i);
    FOVEA_TRY(parse_keys<SecondaryConfig>(parser, entry.node, entry.path, kSecondaryKeys, entries[i]));
    const bool known = std::any_of(models.begin(), models.end(),
                                   [&](const ModelConfig& model) { return model.name == entries[i].model; });
    if (!known) {
      std::vector<std::string_view> names;
      for (const ModelConfig& model : models) names.push_back(model.name);
      return Field{parser, *lookup(entry.node, "model"), entry.path + ".model"}.error(
          "no model is named '" + entries[i].model + "' (the models: " + join_names(names) + ")");
    }
  }
  secondary = std::move(entries);
  return Status::ok();
}

// `images:` takes the place of `sources:`; `shard` reads as io::parse_shard has it.
Status parse_images(const Parser& parser, const YAML::Node& root, PipelineConfig& config) {
  const std::optional<YAML::Node> node = lookup(root, "images");
  if (!node || node->IsNull()) return Status::ok();
  ImagesConfig images;
  FOVEA_TRY(parse_keys<ImagesConfig>(parser, *node, "images", kImagesKeys, images));
  if (Result<io::Shard> shard = io::parse_shard(images.shard); !shard.is_ok()) {
    return Field{parser, *lookup(*node, "shard"), "images.shard"}.error(shard.status().message());
  }
  if (!config.sources.empty()) {
    return parser.error(*node, "images",
                        "an image flow reads files instead of video sources: give "
                        "`images:` or `sources:`, not both");
  }
  config.images = std::move(images);
  return Status::ok();
}

// What an image flow runs: one picture per frame (image2image), a label image per frame
// (segment), detections or classes; the video stages (track, classify on objects, osd) work on video
// frames.
Status check_image_flow_stages(const Parser& parser, const YAML::Node& root, const PipelineConfig& config) {
  const std::vector<StageKind> stages = stages_of(config);
  const std::optional<YAML::Node> where = lookup(root, config.stages.empty() ? "flow" : "stages");
  const YAML::Node& node = where ? *where : root;
  const std::string path = config.stages.empty() ? "flow" : "stages";
  if (!config.images) {
    if (runs(config, StageKind::kImage2Image))
      return parser.error(node, path, "the image2image stage needs an image flow: give `images:` inputs");
    return Status::ok();
  }
  const bool single = stages.size() == 1 && stages[0] != StageKind::kDetect;
  // The detection preset's osd stage draws nothing unless osd.enabled.
  const bool detect =
      stages == std::vector<StageKind>{StageKind::kDetect} ||
      (stages == std::vector<StageKind>{StageKind::kDetect, StageKind::kOsd} && !config.osd.enabled);
  if (!single && !detect) {
    return parser.error(node, path,
                        "an image flow runs `flow: image2image`, `segmentation`, `classification` or "
                        "`detection` without the osd (`stages: [detect]`); track, classify and osd work "
                        "on video sources");
  }
  const bool pictures = runs(config, StageKind::kImage2Image) || runs(config, StageKind::kSegment);
  if (!pictures && config.sinks.images) {
    return parser.error(root["sinks"], "sinks.images",
                        "writes the image2image stage's pictures or the segment stage's label images; "
                        "this flow has none (use sinks.metadata)");
  }
  if (runs(config, StageKind::kSegment) && config.sinks.images &&
      config.sinks.images->format != ImageOutputFormat::kPng) {
    const std::optional<YAML::Node> format = lookup(*lookup(*lookup(root, "sinks"), "images"), "format");
    return Field{parser, format ? *format : root["sinks"], "sinks.images.format"}.error(
        "segmentation writes label images, a class index per pixel, as PNG: JPEG's lossy compression "
        "would change the indices");
  }
  if (config.sinks.video || config.sinks.stream) {
    return parser.error(root["sinks"], config.sinks.video ? "sinks.video" : "sinks.stream",
                        "an image flow writes sinks.images and sinks.metadata, not video");
  }
  return Status::ok();
}

// skip_untracked without a tracker would classify nothing: every object is untracked.
Status check_skip_untracked(const Parser& parser, const YAML::Node& root, const PipelineConfig& config) {
  if (runs(config, StageKind::kTrack)) return Status::ok();
  for (std::size_t i = 0; i < config.secondary.size(); ++i) {
    if (!config.secondary[i].skip_untracked) continue;
    const std::string path = "secondary." + std::to_string(i) + ".skip_untracked";
    const std::optional<YAML::Node> entry = lookup(root, "secondary");
    const std::optional<YAML::Node> key =
        entry && entry->IsSequence() ? lookup((*entry)[i], "skip_untracked") : std::nullopt;
    return parser.error(key ? *key : root, path,
                        "needs the track stage (track.enabled: true): without a tracker no object has a "
                        "track, and nothing would be classified");
  }
  return Status::ok();
}

// The stages a flow runs, as `stages:` would list them.
std::string stage_list(const PipelineConfig& config) {
  std::string list;
  for (StageKind stage : stages_of(config)) {
    list += (list.empty() ? "" : ", ") + std::string(enum_name(kStageNames, stage));
  }
  return "[" + list + "]";
}

// track.enabled and secondary ask for the stages that work on the detect stage's objects; where the
// flow's stages leave those out (a segmentation flow, or `stages:` without them) the keys would be
// ignored with nothing said.
Status check_object_stages_run(const Parser& parser, const YAML::Node& root, const PipelineConfig& config) {
  const auto refuse = [&](const char* section, const char* key, const std::string& path,
                          const std::string& what) {
    const std::optional<YAML::Node> node = lookup(root, section);
    const std::optional<YAML::Node> entry = node && key != nullptr ? lookup(*node, key) : node;
    return parser.error(
        entry ? *entry : root, path,
        "the " + what + " stage does not run in this flow (its stages: " + stage_list(config) +
            "): it works on the detect stage's objects (flow: detection, or `stages:` listing " + what +
            " after detect)");
  };
  if (config.track.enabled && !runs(config, StageKind::kTrack))
    return refuse("track", "enabled", "track.enabled", "track");
  if (!config.secondary.empty() && !runs(config, StageKind::kClassify))
    return refuse("secondary", nullptr, "secondary", "classify");
  return Status::ok();
}

// Blurred classes are the osd's to blur: without it drawing, the boxes the key asks to hide would be
// written as they are, with nothing said.
Status check_blur_needs_osd(const Parser& parser, const YAML::Node& root, const PipelineConfig& config) {
  if (config.osd.blur_classes.empty() || (runs(config, StageKind::kOsd) && config.osd.enabled)) {
    return Status::ok();
  }
  const std::optional<YAML::Node> osd = lookup(root, "osd");
  const std::optional<YAML::Node> key = osd ? lookup(*osd, "blur_classes") : std::nullopt;
  return parser.error(key ? *key : root, "osd.blur_classes",
                      "needs the osd to draw (osd.enabled: true with an osd stage; `fovea detect --osd`): "
                      "without it nothing is blurred");
}

Status check_classify_has_models(const Parser& parser, const YAML::Node& root, const PipelineConfig& config) {
  if (!runs(config, StageKind::kClassify) || !config.secondary.empty()) return Status::ok();
  const std::optional<YAML::Node> stages = lookup(root, "stages");
  return parser.error(stages ? *stages : root, "secondary",
                      "the classify stage runs the secondary models: list at least one");
}

Result<PipelineConfig> parse_tree(const Parser& parser, const YAML::Node& root) {
  if (root.IsNull()) return parser.error(root, "", "the configuration is empty");
  FOVEA_TRY(parser.check_map(root, "",
                             {"sources", "images", "mux", "model", "models", "flow", "stages", "task",
                              "detect", "classify_frames", "track", "secondary", "osd", "sinks", "stats"}));
  PipelineConfig config;
  FOVEA_TRY(parse_sources(parser, root, config.sources));
  FOVEA_TRY(parse_images(parser, root, config));
  FOVEA_TRY(parse_section(
      parser, root, "mux",
      {"batch_size", "width", "height", "push_timeout_us", "max_frames_per_source", "live", "source_queue"},
      config.mux, parse_mux));
  std::vector<ModelSite> model_sites;
  FOVEA_TRY(parse_models(parser, root, config.models, model_sites));
  if (const std::optional<YAML::Node> flow = lookup(root, "flow")) {
    FOVEA_ASSIGN_OR_RETURN(config.flow, to_enum(Field{parser, *flow, "flow"}, kFlowNames));
  }
  FOVEA_TRY(parse_stages(parser, root, config.stages));
  const bool segment_runs = runs(config, StageKind::kSegment);
  FOVEA_TRY(parse_section(parser, root, "task", {"type", "classes", "blur_kernel", "sigma", "refine_mask"},
                          config.task, [segment_runs](const MapReader& map, TaskConfig& task) {
                            return parse_task(map, task, segment_runs);
                          }));
  FOVEA_TRY(parse_table_section<DetectConfig>(parser, root, "detect", kDetectKeys, config.detect));
  FOVEA_TRY(check_detect_model(parser, root, config, model_sites));
  FOVEA_TRY(parse_table_section<ClassifyFramesConfig>(parser, root, "classify_frames", kClassifyFramesKeys,
                                                      config.classify_frames));
  FOVEA_TRY(check_classify_frames_model(parser, root, config));
  FOVEA_TRY(parse_table_section<TrackConfig>(parser, root, "track", kTrackKeys, config.track));
  if (lookup(root, "track")) FOVEA_TRY(check_track(parser, root, config.track));
  FOVEA_TRY(parse_secondary(parser, root, config.models, config.secondary));
  FOVEA_TRY(check_classify_has_models(parser, root, config));
  FOVEA_TRY(check_skip_untracked(parser, root, config));
  FOVEA_TRY(check_object_stages_run(parser, root, config));
  FOVEA_TRY(parse_table_section<OsdConfig>(parser, root, "osd", kOsdKeys, config.osd));
  FOVEA_TRY(check_blur_needs_osd(parser, root, config));
  FOVEA_TRY(parse_section(
      parser, root, "sinks", {"video", "metadata", "mqtt", "stream", "images", "null"}, config.sinks,
      [&parser](const MapReader& map, SinksConfig& sinks) { return parse_sinks(parser, map, sinks); }));
  FOVEA_TRY(check_some_sink(parser, root, config.sinks));
  FOVEA_TRY(check_image_flow_stages(parser, root, config));
  FOVEA_TRY(parse_section(parser, root, "stats", {"progress", "report"}, config.stats, parse_stats));
  return config;
}

// yaml-cpp reports through exceptions; they stop here.
Result<YAML::Node> load_yaml(std::string_view text, std::string_view source_name) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    std::string message(source_name);
    if (!e.mark.is_null()) {
      message += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    }
    return Status(StatusCode::kInvalidArgument, message + ": malformed YAML: " + e.msg);
  }
}

template <typename E, std::size_t N>
YAML::Node enum_node(const EnumName<E> (&names)[N], E value) {
  return YAML::Node(std::string(enum_name(names, value)));
}

YAML::Node to_tree(const PipelineConfig& config) {
  YAML::Node root;
  root["sources"] = YAML::Node(YAML::NodeType::Sequence);
  for (const SourceConfig& source : config.sources) root["sources"].push_back(source_node(source));
  root["images"] = config.images ? write_keys<ImagesConfig>(kImagesKeys, *config.images)
                                 : YAML::Node(YAML::NodeType::Null);
  YAML::Node mux = root["mux"];
  mux["batch_size"] = config.mux.batch_size;
  mux["width"] = to_node(config.mux.width);
  mux["height"] = to_node(config.mux.height);
  mux["push_timeout_us"] = to_node(config.mux.push_timeout_us);
  mux["max_frames_per_source"] = to_node(config.mux.max_frames_per_source);
  mux["live"] = to_node(config.mux.live);
  mux["source_queue"] = config.mux.source_queue;
  root["models"] = YAML::Node(YAML::NodeType::Sequence);
  for (const ModelConfig& model : config.models)
    root["models"].push_back(write_keys<ModelConfig>(kModelKeys, model));
  root["flow"] = enum_node(kFlowNames, config.flow);
  root["stages"] = YAML::Node(YAML::NodeType::Sequence);
  for (const StageKind stage : config.stages) root["stages"].push_back(enum_node(kStageNames, stage));
  YAML::Node task = root["task"];
  task["type"] = enum_node(kTaskTypeNames, config.task.type);
  task["classes"] = to_node(config.task.classes);
  task["blur_kernel"] = config.task.blur_kernel;
  task["sigma"] = to_node(config.task.sigma);
  task["refine_mask"] = config.task.refine_mask;
  root["detect"] = write_keys<DetectConfig>(kDetectKeys, config.detect);
  root["classify_frames"] = write_keys<ClassifyFramesConfig>(kClassifyFramesKeys, config.classify_frames);
  root["track"] = write_keys<TrackConfig>(kTrackKeys, config.track);
  root["secondary"] = YAML::Node(YAML::NodeType::Sequence);
  for (const SecondaryConfig& entry : config.secondary)
    root["secondary"].push_back(write_keys<SecondaryConfig>(kSecondaryKeys, entry));
  root["osd"] = write_keys<OsdConfig>(kOsdKeys, config.osd);
  YAML::Node sinks = root["sinks"];
  sinks["video"] = YAML::Node(YAML::NodeType::Null);
  if (config.sinks.video) {
    sinks["video"]["output_dir"] = config.sinks.video->output_dir;
    sinks["video"]["mosaic"] = config.sinks.video->mosaic
                                   ? write_keys<MosaicConfig>(kMosaicKeys, *config.sinks.video->mosaic)
                                   : YAML::Node(YAML::NodeType::Null);
    sinks["video"]["codec"] = enum_node(kCodecNames, config.sinks.video->codec);
    sinks["video"]["preset"] = config.sinks.video->preset;
    sinks["video"]["qp"] = to_node(config.sinks.video->qp);
  }
  sinks["metadata"] = YAML::Node(YAML::NodeType::Null);
  if (config.sinks.metadata) sinks["metadata"]["path"] = config.sinks.metadata->path;
  sinks["mqtt"] = config.sinks.mqtt ? write_keys<MqttSinkConfig>(kMqttKeys, *config.sinks.mqtt)
                                    : YAML::Node(YAML::NodeType::Null);
  sinks["stream"] = config.sinks.stream ? write_keys<StreamSinkConfig>(kStreamKeys, *config.sinks.stream)
                                        : YAML::Node(YAML::NodeType::Null);
  sinks["images"] = config.sinks.images ? write_keys<ImageSinkConfig>(kImageSinkKeys, *config.sinks.images)
                                        : YAML::Node(YAML::NodeType::Null);
  sinks["null"] = config.sinks.null;
  YAML::Node stats = root["stats"];
  stats["progress"] = config.stats.progress;
  stats["report"] = to_node(config.stats.report);
  return root;
}

bool is_index(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The node at `segment` under `parent`, created when absent; the index one past a list's end
// appends an entry. Handles are rebound with reset(): assigning one yaml-cpp node to another
// would overwrite the first node's contents instead.
Result<YAML::Node> child(YAML::Node& parent, std::string_view segment, std::string_view path) {
  if (!parent.IsSequence()) {
    YAML::Node node;
    node.reset(parent[std::string(segment)]);
    return node;
  }
  if (!is_index(segment)) {
    return make_error(StatusCode::kInvalidArgument, std::string(path), ": expected a list index, got '",
                      std::string(segment), "'");
  }
  const std::size_t index = std::stoul(std::string(segment));
  if (index > parent.size()) {
    return make_error(StatusCode::kInvalidArgument, std::string(path), ": index ", std::string(segment),
                      " is past the end of the list (the next new entry is ", std::to_string(parent.size()),
                      ")");
  }
  if (index == parent.size()) parent.push_back(YAML::Node(YAML::NodeType::Map));
  YAML::Node node;
  node.reset(parent[index]);
  return node;
}

std::vector<std::string_view> split_path(std::string_view key) {
  std::vector<std::string_view> segments;
  std::size_t begin = 0;
  while (true) {
    const std::size_t dot = key.find('.', begin);
    segments.push_back(
        key.substr(begin, dot == std::string_view::npos ? std::string_view::npos : dot - begin));
    if (dot == std::string_view::npos) return segments;
    begin = dot + 1;
  }
}

// Writes `value` at the dotted `key` of `root`.
Status set_path(YAML::Node& root, std::string_view key, const YAML::Node& value) {
  YAML::Node node;
  node.reset(root);
  std::string path;
  for (const std::string_view segment : split_path(key)) {
    if (segment.empty())
      return make_error(StatusCode::kInvalidArgument, "'", std::string(key), "': empty key");
    if (node.IsScalar()) {
      return make_error(StatusCode::kInvalidArgument, path, " holds a value, not a map or a list");
    }
    path = join_path(path, segment);
    FOVEA_ASSIGN_OR_RETURN(YAML::Node next, child(node, segment, path));
    node.reset(next);
  }
  node = value;
  return Status::ok();
}

// `model.X`, the key of the lone `model:` that users' scripts set, is `models.0.X`: the tree
// apply_override edits is the dump's, which always writes `models:`.
std::string with_models_path(std::string_view key) {
  constexpr std::string_view kLone = "model";
  if (key.starts_with(kLone) && (key.size() == kLone.size() || key[kLone.size()] == '.')) {
    return "models.0" + std::string(key.substr(kLone.size()));
  }
  return std::string(key);
}

// yaml-cpp reports through exceptions; none leaves this file.
template <typename Function>
auto guarded(std::string_view source_name, Function function) -> decltype(function()) {
  try {
    return function();
  } catch (const YAML::Exception& e) {
    return make_error(StatusCode::kInternal, std::string(source_name), ": yaml-cpp: ", e.what());
  }
}

}  // namespace

std::vector<StageKind> stages_of(const PipelineConfig& config) {
  if (!config.stages.empty()) return config.stages;
  switch (config.flow) {
    case FlowKind::kSegmentation: return {StageKind::kSegment};
    case FlowKind::kImage2Image: return {StageKind::kImage2Image};
    case FlowKind::kClassification: return {StageKind::kClassifyFrames};
    case FlowKind::kDetection: {
      std::vector<StageKind> stages = {StageKind::kDetect};
      if (config.track.enabled) stages.push_back(StageKind::kTrack);
      if (!config.secondary.empty()) stages.push_back(StageKind::kClassify);
      stages.push_back(StageKind::kOsd);
      return stages;
    }
  }
  FOVEA_CHECK_MSG(false, "a flow preset has no stages");
}

track::TrackerParams tracker_params(const TrackConfig& track) {
  track::TrackerParams params = track::default_tracker_params(track.tracker);
  params.match_iou = track.match_iou.value_or(params.match_iou);
  params.low_match_iou = track.low_match_iou.value_or(params.low_match_iou);
  params.tentative_match_iou = track.tentative_match_iou.value_or(params.tentative_match_iou);
  params.min_score = track.min_score.value_or(params.min_score);
  params.high_score = track.high_score.value_or(params.high_score);
  params.new_track_score = track.new_track_score.value_or(params.new_track_score);
  params.min_hits = track.min_hits.value_or(params.min_hits);
  params.max_age = track.max_age.value_or(params.max_age);
  return params;
}

const ModelConfig* find_model(const PipelineConfig& config, std::string_view name) {
  if (name.empty()) return config.models.empty() ? nullptr : &config.models.front();
  const auto found = std::find_if(config.models.begin(), config.models.end(),
                                  [name](const ModelConfig& model) { return model.name == name; });
  return found == config.models.end() ? nullptr : &*found;
}

std::vector<SchemaKey> schema_keys() {
  std::vector<SchemaKey> keys;
  append_schema<ModelConfig>("models[].", kModelKeys, keys);
  append_schema<DetectConfig>("detect.", kDetectKeys, keys);
  append_schema<ClassifyFramesConfig>("classify_frames.", kClassifyFramesKeys, keys);
  append_schema<TrackConfig>("track.", kTrackKeys, keys);
  append_schema<SecondaryConfig>("secondary[].", kSecondaryKeys, keys);
  append_schema<OsdConfig>("osd.", kOsdKeys, keys);
  append_schema<MosaicConfig>("sinks.video.mosaic.", kMosaicKeys, keys);
  append_schema<MqttSinkConfig>("sinks.mqtt.", kMqttKeys, keys);
  append_schema<ImagesConfig>("images.", kImagesKeys, keys);
  append_schema<ImageSinkConfig>("sinks.images.", kImageSinkKeys, keys);
  append_schema<StreamSinkConfig>("sinks.stream.", kStreamKeys, keys);
  return keys;
}

io::MqttOptions mqtt_options(const MqttSinkConfig& config) {
  return {.host = config.host,
          .port = config.port,
          .client_id = config.client_id,
          .qos = config.qos,
          .keepalive_s = config.keepalive_s,
          .max_queued_messages = static_cast<std::size_t>(std::max(config.max_queued_messages, 0)),
          .reconnect_min = std::chrono::milliseconds(config.reconnect_min_ms),
          .reconnect_max = std::chrono::milliseconds(config.reconnect_max_ms),
          .username = config.username,
          .password = config.password};
}

Status with_sink_mqtt_keys(const Status& status) {
  if (status.is_ok()) return status;
  constexpr std::string_view kIoKey = "mqtt.";
  std::string message = status.message();
  // A key starts the message or a word; a host name in quotes ('mqtt.example.com') is left alone.
  for (std::size_t at = message.find(kIoKey); at != std::string::npos; at = message.find(kIoKey, at + 1)) {
    if (at == 0 || message[at - 1] == ' ' || message[at - 1] == '(') message.insert(at, "sinks.");
  }
  return Status(status.code(), std::move(message));
}

Result<PipelineConfig> parse_config(std::string_view text, std::string_view source_name) {
  FOVEA_ASSIGN_OR_RETURN(const YAML::Node root, load_yaml(text, source_name));
  return guarded(source_name, [&] { return parse_tree(Parser(source_name, true), root); });
}

Result<SourceConfig> parse_source_config(std::string_view text, std::string_view source_name) {
  FOVEA_ASSIGN_OR_RETURN(const YAML::Node node, load_yaml(text, source_name));
  return guarded(source_name, [&]() -> Result<SourceConfig> {
    SourceConfig source;
    // No marks: the text is one request, the key path says enough ("source: unknown key 'uri2'").
    FOVEA_TRY(parse_source(Parser(source_name, false), node, "", source));
    return source;
  });
}

namespace {

// A relative path in a file means "next to the file", wherever fovea is started from; URLs
// (rtsp://, http://, ...) and absolute paths stay as written.
void resolve_from(const std::filesystem::path& folder, std::string& path) {
  if (path.empty() || path.find("://") != std::string::npos) return;
  const std::filesystem::path given(path);
  if (given.is_relative()) path = (folder / given).lexically_normal().string();
}

}  // namespace

Result<PipelineConfig> load_config(const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const std::string text, read_regular_file(path, "configuration", kMaxConfigBytes));
  FOVEA_ASSIGN_OR_RETURN(PipelineConfig config, parse_config(text, path));
  config.file = path;
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  for (SourceConfig& source : config.sources) resolve_from(folder, source.uri);
  for (ModelConfig& model : config.models) {
    resolve_from(folder, model.path);
    if (model.engine_cache) resolve_from(folder, *model.engine_cache);
    if (model.labels) resolve_from(folder, *model.labels);
    if (model.calibration) resolve_from(folder, *model.calibration);
  }
  if (config.sinks.video) resolve_from(folder, config.sinks.video->output_dir);
  if (config.sinks.metadata) resolve_from(folder, config.sinks.metadata->path);
  if (config.sinks.images) resolve_from(folder, config.sinks.images->output_dir);
  if (config.images) {
    for (std::string& input : config.images->inputs) resolve_from(folder, input);
  }
  if (config.sinks.stream && config.sinks.stream->hls) resolve_from(folder, *config.sinks.stream->hls);
  if (config.stats.report) resolve_from(folder, *config.stats.report);
  return config;
}

Status apply_overrides(PipelineConfig& config, std::span<const std::string> assignments) {
  if (assignments.empty()) return Status::ok();
  std::string source;
  for (const std::string& assignment : assignments)
    source += (source.empty() ? "--set " : " --set ") + assignment;
  // Every override goes into the tree first and the tree is read once, so values that are only
  // valid together (reconnect_initial with reconnect_max, a new model's path and name) can be set
  // together; each is typed and checked exactly like the file.
  FOVEA_ASSIGN_OR_RETURN(
      PipelineConfig updated, guarded(source, [&]() -> Result<PipelineConfig> {
        YAML::Node root = to_tree(config);
        for (const std::string& assignment : assignments) {
          const std::string one = "--set " + assignment;
          const std::size_t equals = assignment.find('=');
          if (equals == std::string::npos || equals == 0) {
            return make_error(StatusCode::kInvalidArgument, one,
                              ": expected key=value (e.g. mux.batch_size=4)");
          }
          const std::string key = with_models_path(std::string_view(assignment).substr(0, equals));
          FOVEA_ASSIGN_OR_RETURN(const YAML::Node value,
                                 load_yaml(std::string_view(assignment).substr(equals + 1), one));
          if (Status status = set_path(root, key, value); !status.is_ok()) {
            return status.with_context(one);
          }
        }
        return parse_tree(Parser(source, false), root);
      }));
  updated.file = std::move(config.file);  // not in the tree
  config = std::move(updated);
  return Status::ok();
}

Status apply_override(PipelineConfig& config, std::string_view assignment) {
  const std::string one(assignment);
  return apply_overrides(config, std::span<const std::string>(&one, 1));
}

std::string dump_config(const PipelineConfig& config) {
  YAML::Emitter emitter;
  emitter << to_tree(config);
  return std::string(emitter.c_str()) + "\n";
}

Result<PipelineConfig> check_config(const PipelineConfig& config, const KeyNamer& name_key) {
  // The tree the file would hold, read by the file's own parser: one set of checks for both.
  FOVEA_ASSIGN_OR_RETURN(PipelineConfig checked, guarded(name_key(""), [&] {
                           return parse_tree(Parser(name_key), to_tree(config));
                         }));
  checked.file = config.file;  // not in the tree
  return checked;
}

std::span<const std::string_view> encoder_presets() {
  return kPresets;
}

Result<PipelineConfig> with_frame_size(PipelineConfig config, const std::atomic<bool>* cancel) {
  struct Probed {
    std::string uri;
    int width = 0;
    int height = 0;
  };
  if (config.mux.width.has_value() != config.mux.height.has_value()) {
    return make_error(StatusCode::kInvalidArgument, config.mux.width ? "mux.width" : "mux.height",
                      ": mux.width and mux.height go together; give both or neither");
  }
  if (config.sources.empty() && !config.mux.width) {
    return make_error(StatusCode::kInvalidArgument,
                      "mux.width and mux.height: a flow without sources (fovea serve takes them at run "
                      "time) needs the frame size from these keys");
  }
  std::vector<Probed> probed;
  std::optional<Status> first_error;
  for (const SourceConfig& source : config.sources) {
    Result<std::unique_ptr<io::Demuxer>> demuxer = io::Demuxer::open(source.uri, {.cancel = cancel});
    if (!demuxer.is_ok()) {
      if (demuxer.status().code() == StatusCode::kCancelled) return demuxer.status();
      if (!first_error) first_error = demuxer.status();
      continue;
    }
    const io::StreamInfo& info = (*demuxer)->info();
    probed.push_back({source.uri, info.width / 2 * 2, info.height / 2 * 2});
  }
  const auto size_text = [](int width, int height) { return fmt::format("{}x{}", width, height); };
  if (config.mux.width && config.mux.height) {
    for (const Probed& source : probed) {
      if (source.width != *config.mux.width || source.height != *config.mux.height) {
        log_info("mux: {} is {}; its frames are scaled to {}, the size asked for", source.uri,
                 size_text(source.width, source.height), size_text(*config.mux.width, *config.mux.height));
      }
    }
    return config;
  }
  if (probed.empty()) {  // there are sources, and each failed to open
    return make_error(StatusCode::kNotFound, "mux: no source could be opened to learn the frame size from (",
                      first_error->message(), ")");
  }
  const Probed& first = probed.front();
  config.mux.width = first.width;
  config.mux.height = first.height;
  std::string others;
  for (const Probed& source : probed) {
    if (source.width != first.width || source.height != first.height) {
      others += fmt::format("{}{} is {}", others.empty() ? "" : ", ", source.uri,
                            size_text(source.width, source.height));
    }
  }
  if (!others.empty()) {
    log_info(
        "mux: the sources' sizes differ ({}): their frames are scaled to the first source's size, {} "
        "({}); mux.width and mux.height (segment: --frame-size) choose another",
        others, size_text(first.width, first.height), first.uri);
  }
  return config;
}

}  // namespace fovea::pipeline
