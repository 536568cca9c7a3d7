// Label files: reading, the line rules and the class-count check (label_file.h).
#include "post/label_file.h"

#include <fmt/format.h>

#include "core/input_file.h"

namespace fovea::post {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

}  // namespace

Result<std::vector<std::string>> parse_labels(std::string_view text, std::string_view source) {
  if (text.size() > kMaxLabelBytes) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("label file {}: {} bytes, more than the {} a label file may have", source,
                                  text.size(), kMaxLabelBytes));
  }
  if (text.find('\0') != std::string_view::npos) {
    return make_error(
        StatusCode::kCorruptData,
        fmt::format("label file {}: has a NUL byte; expected text, one class name per line", source));
  }
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  std::vector<std::string> labels;
  std::size_t empty_run = 0, empty_line = 0;  // empty lines not yet known to be trailing
  std::size_t line = 0;
  while (!text.empty()) {
    ++line;
    const auto end = text.find('\n');
    std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string_view name = trim(raw);
    if (name.empty()) {
      if (empty_run++ == 0) empty_line = line;
      continue;
    }
    if (empty_run > 0 && !labels.empty()) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("label file {}: line {} is empty; every class needs a name (write a "
                                    "placeholder such as N/A for an unused class id)",
                                    source, empty_line));
    }
    if (empty_run > 0) {
      return make_error(
          StatusCode::kInvalidArgument,
          fmt::format("label file {}: line {} is empty; the first line names class 0", source, empty_line));
    }
    empty_run = 0;
    if (labels.size() == kMaxLabels) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("label file {}: more than {} lines", source, kMaxLabels));
    }
    labels.emplace_back(name);
  }
  if (labels.empty()) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("label file {}: no labels (expected one class name per line)", source));
  }
  return labels;
}

Result<std::vector<std::string>> read_label_file(const std::filesystem::path& path) {
  FOVEA_ASSIGN_OR_RETURN(const std::string text, read_regular_file(path, "label file", kMaxLabelBytes));
  return parse_labels(text, path.string());
}

Status check_label_count(std::size_t labels, int model_classes, std::string_view label_file,
                         std::string_view model) {
  if (labels != static_cast<std::size_t>(model_classes)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("label file {} has {} labels, model {} has {} classes", label_file, labels,
                                  model, model_classes));
  }
  return Status::ok();
}

}  // namespace fovea::post
