#include "trace/report_format.h"

#include <fmt/format.h>

#include <algorithm>

namespace fovea::trace {
namespace {

std::string integer(std::int64_t v) {
  return fmt::format("{}", v);
}
// Averages and percentages to one decimal, as Nsight Systems prints them.
std::string decimal(double v) {
  return fmt::format("{:.1f}", v);
}

std::vector<std::string> stats_cells(const Stats& s) {
  return {integer(s.total), integer(s.instances), decimal(s.avg),   decimal(s.med),
          integer(s.min),   integer(s.max),       decimal(s.stddev)};
}

template <typename Row, typename Cells>
void add_rows(TextTable& table, const std::vector<Row>& rows, std::optional<std::size_t> top, Cells cells) {
  const std::size_t n = std::min(rows.size(), top.value_or(rows.size()));
  for (std::size_t i = 0; i < n; ++i) table.rows.push_back(cells(rows[i]));
}

// A summed table's first cells: its percentage (as given) and the time statistics.
std::vector<std::string> time_cells(std::string percent, const Stats& s) {
  std::vector<std::string> cells{std::move(percent)};
  for (std::string& c : stats_cells(s)) cells.push_back(std::move(c));
  return cells;
}

// A summed table's header: `first` (its percentage column), the time statistics, then `last`.
std::vector<std::string> time_columns(std::string first, std::initializer_list<std::string> last) {
  std::vector<std::string> columns{std::move(first), "Total Time (ns)", "Instances", "Avg (ns)",
                                   "Med (ns)",       "Min (ns)",        "Max (ns)",  "StdDev (ns)"};
  columns.insert(columns.end(), last);
  return columns;
}

std::vector<bool> numeric_except(std::size_t columns, std::initializer_list<std::size_t> text) {
  std::vector<bool> numeric(columns, true);
  for (std::size_t i : text) numeric[i] = false;
  return numeric;
}

TextTable nvtx_table(const std::vector<NvtxRow>& rows, std::optional<std::size_t> top) {
  TextTable t{.name = "nvtx_sum",
              .columns = time_columns("Time (%)", {"Style", "Range"}),
              .numeric = numeric_except(10, {8, 9})};
  add_rows(t, rows, top, [](const NvtxRow& r) {
    std::vector<std::string> cells = time_cells(decimal(r.time_percent), r.time);
    cells.emplace_back(range_style_name(r.style));
    cells.push_back(r.range);
    return cells;
  });
  return t;
}

TextTable kernel_table(const std::vector<KernelRow>& rows, std::optional<std::size_t> top) {
  TextTable t{.name = "cuda_gpu_kern_sum",
              .columns = time_columns("Time (%)", {"Name"}),
              .numeric = numeric_except(9, {8})};
  add_rows(t, rows, top, [](const KernelRow& r) {
    std::vector<std::string> cells = time_cells(decimal(r.time_percent), r.time);
    cells.push_back(r.name);
    return cells;
  });
  return t;
}

TextTable blocking_call_table(const std::vector<BlockingCallRow>& rows, std::optional<std::size_t> top) {
  TextTable t{.name = "cuda_api_blocking_sum",
              .columns = time_columns("Time (%)", {"Threads", "Name"}),
              .numeric = numeric_except(10, {9})};
  add_rows(t, rows, top, [](const BlockingCallRow& r) {
    std::vector<std::string> cells = time_cells(decimal(r.time_percent), r.time);
    cells.push_back(integer(r.threads));
    cells.push_back(r.name);
    return cells;
  });
  return t;
}

TextTable api_range_table(const std::vector<ApiRangeRow>& rows, std::optional<std::size_t> top) {
  TextTable t{.name = "cuda_api_range_sum",
              .columns = time_columns("Range (%)", {"Range", "Name"}),
              .numeric = numeric_except(10, {8, 9})};
  add_rows(t, rows, top, [](const ApiRangeRow& r) {
    // A call in no range has no range whose share it could be.
    std::vector<std::string> cells =
        time_cells(r.range == kNoRange ? std::string("-") : decimal(r.range_percent), r.time);
    cells.push_back(r.range);
    cells.push_back(r.name);
    return cells;
  });
  return t;
}

TextTable gap_table(const std::vector<GapRow>& rows, std::optional<std::size_t> top) {
  TextTable t{.name = "gpu_gaps",
              .columns = {"Row#", "Duration (ns)", "Start (ns)", "End (ns)", "Device"},
              .numeric = numeric_except(5, {})};
  add_rows(t, rows, top, [](const GapRow& g) {
    return std::vector<std::string>{integer(g.row), integer(g.duration_ns), integer(g.start_ns),
                                    integer(g.end_ns), integer(g.device)};
  });
  return t;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

}  // namespace

std::vector<std::string> gpu_proj_cells(const GpuProjRow& r) {
  return {r.range,
          std::string(range_style_name(r.style)),
          integer(r.proj.total),
          integer(r.total_range_ns),
          integer(r.proj.instances),
          decimal(r.proj.avg),
          decimal(r.proj.med),
          integer(r.proj.min),
          integer(r.proj.max),
          decimal(r.proj.stddev),
          integer(r.total_gpu_ops),
          decimal(r.avg_gpu_ops),
          decimal(r.avg_range_level),
          decimal(r.avg_num_child)};
}

TextTable gpu_proj_table(const std::vector<GpuProjRow>& rows, std::optional<std::size_t> top) {
  TextTable t{
      .name = "nvtx_gpu_proj_sum",
      .columns = {"Range", "Style", "Total Proj Time (ns)", "Total Range Time (ns)", "Range Instances",
                  "Proj Avg (ns)", "Proj Med (ns)", "Proj Min (ns)", "Proj Max (ns)", "Proj StdDev (ns)",
                  "Total GPU Ops", "Avg GPU Ops", "Avg Range Lvl", "Avg Num Child"},
      .numeric = numeric_except(14, {0, 1})};
  add_rows(t, rows, top, gpu_proj_cells);
  return t;
}

std::vector<TextTable> run_tables(const Tables& tables, std::optional<std::size_t> top) {
  return {gpu_proj_table(tables.gpu_proj, top),      nvtx_table(tables.nvtx, top),
          kernel_table(tables.kernels, top),         blocking_call_table(tables.blocking_calls, top),
          api_range_table(tables.api_by_range, top), gap_table(tables.gaps, top)};
}

std::string format_aligned(const TextTable& table) {
  std::vector<std::size_t> widths(table.columns.size());
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    widths[c] = table.columns[c].size();
    for (const auto& row : table.rows) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += "  ";
      text += table.numeric[c] ? fmt::format("{:>{}}", cells[c], widths[c])
                               : fmt::format("{:<{}}", cells[c], widths[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + '\n';
  };
  std::string out = line(table.columns);
  std::vector<std::string> rule;
  for (std::size_t w : widths) rule.emplace_back(w, '-');
  out += line(rule);
  for (const auto& row : table.rows) out += line(row);
  return out;
}

std::string format_csv(const TextTable& table) {
  auto line = [](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += ',';
      text += csv_field(cells[c]);
    }
    text += '\n';
    return text;
  };
  std::string out = line(table.columns);
  for (const auto& row : table.rows) out += line(row);
  return out;
}

}  // namespace fovea::trace
