#include "runtime/quant/calibration_table.h"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/input_file.h"
#include "core/output_file.h"
#include "runtime/engine.h"

namespace fovea::runtime::quant {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order the header documents, for people

constexpr const char* kFormat = "fovea-calibration";

constexpr CalibrationMethod kMethods[] = {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile,
                                          CalibrationMethod::kMinMax};

// The shortest decimal that reads back as `value` (std::to_chars' guarantee), as a JSON number:
// "2.64" rather than 2.6400001049041748, and the reader's float of it is `value` again.
Json exact_number(float value) {
  std::array<char, 32> text{};
  const auto end = std::to_chars(text.data(), text.data() + text.size(), value).ptr;
  return Json::parse(std::string_view(text.data(), static_cast<std::size_t>(end - text.data())));
}

Status check_amax(const std::string& where, const std::string& tensor, float amax) {
  if (std::isfinite(amax) && amax > 0.0f) return Status::ok();
  return make_error(StatusCode::kCorruptData, where, "tensor '", tensor, "': amax ", fmt::format("{}", amax),
                    " is not a positive finite number");
}

// A cache holds a few lines per tensor: tens of kilobytes for the largest networks.
constexpr std::uintmax_t kMaxCalibrationBytes = 64u << 20;

Result<std::string> read_text(const std::filesystem::path& path) {
  return read_regular_file(path, "calibration cache", kMaxCalibrationBytes);
}

// The member `key` of `object`, of the JSON type `is_type` accepts; an error names the file and key.
Result<const Json*> member(const Json& object, const char* key, bool (Json::*is_type)() const,
                           const char* type_name, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) return make_error(StatusCode::kCorruptData, where, "'", key, "' is missing");
  if (!((*it).*is_type)()) {
    return make_error(StatusCode::kCorruptData, where, "'", key, "' is not ", type_name);
  }
  return &*it;
}

Result<std::string> string_member(const Json& object, const char* key, const std::string& where) {
  FOVEA_ASSIGN_OR_RETURN(const Json* value, member(object, key, &Json::is_string, "a string", where));
  return value->get<std::string>();
}

Result<TensorRange> parse_range(const std::string& name, const Json& entry, const std::string& where) {
  const std::string context = where + "tensor '" + name + "': ";
  if (!entry.is_object()) return make_error(StatusCode::kCorruptData, context, "not an object");
  const auto amax = entry.find("amax");
  if (amax == entry.end() || !amax->is_number()) {
    return make_error(StatusCode::kCorruptData, context, "'amax' is missing or not a number");
  }
  // Narrowed like the writer's float: a number beyond float's range becomes infinite and is refused.
  TensorRange range{.amax = static_cast<float>(amax->get<double>())};
  FOVEA_TRY(check_amax(where, name, range.amax));
  if (const auto sqnr = entry.find("sqnr_db"); sqnr != entry.end()) {
    if (!sqnr->is_number()) return make_error(StatusCode::kCorruptData, context, "'sqnr_db' is not a number");
    range.sqnr_db = static_cast<float>(sqnr->get<double>());
  }
  if (const auto keep = entry.find("keep_float"); keep != entry.end()) {
    if (!keep->is_boolean()) {
      return make_error(StatusCode::kCorruptData, context, "'keep_float' is not true or false");
    }
    range.keep_float = keep->get<bool>();
  }
  return range;
}

Result<CalibrationTable> parse_table(const Json& json, const std::string& where) {
  const auto format = json.is_object() ? json.find("format") : json.end();
  if (format == json.end() || *format != kFormat) {
    return make_error(StatusCode::kCorruptData, where, "not a fovea calibration cache (no \"format\": \"",
                      kFormat, "\")");
  }
  FOVEA_ASSIGN_OR_RETURN(const Json* version,
                         member(json, "version", &Json::is_number_integer, "an integer", where));
  if (version->get<std::int64_t>() != kCalibrationVersion) {
    return make_error(StatusCode::kUnsupported, where, "calibration cache version ", version->dump(),
                      "; this fovea reads version ", std::to_string(kCalibrationVersion),
                      ": calibrate the model again (fovea model calibrate)");
  }
  CalibrationTable table;
  FOVEA_ASSIGN_OR_RETURN(table.model, string_member(json, "model", where));
  FOVEA_ASSIGN_OR_RETURN(table.model_digest, string_member(json, "model_digest", where));
  FOVEA_ASSIGN_OR_RETURN(const std::string method, string_member(json, "method", where));
  Result<CalibrationMethod> parsed = parse_calibration_method(method);
  if (!parsed.is_ok()) return parsed.status().with_context(where);
  table.method = *parsed;
  FOVEA_ASSIGN_OR_RETURN(const Json* samples,
                         member(json, "samples", &Json::is_number_integer, "an integer", where));
  table.samples = samples->get<int>();
  FOVEA_ASSIGN_OR_RETURN(table.preprocess, string_member(json, "preprocess", where));
  FOVEA_ASSIGN_OR_RETURN(const Json* tensors, member(json, "tensors", &Json::is_object, "an object", where));
  for (const auto& [name, entry] : tensors->items()) {
    FOVEA_ASSIGN_OR_RETURN(table.tensors[name], parse_range(name, entry, where));
  }
  return table;
}

}  // namespace

std::string_view calibration_method_name(CalibrationMethod method) {
  switch (method) {
    case CalibrationMethod::kEntropy: return "entropy";
    case CalibrationMethod::kPercentile: return "percentile";
    case CalibrationMethod::kMinMax: return "minmax";
  }
  return "entropy";
}

Result<CalibrationMethod> parse_calibration_method(std::string_view text) {
  for (CalibrationMethod method : kMethods) {
    if (text == calibration_method_name(method)) return method;
  }
  return make_error(StatusCode::kInvalidArgument, "calibration method '", std::string(text),
                    "': use entropy, percentile or minmax");
}

Status write_calibration(const std::filesystem::path& path, const CalibrationTable& table) {
  const std::string where = path.string() + ": ";
  Json json = {{"format", kFormat},
               {"version", kCalibrationVersion},
               {"model", table.model},
               {"model_digest", table.model_digest},
               {"method", std::string(calibration_method_name(table.method))},
               {"samples", table.samples},
               {"preprocess", table.preprocess}};
  Json& tensors = json["tensors"] = Json::object();
  for (const auto& [name, range] : table.tensors) {
    // Never write what read_calibration would refuse.
    FOVEA_TRY(check_amax(where, name, range.amax));
    Json& entry =
        tensors[name] = {{"amax", exact_number(range.amax)}, {"scale", exact_number(range.scale())}};
    if (range.sqnr_db) entry["sqnr_db"] = std::round(*range.sqnr_db * 10.0) / 10.0;  // 0.1 dB says enough
    if (range.keep_float) entry["keep_float"] = true;
  }
  return write_file_atomically(path, json.dump(2) + "\n", "calibration cache");
}

Result<CalibrationTable> read_calibration(const std::filesystem::path& path) {
  FOVEA_ASSIGN_OR_RETURN(const std::string text, read_text(path));
  const std::string where = path.string() + ": ";
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return make_error(StatusCode::kCorruptData, where, "not a calibration cache (not JSON)");
  }
  return parse_table(json, where);
}

Result<CalibrationTable> read_calibration_for(const std::filesystem::path& path,
                                              const std::filesystem::path& model) {
  FOVEA_ASSIGN_OR_RETURN(CalibrationTable table, read_calibration(path));
  Result<std::string> digest = file_digest(model);
  if (!digest.is_ok()) {
    return make_error(digest.status().code(), "cannot read the model ", model.string(),
                      " to check calibration cache ", path.string(), " against it");
  }
  if (*digest != table.model_digest) {
    return make_error(StatusCode::kInvalidArgument, "calibration cache ", path.string(),
                      " was made for another model (", table.model, ", digest ", table.model_digest,
                      "), not ", model.string(), " (digest ", *digest,
                      "): the model changed or is another one; calibrate again (fovea model calibrate ",
                      model.string(), " ... -o ", path.string(), ")");
  }
  return table;
}

}  // namespace fovea::runtime::quant
