// comparison_html: one page, no scripts and no network, so it opens from a copied folder.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "trace/compare.h"

namespace fovea::trace {
namespace {

// Colour-blind-safe qualitative palette (Okabe–Ito), repeated past eight runs.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                    "#56B4E9", "#D55E00", "#F0E442", "#000000"};
constexpr int kLabelWidth = 220;
constexpr int kBarArea = 560;
constexpr int kBarHeight = 14;
constexpr int kBarGap = 3;
constexpr int kGroupGap = 14;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* colour(std::size_t run) {
  return kPalette[run % std::size(kPalette)];
}

// Whether any run has projected GPU time outside `pipeline`; without, the chart shows CPU time.
bool any_gpu_data(const Comparison& c) {
  return std::any_of(c.runs.begin(), c.runs.end(), [](const RunSummary& run) {
    return std::any_of(run.report.tables.gpu_proj.begin(), run.report.tables.gpu_proj.end(),
                       [](const GpuProjRow& row) { return row.range != kPipelineRange; });
  });
}

// Stages (every range but `pipeline`), largest time in any run first, with each run's Total Proj
// Time (gpu) or Total Time (CPU, nvtx_sum).
std::vector<std::pair<std::string, std::vector<std::int64_t>>> stage_times(const Comparison& c, bool gpu) {
  std::map<std::string, std::vector<std::int64_t>> by_stage;
  auto add = [&](std::size_t r, const std::string& range, std::int64_t ns) {
    if (range == kPipelineRange) return;
    auto& times = by_stage.try_emplace(range, std::vector<std::int64_t>(c.runs.size(), 0)).first->second;
    times[r] += ns;
  };
  for (std::size_t r = 0; r < c.runs.size(); ++r) {
    const Tables& tables = c.runs[r].report.tables;
    if (gpu) {
      for (const GpuProjRow& row : tables.gpu_proj) add(r, row.range, row.proj.total);
    } else {
      for (const NvtxRow& row : tables.nvtx) add(r, row.range, row.time.total);
    }
  }
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> stages(by_stage.begin(), by_stage.end());
  auto peak = [](const auto& s) { return *std::max_element(s.second.begin(), s.second.end()); };
  std::stable_sort(stages.begin(), stages.end(),
                   [&](const auto& a, const auto& b) { return peak(a) > peak(b); });
  return stages;
}

std::string bar_chart(const Comparison& c, bool gpu) {
  const auto stages = stage_times(c, gpu);
  std::int64_t max_ns = 1;
  for (const auto& [name, times] : stages)
    max_ns = std::max(max_ns, *std::max_element(times.begin(), times.end()));
  const int group_height = static_cast<int>(c.runs.size()) * (kBarHeight + kBarGap) + kGroupGap;
  const int height = std::max(1, static_cast<int>(stages.size()) * group_height);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n",
      kLabelWidth + kBarArea + 120, height);
  int y = 0;
  for (const auto& [name, times] : stages) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8,
                       y + kBarHeight, escape(name));
    for (std::size_t r = 0; r < times.size(); ++r) {
      const double width =
          static_cast<double>(kBarArea) * static_cast<double>(times[r]) / static_cast<double>(max_ns);
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {:.3f} "
          "ms</title></rect>"
          "<text x=\"{:.1f}\" y=\"{}\">{:.3f} ms</text>\n",
          kLabelWidth, y, width, kBarHeight, colour(r), escape(c.runs[r].label),
          static_cast<double>(times[r]) / 1e6, kLabelWidth + width + 4, y + kBarHeight - 3,
          static_cast<double>(times[r]) / 1e6);
      y += kBarHeight + kBarGap;
    }
    y += kGroupGap;
  }
  return svg + "</svg>\n";
}

std::string run_table(const Comparison& c) {
  std::string html =
      "<table><tr><th></th><th>Run</th><th>Mode</th><th>pipeline wall time (ms)</th><th>Bottleneck</th>"
      "<th>Its time (ms)</th></tr>\n";
  for (std::size_t r = 0; r < c.runs.size(); ++r) {
    const RunSummary& run = c.runs[r];
    html += fmt::format(
        "<tr{}><td><span "
        "style=\"background:{}\">&nbsp;&nbsp;&nbsp;</span></td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        c.fastest == r ? " class=\"fastest\"" : "", colour(r), escape(run.label),
        capture_mode_name(run.report.data.mode),
        run.pipeline_ns ? fmt::format("{:.3f}", static_cast<double>(*run.pipeline_ns) / 1e6) : "&ndash;",
        run.bottleneck ? escape(run.bottleneck->range) : "&ndash;",
        run.bottleneck ? fmt::format("{:.3f} {}", static_cast<double>(run.bottleneck->total_ns) / 1e6,
                                     run.bottleneck->gpu ? "GPU" : "CPU")
                       : "&ndash;");
  }
  return html + "</table>\n";
}

}  // namespace

std::string comparison_html(const Comparison& c) {
  const bool gpu = any_gpu_data(c);
  const char* heading = gpu ? "Projected GPU time per stage (Total Proj Time, nvtx_gpu_proj_sum)"
                            : "CPU time per stage (Total Time, nvtx_sum; the runs have no GPU data)";
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fovea report</title>\n"
         "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
         "td,th{padding:4px 10px;border-bottom:1px solid "
         "#ddd;text-align:left}.fastest{font-weight:bold}</style>"
         "</head><body>\n<h1>fovea report</h1>\n" +
         run_table(c) + "<pre>" + escape(comparison_summary(c)) + "</pre>\n<h2>" + heading + "</h2>\n" +
         bar_chart(c, gpu) + "</body></html>\n";
}

}  // namespace fovea::trace
