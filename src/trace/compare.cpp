#include "trace/compare.h"

#include <fmt/format.h>

#include <utility>

#include "trace/report_io.h"

namespace fovea::trace {
namespace {

RunSummary summarize(std::string label, Report report) {
  RunSummary run{.label = std::move(label), .report = std::move(report)};
  for (const NvtxRow& row : run.report.tables.nvtx) {
    if (row.range == kPipelineRange) run.pipeline_ns = row.time.total;
  }
  for (const GpuProjRow& row : run.report.tables.gpu_proj) {
    if (row.range == kPipelineRange) continue;
    if (!run.bottleneck || row.proj.total > run.bottleneck->proj.total) run.bottleneck = row;
  }
  return run;
}

std::string milliseconds(std::int64_t ns) {
  return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
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
  std::vector<std::pair<std::string, Report>> runs;
  for (const RunInput& input : inputs) {
    FOVEA_ASSIGN_OR_RETURN(Report report, read_report(input.dir));
    std::string label = input.label;
    if (label.empty()) label = report.data.label;
    if (label.empty()) label = std::filesystem::path(input.dir).lexically_normal().filename().string();
    if (label.empty()) label = input.dir.string();
    runs.emplace_back(std::move(label), std::move(report));
  }
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

std::string comparison_summary(const Comparison& comparison) {
  std::string out;
  if (comparison.fastest) {
    const RunSummary& run = comparison.runs[*comparison.fastest];
    out += fmt::format("Fastest pipeline: {} ({})\n", run.label, milliseconds(*run.pipeline_ns));
  } else {
    out += fmt::format("Fastest pipeline: none of the runs has a '{}' range\n", kPipelineRange);
  }
  for (const RunSummary& run : comparison.runs) {
    if (run.bottleneck) {
      out += fmt::format("Bottleneck of {}: {} ({} projected on the GPU)\n", run.label, run.bottleneck->range,
                         milliseconds(run.bottleneck->proj.total));
    } else {
      out += fmt::format("Bottleneck of {}: no range other than '{}' launched GPU work\n", run.label,
                         kPipelineRange);
    }
  }
  return out;
}

}  // namespace fovea::trace
