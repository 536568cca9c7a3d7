// Several runs side by side (a batch-size sweep, before and after a change): per-range GPU
// projections with one row group per run, the run whose `pipeline` ranges took the least wall
// time, and each run's bottleneck: the range with the largest projected GPU time, or without GPU
// data the one with the largest CPU time. The terminal's summary and the HTML page both read these
// figures, so they cannot disagree.
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
  std::string label;  // empty: the label recorded in report.json (a sweep's), else the directory's name
};

struct Bottleneck {
  std::string range;
  std::int64_t total_ns = 0;  // Total Proj Time, or without GPU data the range's Total Time (nvtx_sum)
  double avg_ns = 0;          // the same per range instance
  bool gpu = false;           // projected GPU time; otherwise CPU time
};

struct RunSummary {
  std::string label;
  Report report;
  // Wall time of the `pipeline` ranges: from the first one's start to the last one's end. A flow
  // records one per batch and batches overlap, so their summed durations are not a run's time.
  std::optional<std::int64_t> pipeline_ns;
  std::optional<Bottleneck> bottleneck;  // never `pipeline` itself, which holds every stage
};

struct Comparison {
  std::vector<RunSummary> runs;
  std::optional<std::size_t> fastest;  // index of the run with the shortest `pipeline` wall time
};

// Reads each DIR/report.json; the first unreadable run fails the whole comparison. Labels are
// unique: runs whose labels collide are labelled by their directory as given, then numbered.
Result<Comparison> compare_runs(const std::vector<RunInput>& inputs);
// For reports already in memory (a sweep that has just run them).
Comparison compare_reports(std::vector<std::pair<std::string, Report>> runs);

// nvtx_gpu_proj_sum with a leading Run column; `top` rows per run.
TextTable comparison_table(const Comparison& comparison, std::optional<std::size_t> top);
// "Fastest pipeline: ..." and one bottleneck line per run.
std::string comparison_summary(const Comparison& comparison);
// "inference (3.505 ms GPU per instance, 4205.170 ms in total)"; with CPU time "... ms CPU per
// instance, ... in total; no GPU data".
std::string bottleneck_text(const std::optional<Bottleneck>& bottleneck);
// A self-contained page (inline SVG, no scripts, no network): time per stage per run, projected
// GPU time when any run has GPU data, else CPU time.
std::string comparison_html(const Comparison& comparison);

}  // namespace fovea::trace
