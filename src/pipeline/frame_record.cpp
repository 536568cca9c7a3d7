#include "pipeline/frame_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

namespace fovea::pipeline {
namespace {

// ---- Writing ----

// The buffer is sized once per record from these: the keys before "objects" with a short source
// name, and an object with a label, a track id and pixel coordinates (about 115 characters in a
// 100-object record with COCO-like labels). A secondary label or a long name costs a reallocation.
constexpr std::size_t kRecordHeadSize = 160;
constexpr std::size_t kObjectSize = 128;

void append(fmt::memory_buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

// The length of the well-formed UTF-8 sequence at text[at] (Unicode's table 3-7), 0 when there is
// none: JSON text must be UTF-8, and a source's name (a file name) need not be.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) -> unsigned {
    return at + i < text.size() ? static_cast<unsigned char>(text[at + i]) : 0u;
  };
  const unsigned lead = byte(0);
  std::size_t length = 0;
  unsigned second_low = 0x80;  // the second byte's range excludes overlong forms and surrogates
  unsigned second_high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_low = 0xA0;
    if (lead == 0xED) second_high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_low = 0x90;
    if (lead == 0xF4) second_high = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t i = 1; i < length; ++i) {
    const unsigned low = i == 1 ? second_low : 0x80u;
    const unsigned high = i == 1 ? second_high : 0xBFu;
    if (byte(i) < low || byte(i) > high) return 0;
  }
  return length;
}

// A JSON string: quotes and backslashes escaped, control characters as \u00XX, bytes that are not
// UTF-8 replaced by U+FFFD. Runs of characters that need nothing are copied whole.
void append_string(fmt::memory_buffer& out, std::string_view text) {
  out.push_back('"');
  std::size_t run = 0;  // where the run of characters copied as they are began
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t utf8_length = c >= 0x80 ? utf8_sequence_length(text, i) : 0;
    if (utf8_length > 0 || (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')) {
      i += std::max<std::size_t>(utf8_length, 1);
      continue;
    }
    append(out, text.substr(run, i - run));
    if (c >= 0x80) {
      append(out, "\\ufffd");
    } else if (c < 0x20) {
      fmt::format_to(fmt::appender(out), "\\u{:04x}", c);
    } else {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    }
    run = ++i;
  }
  append(out, text.substr(run));
  out.push_back('"');
}

// Numbers go through std::to_chars rather than fmt: the same shortest round-trip text with no
// format string to interpret, and a record is mostly numbers (a 100-object record took 19 us
// instead of 32 us on the development machine).
template <typename Integer>
void append_integer(fmt::memory_buffer& out, Integer value) {
  char text[24];  // an int64 has at most 20 characters
  const std::to_chars_result written = std::to_chars(std::begin(text), std::end(text), value);
  out.append(std::begin(text), written.ptr);
}

// The shortest text that reads back to the same value of the value's own type (std::to_chars
// without a precision), so a float32 gets float32 digits. Integral values keep a ".0" so that
// every reader (Python's json, for one) sees a float, as nlohmann::json writes doubles. Non-finite
// values have no JSON number: they are written as null.
template <typename Float>
void append_float(fmt::memory_buffer& out, Float value) {
  if (!std::isfinite(value)) {
    append(out, "null");
    return;
  }
  char text[32];  // the longest shortest double, "-2.2250738585072014e-308", has 24
  char* end = std::to_chars(std::begin(text), std::end(text), value).ptr;
  out.append(std::begin(text), end);
  if (std::find_if(std::begin(text), end, [](char c) { return c == '.' || c == 'e'; }) == end)
    append(out, ".0");
}

std::string_view label_of(std::span<const std::string> labels, int class_id) {
  const bool named = class_id >= 0 && static_cast<std::size_t>(class_id) < labels.size();
  return named ? std::string_view(labels[static_cast<std::size_t>(class_id)]) : std::string_view();
}

// An empty label (no label file, no line for the class, an empty line) is left out.
void append_label(fmt::memory_buffer& out, std::string_view label) {
  if (label.empty()) return;
  append(out, ",\"label\":");
  append_string(out, label);
}

void append_secondary(fmt::memory_buffer& out, const SecondaryLabel& secondary) {
  append(out, "{\"model\":");
  append_string(out, secondary.model);
  append(out, ",\"class_id\":");
  append_integer(out, secondary.class_id);
  append_label(out, secondary.label);
  append(out, ",\"score\":");
  append_float(out, secondary.score);
  out.push_back('}');
}

void append_class(fmt::memory_buffer& out, const ClassLabel& label) {
  append(out, "{\"class_id\":");
  append_integer(out, label.class_id);
  append_label(out, label.label);
  append(out, ",\"score\":");
  append_float(out, label.score);
  out.push_back('}');
}

void append_object(fmt::memory_buffer& out, const ObjectResult& object, std::span<const std::string> labels) {
  append(out, "{\"box\":[");
  const float corners[] = {object.box.x1, object.box.y1, object.box.x2, object.box.y2};
  for (std::size_t i = 0; i < std::size(corners); ++i) {
    if (i > 0) out.push_back(',');
    append_float(out, corners[i]);
  }
  append(out, "],\"class_id\":");
  append_integer(out, object.class_id);
  append_label(out, label_of(labels, object.class_id));
  append(out, ",\"score\":");
  append_float(out, object.score);
  if (object.track_id >= 0) {
    append(out, ",\"track_id\":");
    append_integer(out, object.track_id);
  }
  if (object.predicted) append(out, ",\"predicted\":true");
  if (!object.secondary.empty()) {
    append(out, ",\"secondary\":[");
    for (std::size_t i = 0; i < object.secondary.size(); ++i) {
      if (i > 0) out.push_back(',');
      append_secondary(out, object.secondary[i]);
    }
    out.push_back(']');
  }
  out.push_back('}');
}

// ---- Reading ----

using Json = nlohmann::json;

Status wrong_type(const std::string& path, std::string_view expected, const Json& value) {
  return make_error(StatusCode::kCorruptData, "metadata record: key '", path, "' must be ", expected,
                    ", not ", value.type_name());
}

Status out_of_range(const std::string& path, std::string_view range) {
  return make_error(StatusCode::kCorruptData, "metadata record: key '", path, "' must be ", range);
}

// One JSON object of the record with the keys its part of the schema allows, and the path that
// errors name its keys by.
class Fields {
 public:
  static Result<Fields> of(const Json& value, std::string path, std::span<const std::string_view> allowed) {
    if (!value.is_object()) return wrong_type(path, "an object", value);
    Fields fields(value, std::move(path));
    for (const auto& item : value.items()) {
      if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
        return make_error(StatusCode::kCorruptData, "metadata record: unknown key '", fields.path(item.key()),
                          "'");
      }
    }
    return fields;
  }

  bool has(std::string_view key) const { return object_->contains(key); }
  std::string path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }
  // Reads a required key with read_value(json, path).
  template <typename Read>
  auto read(std::string_view key, Read read_value) const -> decltype(read_value(Json(), std::string())) {
    const auto found = object_->find(key);
    if (found == object_->end()) {
      return make_error(StatusCode::kCorruptData, "metadata record: missing key '", path(key), "'");
    }
    return read_value(*found, path(key));
  }

 private:
  Fields(const Json& object, std::string path) : object_(&object), path_(std::move(path)) {}

  const Json* object_;
  std::string path_;  // "" for the record itself
};

// Every integer of the schema but pts_us counts from 0.
template <typename T>
Result<T> read_count(const Json& value, const std::string& path) {
  if (!value.is_number_integer()) return wrong_type(path, "an integer", value);
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() > kMax) {
    return out_of_range(path, fmt::format("an integer from 0 to {}", kMax));
  }
  return static_cast<T>(value.get<std::uint64_t>());
}

Result<std::optional<std::int64_t>> read_pts(const Json& value, const std::string& path) {
  if (value.is_null()) return std::optional<std::int64_t>();
  if (!value.is_number_integer()) return wrong_type(path, "an integer or null", value);
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax)) {
    return out_of_range(path, fmt::format("an integer up to {}", kMax));
  }
  return std::optional<std::int64_t>(value.get<std::int64_t>());
}

// Floats written as null (non-finite) read as NaN.
Result<double> read_double(const Json& value, const std::string& path) {
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!value.is_number()) return wrong_type(path, "a number or null", value);
  return value.get<double>();
}

// A float32 written as its shortest text reads back exactly through double: double's 53 bits are
// more than 2 * 24 + 2, so rounding to double and then to float agrees with rounding to float.
Result<float> read_float(const Json& value, const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const double wide, read_double(value, path));
  const auto narrow = static_cast<float>(wide);
  if (std::isfinite(wide) && !std::isfinite(narrow)) return out_of_range(path, "within float32's range");
  return narrow;
}

Result<std::string> read_string(const Json& value, const std::string& path) {
  if (!value.is_string()) return wrong_type(path, "a string", value);
  return value.get<std::string>();
}

Result<bool> read_bool(const Json& value, const std::string& path) {
  if (!value.is_boolean()) return wrong_type(path, "true or false", value);
  return value.get<bool>();
}

// read_element(json, path) for each element of an array.
template <typename Read>
auto read_array(const Json& value, const std::string& path, Read read_element)
    -> Result<std::vector<std::remove_cvref_t<decltype(*read_element(Json(), std::string()))>>> {
  using Element = std::remove_cvref_t<decltype(*read_element(Json(), std::string()))>;
  if (!value.is_array()) return wrong_type(path, "an array", value);
  std::vector<Element> elements;
  elements.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    FOVEA_ASSIGN_OR_RETURN(Element element, read_element(value[i], fmt::format("{}[{}]", path, i)));
    elements.push_back(std::move(element));
  }
  return elements;
}

Result<std::array<float, 4>> read_box(const Json& value, const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const std::vector<float> corners, read_array(value, path, read_float));
  if (corners.size() != 4) return out_of_range(path, "4 numbers (x1, y1, x2, y2)");
  return std::array<float, 4>{corners[0], corners[1], corners[2], corners[3]};
}

constexpr std::string_view kSecondaryKeys[] = {"model", "class_id", "label", "score"};

Result<SecondaryLabel> read_secondary(const Json& value, const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const Fields fields, Fields::of(value, path, kSecondaryKeys));
  SecondaryLabel secondary;
  FOVEA_ASSIGN_OR_RETURN(secondary.model, fields.read("model", read_string));
  FOVEA_ASSIGN_OR_RETURN(secondary.class_id, fields.read("class_id", read_count<int>));
  if (fields.has("label")) {
    FOVEA_ASSIGN_OR_RETURN(secondary.label, fields.read("label", read_string));
  }
  FOVEA_ASSIGN_OR_RETURN(secondary.score, fields.read("score", read_float));
  return secondary;
}

constexpr std::string_view kClassKeys[] = {"class_id", "label", "score"};

Result<ClassLabel> read_class(const Json& value, const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const Fields fields, Fields::of(value, path, kClassKeys));
  ClassLabel label;
  FOVEA_ASSIGN_OR_RETURN(label.class_id, fields.read("class_id", read_count<int>));
  if (fields.has("label")) {
    FOVEA_ASSIGN_OR_RETURN(label.label, fields.read("label", read_string));
  }
  FOVEA_ASSIGN_OR_RETURN(label.score, fields.read("score", read_float));
  return label;
}

Result<std::vector<ClassLabel>> read_classes(const Json& value, const std::string& path) {
  return read_array(value, path, read_class);
}

constexpr std::string_view kObjectKeys[] = {"box",      "class_id",  "label",    "score",
                                            "track_id", "predicted", "secondary"};

Result<ParsedObject> read_object(const Json& value, const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const Fields fields, Fields::of(value, path, kObjectKeys));
  ParsedObject object;
  FOVEA_ASSIGN_OR_RETURN(object.box, fields.read("box", read_box));
  FOVEA_ASSIGN_OR_RETURN(object.class_id, fields.read("class_id", read_count<int>));
  if (fields.has("label")) {
    FOVEA_ASSIGN_OR_RETURN(object.label, fields.read("label", read_string));
  }
  FOVEA_ASSIGN_OR_RETURN(object.score, fields.read("score", read_float));
  if (fields.has("track_id")) {
    FOVEA_ASSIGN_OR_RETURN(object.track_id, fields.read("track_id", read_count<std::int64_t>));
  }
  if (fields.has("predicted")) {
    FOVEA_ASSIGN_OR_RETURN(object.predicted, fields.read("predicted", read_bool));
    if (!object.predicted) return wrong_type(path + ".predicted", "true (or the key omitted)", false);
  }
  if (fields.has("secondary")) {
    const auto read_secondaries = [](const Json& array, const std::string& array_path) {
      return read_array(array, array_path, read_secondary);
    };
    FOVEA_ASSIGN_OR_RETURN(object.secondary, fields.read("secondary", read_secondaries));
  }
  return object;
}

Result<std::vector<ParsedObject>> read_objects(const Json& value, const std::string& path) {
  return read_array(value, path, read_object);
}

Result<double> read_fraction(const Json& value, const std::string& path) {
  FOVEA_ASSIGN_OR_RETURN(const double fraction, read_double(value, path));
  if (fraction < 0.0 || fraction > 1.0) return out_of_range(path, "a number from 0 to 1");
  return fraction;
}

constexpr std::string_view kRecordKeys[] = {"v",       "source",          "source_id", "frame",
                                            "pts_us",  "capture_time_us", "batch",     "inferred",
                                            "objects", "target_fraction", "classes"};

// A record holds its frame's results one way: objects (detection), target_fraction (segmentation)
// or classes (classification, from version 2).
Status read_results(const Fields& fields, ParsedFrameRecord& record) {
  constexpr std::string_view kResultKeys[] = {"objects", "target_fraction", "classes"};
  std::vector<std::string_view> present;
  for (const std::string_view key : kResultKeys) {
    if (fields.has(key)) present.push_back(key);
  }
  if (present.size() > 1) {
    return make_error(StatusCode::kCorruptData, "metadata record: both keys '", present[0], "' and '",
                      present[1], "'");
  }
  if (present.empty()) {
    return make_error(StatusCode::kCorruptData,
                      "metadata record: missing key 'objects' (or 'target_fraction' in segmentation "
                      "records, 'classes' in classification records)");
  }
  if (present[0] == "objects") {
    FOVEA_ASSIGN_OR_RETURN(record.objects, fields.read("objects", read_objects));
  } else if (present[0] == "target_fraction") {
    FOVEA_ASSIGN_OR_RETURN(record.target_fraction, fields.read("target_fraction", read_fraction));
  } else if (record.version < 2) {
    return make_error(StatusCode::kCorruptData,
                      "metadata record: key 'classes' is version 2's; this record is version ",
                      std::to_string(record.version));
  } else {
    FOVEA_ASSIGN_OR_RETURN(record.classes, fields.read("classes", read_classes));
  }
  return Status::ok();
}

Result<int> read_version(const Fields& fields) {
  FOVEA_ASSIGN_OR_RETURN(const int version, fields.read("v", read_count<int>));
  if (version < kOldestFrameRecordVersion || version > kFrameRecordVersion) {
    return make_error(StatusCode::kUnsupported, "metadata record: key 'v': version ", std::to_string(version),
                      " is not supported (fovea reads versions ", std::to_string(kOldestFrameRecordVersion),
                      " to ", std::to_string(kFrameRecordVersion), ")");
  }
  return version;
}

// nlohmann::json reports malformed text with an exception; it stops here.
Result<Json> parse_json(std::string_view line) {
  try {
    return Json::parse(line);
  } catch (const Json::parse_error& error) {
    return make_error(StatusCode::kCorruptData, "metadata record: not JSON: ", error.what());
  }
}

}  // namespace

std::string frame_record_json(const FrameRecordContext& context, const FrameResults& results) {
  fmt::memory_buffer out;
  out.reserve(kRecordHeadSize + kObjectSize * results.objects.size());
  append(out, "{\"v\":");
  append_integer(out, context.version);
  append(out, ",\"source\":");
  append_string(out, context.source);
  append(out, ",\"source_id\":");
  append_integer(out, context.source_id);
  append(out, ",\"frame\":");
  append_integer(out, context.frame);
  append(out, ",\"pts_us\":");
  if (context.pts_us) {
    append_integer(out, *context.pts_us);
  } else {
    append(out, "null");
  }
  append(out, ",\"capture_time_us\":");
  if (context.capture_time_us) {
    append_integer(out, *context.capture_time_us);
  } else {
    append(out, "null");
  }
  append(out, ",\"batch\":");
  append_integer(out, context.batch);
  append(out, results.inferred ? ",\"inferred\":true" : ",\"inferred\":false");
  if (results.classes) {
    append(out, ",\"classes\":[");
    for (std::size_t i = 0; i < results.classes->size(); ++i) {
      if (i > 0) out.push_back(',');
      append_class(out, (*results.classes)[i]);
    }
    out.push_back(']');
  } else if (results.target_fraction) {
    append(out, ",\"target_fraction\":");
    append_float(out, *results.target_fraction);
  } else {
    append(out, ",\"objects\":[");
    for (std::size_t i = 0; i < results.objects.size(); ++i) {
      if (i > 0) out.push_back(',');
      append_object(out, results.objects[i], context.labels);
    }
    out.push_back(']');
  }
  out.push_back('}');
  return fmt::to_string(out);
}

Result<ParsedFrameRecord> parse_frame_record(std::string_view line) {
  FOVEA_ASSIGN_OR_RETURN(const Json json, parse_json(line));
  if (!json.is_object()) {
    return make_error(StatusCode::kCorruptData, "metadata record: the line must be a JSON object, not ",
                      json.type_name());
  }
  FOVEA_ASSIGN_OR_RETURN(const Fields fields, Fields::of(json, "", kRecordKeys));
  ParsedFrameRecord record;
  FOVEA_ASSIGN_OR_RETURN(record.version, read_version(fields));
  FOVEA_ASSIGN_OR_RETURN(record.source, fields.read("source", read_string));
  FOVEA_ASSIGN_OR_RETURN(record.source_id, fields.read("source_id", read_count<std::size_t>));
  FOVEA_ASSIGN_OR_RETURN(record.frame, fields.read("frame", read_count<std::int64_t>));
  FOVEA_ASSIGN_OR_RETURN(record.pts_us, fields.read("pts_us", read_pts));
  FOVEA_ASSIGN_OR_RETURN(record.capture_time_us, fields.read("capture_time_us", read_pts));
  FOVEA_ASSIGN_OR_RETURN(record.batch, fields.read("batch", read_count<std::uint64_t>));
  FOVEA_ASSIGN_OR_RETURN(record.inferred, fields.read("inferred", read_bool));
  FOVEA_TRY(read_results(fields, record));
  return record;
}

}  // namespace fovea::pipeline
