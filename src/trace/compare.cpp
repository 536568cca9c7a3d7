#include "trace/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "trace/report_io.h"

namespace fovea::trace {
namespace {

std::optional<std::int64_t> pipeline_wall_ns(const TraceData& data) {
  std::optional<std::int64_t> first_start, last_end;
  for (const RangeRecord& range : data.ranges) {
    if (range_label(range) != kPipelineRange) continue;
    first_start = std::min(first_start.value_or(range.start_ns), range.start_ns);
    last_end = std::max(last_end.value_or(range.end_ns), range.end_ns);
  }
  if (!first_start) return std::nullopt;
  return *last_end - *first_start;
}

// The largest projected GPU time; a run without GPU data falls back to the largest CPU time, so
// that a CPU run still names where its time went.
std::optional<Bottleneck> find_bottleneck(const Tables& tables) {
  std::optional<Bottleneck> best;
  for (const GpuProjRow& row : tables.gpu_proj) {
    if (row.range == kPipelineRange) continue;
    if (!best || row.proj.total > best->total_ns)
      best = Bottleneck{.range = row.range, .total_ns = row.proj.total, .avg_ns = row.proj.avg, .gpu = true};
  }
  if (best) return best;
  for (const NvtxRow& row : tables.nvtx) {
    if (row.range == kPipelineRange) continue;
    if (!best || row.time.total > best->total_ns)
      best = Bottleneck{.range = row.range, .total_ns = row.time.total, .avg_ns = row.time.avg};
  }
  return best;
}

RunSummary summarize(std::string label, Report report) {
  RunSummary run{.label = std::move(label), .report = std::move(report)};
  run.pipeline_ns = pipeline_wall_ns(run.report.data);
  run.bottleneck = find_bottleneck(run.report.tables);
  return run;
}

std::string milliseconds(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}

std::string milliseconds(std::int64_t ns) {
  return milliseconds(static_cast<double>(ns));
}

// "runs/b4/" and "runs/b4" -> "b4"; "." -> the current directory's name.
std::string folder_name(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(dir, ec).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  const std::string name = path.filename().string();
  return name.empty() ? dir.string() : name;
}

// Colliding labels become the directory as given, and those that still collide (the same
// directory twice) get " #N", N counting from 2.
void make_unique(std::vector<std::string>& labels, const std::vector<RunInput>& inputs) {
  std::map<std::string, int> uses;
  for (const std::string& label : labels) ++uses[label];
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (uses[labels[i]] > 1 && inputs[i].label.empty()) labels[i] = inputs[i].dir.lexically_normal().string();
  }
  std::map<std::string, int> seen;
  for (std::string& label : labels) {
    const int n = ++seen[label];
    if (n > 1) label += fmt::format(" #{}", n);
  }
}

}  // namespace

Comparison compare_reports(std::vector<std::pair<std::string, Report>> runs) {
  Comparison c;
  for (auto& [label, report] : runs) c.runs.push_back(summarize(std::move(label), std::move(report)));
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const auto& t = c.runs[i].pipeline_ns;
    if (t && (!c.fastest || *t < *c.runs[*c.fastest].pipeline_ns)) c.fastest = i;
  }
  return c;
}

Result<Comparison> compare_runs(const std::vector<RunInput>& inputs) {
  std::vector<Report> reports;
  std::vector<std::string> labels;
  for (const RunInput& input : inputs) {
    FOVEA_ASSIGN_OR_RETURN(Report report, read_report(input.dir));
    std::string label = input.label;
    if (label.empty()) label = report.data.label;
    if (label.empty()) label = folder_name(input.dir);
    labels.push_back(std::move(label));
    reports.push_back(std::move(report));
  }
  make_unique(labels, inputs);
  std::vector<std::pair<std::string, Report>> runs;
  for (std::size_t i = 0; i < reports.size(); ++i)
    runs.emplace_back(std::move(labels[i]), std::move(reports[i]));
  return compare_reports(std::move(runs));
}

TextTable comparison_table(const Comparison& comparison, std::optional<std::size_t> top) {
  TextTable table;
  for (const RunSummary& run : comparison.runs) {
    TextTable one = gpu_proj_table(run.report.tables.gpu_proj, top);
    if (table.columns.empty()) {
      table = TextTable{.name = "nvtx_gpu_proj_sum_runs", .columns = {"Run"}, .numeric = {false}};
      table.columns.insert(table.columns.end(), one.columns.begin(), one.columns.end());
      table.numeric.insert(table.numeric.end(), one.numeric.begin(), one.numeric.end());
    }
    for (auto& row : one.rows) {
      row.insert(row.begin(), run.label);
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

std::string bottleneck_text(const std::optional<Bottleneck>& bottleneck) {
  if (!bottleneck) return fmt::format("unknown (no range other than '{}')", kPipelineRange);
  return fmt::format("{} ({} {} per instance, {} in total{})", bottleneck->range,
                     milliseconds(bottleneck->avg_ns), bottleneck->gpu ? "GPU" : "CPU",
                     milliseconds(bottleneck->total_ns), bottleneck->gpu ? "" : "; no GPU data");
}

std::string comparison_summary(const Comparison& comparison) {
  std::string out;
  if (comparison.fastest) {
    const RunSummary& run = comparison.runs[*comparison.fastest];
    out += run.pipeline_ns ? fmt::format("Fastest pipeline: {} ({} wall time)\n", run.label,
                                         milliseconds(*run.pipeline_ns))
                           : fmt::format("Fastest: {}\n", run.label);
  } else {
    out += fmt::format("Fastest pipeline: none of the runs has a '{}' range\n", kPipelineRange);
  }
  for (const RunSummary& run : comparison.runs) {
    out += fmt::format("Bottleneck of {}: {}\n", run.label, bottleneck_text(run.bottleneck));
  }
  return out;
}

}  // namespace fovea::trace
