// The profiler's output as `fovea report` writes it, shared with `fovea sweep`, which writes the
// same multi-run report for the runs it has just made.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "trace/compare.h"
#include "trace/report_format.h"

namespace fovea::app {

// "Run LABEL: mode cupti (what the mode means), 12.345 ms traced, N ranges, M GPU ops".
void print_run_header(const trace::RunSummary& run);
// "** NAME", a blank line and the table aligned (or "(no rows)").
void print_table(const trace::TextTable& table);
// Writes `text` to `path` and prints "wrote PATH".
Status write_text(const std::filesystem::path& path, const std::string& text);
// Each run's tables as CSV into its directory (`run_dirs`, parallel to comparison.runs); with two
// runs or more, the multi-run table into `out_dir` (created when missing).
Status write_csv(const std::vector<std::filesystem::path>& run_dirs, const std::filesystem::path& out_dir,
                 const trace::Comparison& comparison);

}  // namespace fovea::app
