// Label files: one class name per line, line i naming class i (DeepStream's labelfile-path format
// for detectors and classifiers). CPU only.
//
// Reading: an optional UTF-8 byte-order mark is skipped; "\r\n" line ends are accepted; leading and
// trailing spaces and tabs are trimmed; one final newline (or several trailing empty lines) ends
// the file. Refused, naming the file and the line: a missing or unreadable file, an empty file, an
// empty line between names (write a placeholder such as "N/A" for an unused class id, as
// torchvision's COCO list does), a NUL byte (not a text file), more than kMaxLabels lines or
// kMaxLabelBytes bytes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fovea::post {

inline constexpr std::size_t kMaxLabels = 100000;                // far above any detector's classes
inline constexpr std::size_t kMaxLabelBytes = 16 * 1024 * 1024;  // a label file is text, not data

Result<std::vector<std::string>> read_label_file(const std::filesystem::path& path);
// The same rules on text already in memory; `source` names it in errors.
Result<std::vector<std::string>> parse_labels(std::string_view text, std::string_view source);

// Refuses a label count that differs from the model's class count, naming both counts, the label
// file and the model.
Status check_label_count(std::size_t labels, int model_classes, std::string_view label_file,
                         std::string_view model);

}  // namespace fovea::post
