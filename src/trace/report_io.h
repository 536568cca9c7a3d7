// A run's files: DIR/report.json (capture mode, the recorded ranges and ops, and the tables
// computed from them) and DIR/trace.json (Chrome trace event format, for Perfetto).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/status.h"
#include "trace/analysis.h"

namespace fovea::trace {

inline constexpr const char* kReportFile = "report.json";
inline constexpr const char* kTraceFile = "trace.json";
// A pipeline run's statistics (stats.report) when they share a folder with its trace: `fovea demo`
// and `fovea sweep` write them under this name, so they never take the trace report's.
inline constexpr const char* kStatsFile = "stats.json";

nlohmann::json report_to_json(const Report& report);
nlohmann::json tables_to_json(const Tables& tables);
// Reads the records and recomputes the tables from them (with the recorded gap threshold); the
// stored tables are for other tools. Errors name the key and what is wrong with it.
Result<Report> report_from_json(const nlohmann::json& json);

// Writes DIR/report.json and DIR/trace.json, creating DIR.
Status write_report(const Report& report, const std::filesystem::path& dir);
// Reads DIR/report.json; errors name the directory or file and the key, and say when the folder
// holds a run's statistics (stats.json, or a stats report named report.json) but no trace.
Result<Report> read_report(const std::filesystem::path& dir);

}  // namespace fovea::trace
