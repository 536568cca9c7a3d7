// Several runs side by side (a batch-size sweep, before and after a change): per-range GPU
// projections with one row group per run, the run whose `pipeline` range was fastest, and each
// run's bottleneck, the range with the largest projected GPU time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trace/analysis.h"
#include "trace/report_format.h"

namespace fovea::trace {

// The range that spans a whole run; it is compared across runs and is never a bottleneck.
inline constexpr std::string_view kPipelineRange = "pipeline";

struct RunInput {
  std::filesystem::path dir;
  std::string label;  // empty: the label recorded in report.json, else the directory's name
};

struct RunSummary {
  std::string label;
  Report report;
  std::optional<std::int64_t> pipeline_ns;  // the `pipeline` range's total CPU time (nvtx_sum)
  std::optional<GpuProjRow> bottleneck;     // largest Total Proj Time other than `pipeline`
};

struct Comparison {
  std::vector<RunSummary> runs;
  std::optional<std::size_t> fastest;  // index of the run with the shortest `pipeline` time
};

// Reads each DIR/report.json; the first unreadable run fails the whole comparison.
Result<Comparison> compare_runs(const std::vector<RunInput>& inputs);
// For reports already in memory (a sweep that has just run them).
Comparison compare_reports(std::vector<std::pair<std::string, Report>> runs);

// nvtx_gpu_proj_sum with a leading Run column; `top` rows per run.
TextTable comparison_table(const Comparison& comparison, std::optional<std::size_t> top);
// "Fastest pipeline: ..." and one bottleneck line per run.
std::string comparison_summary(const Comparison& comparison);
// A self-contained page (inline SVG, no scripts, no network): projected time per stage per run.
std::string comparison_html(const Comparison& comparison);

}  // namespace fovea::trace
