#include "pipeline/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <utility>

#include "core/check.h"
#include "core/log.h"
#include "image/blur.h"
#include "image/blur_composite.h"
#include "io/demuxer.h"

namespace fovea::pipeline {
namespace {

// Batches beyond this are typos (an extra digit), not plans: the scaling runs go to 16 sources.
constexpr int kMaxBatchSize = 1024;
// The largest frame side NVDEC and NVENC handle (HEVC/AV1); no source or model goes beyond it.
constexpr int kMaxFrameSide = 8192;

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

constexpr EnumName<io::DecoderBackend> kDecoderNames[] = {{io::DecoderBackend::kAuto, "auto"},
                                                          {io::DecoderBackend::kCpu, "cpu"},
                                                          {io::DecoderBackend::kNvdec, "nvdec"}};
constexpr EnumName<runtime::Precision> kPrecisionNames[] = {{runtime::Precision::kFloat32, "fp32"},
                                                            {runtime::Precision::kFloat16, "fp16"}};
constexpr EnumName<ColorOrder> kColorOrderNames[] = {{ColorOrder::kRgb, "rgb"}, {ColorOrder::kBgr, "bgr"}};
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
std::optional<std::string_view> closest_key(std::string_view key,
                                            std::initializer_list<std::string_view> known) {
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
                   std::initializer_list<std::string_view> known) const {
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

  Status read_optional(std::string_view key, std::optional<int>& out, int min, int max) const {
    if (!has(key)) return Status::ok();
    if (field(key).node.IsNull()) {
      out.reset();
      return Status::ok();
    }
    int value = 0;
    FOVEA_TRY(read(key, value, min, max));
    out = value;
    return Status::ok();
  }

  // `strictly_positive`: 0 is out of range too (durations, sigmas, std).
  Status read(std::string_view key, double& out, bool strictly_positive) const {
    if (!has(key)) return Status::ok();
    return read_number(field(key), out, strictly_positive);
  }

  Status read_optional(std::string_view key, std::optional<double>& out) const {
    if (!has(key)) return Status::ok();
    if (field(key).node.IsNull()) {
      out.reset();
      return Status::ok();
    }
    double value = 0.0;
    FOVEA_TRY(read(key, value, true));
    out = value;
    return Status::ok();
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

  Status read_optional(std::string_view key, std::optional<std::string>& out) const {
    if (!has(key)) return Status::ok();
    if (field(key).node.IsNull()) {
      out.reset();
      return Status::ok();
    }
    std::string value;
    FOVEA_TRY(read(key, value));
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

  // Exactly three numbers: one per channel. std entries must be positive (they divide).
  Status read(std::string_view key, std::array<float, 3>& out, bool strictly_positive) const {
    if (!has(key)) return Status::ok();
    const Field list = field(key);
    if (!list.node.IsSequence() || list.node.size() != out.size())
      return list.expected("a list of 3 numbers");
    std::array<float, 3> values{};
    for (std::size_t i = 0; i < values.size(); ++i) {
      double value = 0.0;
      FOVEA_TRY(read_number(element(list, i), value, strictly_positive));
      values[i] = static_cast<float>(value);
    }
    out = values;
    return Status::ok();
  }

 private:
  static Field element(const Field& list, std::size_t index) {
    return {list.parser, list.node[index], list.path + "." + std::to_string(index)};
  }

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

Status parse_source(const Parser& parser, const YAML::Node& node, const std::string& path,
                    SourceConfig& source) {
  FOVEA_TRY(parser.check_map(node, path, {"uri", "decoder", "loop", "start", "duration"}));
  const MapReader map(parser, node, path);
  FOVEA_TRY(map.read_required("uri", source.uri));
  FOVEA_TRY(map.read("decoder", source.decoder, kDecoderNames));
  FOVEA_TRY(map.read("loop", source.loop));
  FOVEA_TRY(map.read("start", source.start, false));
  return map.read_optional("duration", source.duration);
}

Status parse_sources(const Parser& parser, const YAML::Node& root, std::vector<SourceConfig>& sources) {
  if (!root["sources"]) return parser.missing(root, "sources");
  const Field list{parser, root["sources"], "sources"};
  if (!list.node.IsSequence()) return list.expected("a list of sources");
  if (list.node.size() == 0) return list.error("must list at least one source");
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
  FOVEA_TRY(map.read("push_timeout_us", mux.push_timeout_us, -1, std::numeric_limits<std::int64_t>::max()));
  FOVEA_TRY(map.read_optional("max_frames_per_source", mux.max_frames_per_source, 1, kMaxBatchSize));
  return map.read("live", mux.live);
}

Status parse_model(const MapReader& map, ModelConfig& model) {
  FOVEA_TRY(map.read_required("path", model.path));
  FOVEA_TRY(map.read_optional("input_name", model.input_name));
  FOVEA_TRY(map.read("precision", model.precision, kPrecisionNames));
  FOVEA_TRY(map.read("mean", model.mean, false));
  FOVEA_TRY(map.read("std", model.std, true));
  FOVEA_TRY(map.read("color_order", model.color_order, kColorOrderNames));
  FOVEA_TRY(map.read_optional("input_width", model.input_width, 1, kMaxFrameSide));
  FOVEA_TRY(map.read_optional("input_height", model.input_height, 1, kMaxFrameSide));
  if (model.input_width.has_value() != model.input_height.has_value()) {
    const std::string_view given = model.input_width ? "input_width" : "input_height";
    return map.field(given).error("input_width and input_height go together; give both or neither");
  }
  FOVEA_TRY(map.read_optional("engine_cache", model.engine_cache));
  return map.read("keep_aspect", model.keep_aspect);
}

Status parse_classes(const MapReader& map, std::vector<int>& classes) {
  if (!map.has("classes")) return Status::ok();
  const Field list = map.field("classes");
  if (!list.node.IsSequence()) return list.expected("a list of class ids");
  std::vector<int> values;
  for (std::size_t i = 0; i < list.node.size(); ++i) {
    const Field entry{list.parser, list.node[i], list.path + "." + std::to_string(i)};
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t value, to_integer(entry));
    if (value < 0 || value > std::numeric_limits<int>::max()) {
      return entry.error("must be a class id (0 or more), got " + std::to_string(value));
    }
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      return entry.error("class " + std::to_string(value) + " is listed twice");
    }
    values.push_back(static_cast<int>(value));
  }
  classes = std::move(values);
  return Status::ok();
}

Status parse_task(const MapReader& map, TaskConfig& task) {
  FOVEA_TRY(map.read("type", task.type, kTaskTypeNames));
  FOVEA_TRY(parse_classes(map, task.classes));
  FOVEA_TRY(map.read("blur_kernel", task.blur_kernel, 1, image::kMaxBlurCompositeKernelSize));
  if (task.blur_kernel % 2 == 0) {
    return map.field("blur_kernel").error("must be odd, got " + std::to_string(task.blur_kernel));
  }
  FOVEA_TRY(map.read_optional("sigma", task.sigma));
  return map.read("refine_mask", task.refine_mask);
}

Status parse_video_sink(const Parser& parser, const MapReader& sinks, VideoSinkConfig& video) {
  const Field node = sinks.field("video");
  FOVEA_TRY(parser.check_map(node.node, node.path, {"output_dir", "codec", "preset", "qp"}));
  const MapReader map(parser, node.node, node.path);
  FOVEA_TRY(map.read_required("output_dir", video.output_dir));
  FOVEA_TRY(map.read("codec", video.codec, kCodecNames));
  FOVEA_TRY(map.read("preset", video.preset));
  if (std::find(std::begin(kPresets), std::end(kPresets), video.preset) == std::end(kPresets)) {
    return map.field("preset").expected("one of " + join_names(kPresets));
  }
  return map.read_optional("qp", video.qp, 0, 51);
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
  return map.read("null", sinks.null);
}

Status check_some_sink(const Parser& parser, const YAML::Node& root, const SinksConfig& sinks) {
  if (sinks.video || sinks.metadata || sinks.null) return Status::ok();
  const YAML::Node where = root["sinks"] ? root["sinks"] : root;
  return parser.error(where, "sinks",
                      "no sink is enabled; set sinks.video, sinks.metadata or sinks.null: true");
}

Status parse_stats(const MapReader& map, StatsConfig& stats) {
  FOVEA_TRY(map.read("progress", stats.progress));
  return map.read_optional("report", stats.report);
}

// Parses the section `key` of the root with `parse`, when present and not empty, after checking its
// keys.
template <typename Section, typename Parse>
Status parse_section(const Parser& parser, const YAML::Node& root, std::string_view key,
                     std::initializer_list<std::string_view> known, Section& section, Parse parse) {
  const YAML::Node node = root[std::string(key)];
  if (!node || node.IsNull()) return Status::ok();  // an empty section (`mux:`) keeps the defaults
  FOVEA_TRY(parser.check_map(node, key, known));
  return parse(MapReader(parser, node, std::string(key)), section);
}

Result<PipelineConfig> parse_tree(const Parser& parser, const YAML::Node& root) {
  if (root.IsNull()) return parser.error(root, "", "the configuration is empty");
  FOVEA_TRY(parser.check_map(root, "", {"sources", "mux", "model", "task", "sinks", "stats"}));
  PipelineConfig config;
  FOVEA_TRY(parse_sources(parser, root, config.sources));
  FOVEA_TRY(
      parse_section(parser, root, "mux",
                    {"batch_size", "width", "height", "push_timeout_us", "max_frames_per_source", "live"},
                    config.mux, parse_mux));
  if (!root["model"] || root["model"].IsNull()) return parser.missing(root, "model.path");
  FOVEA_TRY(parse_section(parser, root, "model",
                          {"path", "input_name", "precision", "mean", "std", "color_order", "input_width",
                           "input_height", "keep_aspect", "engine_cache"},
                          config.model, parse_model));
  FOVEA_TRY(parse_section(parser, root, "task", {"type", "classes", "blur_kernel", "sigma", "refine_mask"},
                          config.task, parse_task));
  FOVEA_TRY(parse_section(
      parser, root, "sinks", {"video", "metadata", "null"}, config.sinks,
      [&parser](const MapReader& map, SinksConfig& sinks) { return parse_sinks(parser, map, sinks); }));
  FOVEA_TRY(check_some_sink(parser, root, config.sinks));
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

template <typename T>
YAML::Node optional_node(const std::optional<T>& value) {
  return value ? YAML::Node(*value) : YAML::Node(YAML::NodeType::Null);
}

YAML::Node to_tree(const PipelineConfig& config) {
  YAML::Node root;
  root["sources"] = YAML::Node(YAML::NodeType::Sequence);
  for (const SourceConfig& source : config.sources) {
    YAML::Node node;
    node["uri"] = source.uri;
    node["decoder"] = enum_node(kDecoderNames, source.decoder);
    node["loop"] = source.loop;
    node["start"] = source.start;
    node["duration"] = optional_node(source.duration);
    root["sources"].push_back(node);
  }
  YAML::Node mux = root["mux"];
  mux["batch_size"] = config.mux.batch_size;
  mux["width"] = optional_node(config.mux.width);
  mux["height"] = optional_node(config.mux.height);
  mux["push_timeout_us"] = config.mux.push_timeout_us;
  mux["max_frames_per_source"] = optional_node(config.mux.max_frames_per_source);
  mux["live"] = config.mux.live;
  YAML::Node model = root["model"];
  model["path"] = config.model.path;
  model["input_name"] = optional_node(config.model.input_name);
  model["precision"] = enum_node(kPrecisionNames, config.model.precision);
  model["mean"] = std::vector<float>(config.model.mean.begin(), config.model.mean.end());
  model["std"] = std::vector<float>(config.model.std.begin(), config.model.std.end());
  model["color_order"] = enum_node(kColorOrderNames, config.model.color_order);
  model["input_width"] = optional_node(config.model.input_width);
  model["input_height"] = optional_node(config.model.input_height);
  model["engine_cache"] = optional_node(config.model.engine_cache);
  model["keep_aspect"] = config.model.keep_aspect;
  YAML::Node task = root["task"];
  task["type"] = enum_node(kTaskTypeNames, config.task.type);
  task["classes"] = YAML::Node(YAML::NodeType::Sequence);
  for (const int class_id : config.task.classes) task["classes"].push_back(class_id);
  task["blur_kernel"] = config.task.blur_kernel;
  task["sigma"] = optional_node(config.task.sigma);
  task["refine_mask"] = config.task.refine_mask;
  YAML::Node sinks = root["sinks"];
  sinks["video"] = YAML::Node(YAML::NodeType::Null);
  if (config.sinks.video) {
    sinks["video"]["output_dir"] = config.sinks.video->output_dir;
    sinks["video"]["codec"] = enum_node(kCodecNames, config.sinks.video->codec);
    sinks["video"]["preset"] = config.sinks.video->preset;
    sinks["video"]["qp"] = optional_node(config.sinks.video->qp);
  }
  sinks["metadata"] = YAML::Node(YAML::NodeType::Null);
  if (config.sinks.metadata) sinks["metadata"]["path"] = config.sinks.metadata->path;
  sinks["null"] = config.sinks.null;
  YAML::Node stats = root["stats"];
  stats["progress"] = config.stats.progress;
  stats["report"] = optional_node(config.stats.report);
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

Result<PipelineConfig> parse_config(std::string_view text, std::string_view source_name) {
  FOVEA_ASSIGN_OR_RETURN(const YAML::Node root, load_yaml(text, source_name));
  return guarded(source_name, [&] { return parse_tree(Parser(source_name, true), root); });
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
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return make_error(StatusCode::kNotFound, path, ": cannot open the configuration (", std::strerror(errno),
                      ")");
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return make_error(StatusCode::kIoError, path, ": reading the configuration failed");
  FOVEA_ASSIGN_OR_RETURN(PipelineConfig config, parse_config(text.str(), path));
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  for (SourceConfig& source : config.sources) resolve_from(folder, source.uri);
  resolve_from(folder, config.model.path);
  if (config.model.engine_cache) resolve_from(folder, *config.model.engine_cache);
  if (config.sinks.video) resolve_from(folder, config.sinks.video->output_dir);
  if (config.sinks.metadata) resolve_from(folder, config.sinks.metadata->path);
  if (config.stats.report) resolve_from(folder, *config.stats.report);
  return config;
}

Status apply_override(PipelineConfig& config, std::string_view assignment) {
  const std::string source = "--set " + std::string(assignment);
  const std::size_t equals = assignment.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    return make_error(StatusCode::kInvalidArgument, source, ": expected key=value (e.g. mux.batch_size=4)");
  }
  const std::string_view key = assignment.substr(0, equals);
  FOVEA_ASSIGN_OR_RETURN(const YAML::Node value, load_yaml(assignment.substr(equals + 1), source));
  // The whole tree is read again, so an override is typed and checked exactly like the file.
  FOVEA_ASSIGN_OR_RETURN(PipelineConfig updated, guarded(source, [&]() -> Result<PipelineConfig> {
                           YAML::Node root = to_tree(config);
                           if (Status status = set_path(root, key, value); !status.is_ok()) {
                             return status.with_context(source);
                           }
                           return parse_tree(Parser(source, false), root);
                         }));
  config = std::move(updated);
  return Status::ok();
}

std::string dump_config(const PipelineConfig& config) {
  YAML::Emitter emitter;
  emitter << to_tree(config);
  return std::string(emitter.c_str()) + "\n";
}

Result<PipelineConfig> check_config(const PipelineConfig& config, const KeyNamer& name_key) {
  // The tree the file would hold, read by the file's own parser: one set of checks for both.
  return guarded(name_key(""), [&] { return parse_tree(Parser(name_key), to_tree(config)); });
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
    return make_error(StatusCode::kInvalidArgument, "sources: the flow needs at least one source");
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
