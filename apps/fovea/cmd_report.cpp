// fovea report DIR...: the profiler's tables for one traced run, or several runs side by side.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "core/log.h"
#include "trace/compare.h"
#include "trace/report_format.h"

namespace fovea::app {
namespace {

struct ReportArgs {
  std::vector<std::string> dirs;
  bool csv = false;
  std::string out_dir = ".";
  std::size_t top = 0;  // 0: every row
  std::string html;
};

std::optional<std::size_t> top_rows(const ReportArgs& args) {
  return args.top > 0 ? std::optional(args.top) : std::nullopt;
}

// What the mode means for reading the tables.
const char* mode_note(trace::CaptureMode mode) {
  switch (mode) {
    case trace::CaptureMode::kCupti: return "GPU ops from CUPTI activity records";
    case trace::CaptureMode::kCudaEvents:
      return "GPU ops are the spans between CUDA events at the begin and end of ranges that name a stream; "
             "no per-kernel data";
    case trace::CaptureMode::kCpuOnly: return "no GPU data: CPU ranges only";
  }
  return "";
}

void print_run_header(const trace::RunSummary& run) {
  const trace::TraceData& d = run.report.data;
  std::printf("Run %s: mode %s (%s), %.3f ms traced, %zu ranges, %zu GPU ops\n", run.label.c_str(),
              std::string(trace::capture_mode_name(d.mode)).c_str(), mode_note(d.mode),
              static_cast<double>(d.duration_ns) / 1e6, d.ranges.size(), d.ops.size());
}

void print_table(const trace::TextTable& table) {
  std::printf("\n** %s\n\n%s", table.name.c_str(),
              table.rows.empty() ? "(no rows)\n" : trace::format_aligned(table).c_str());
}

Status write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return make_error(StatusCode::kIoError, path.string(), ": could not be written");
  std::printf("wrote %s\n", path.string().c_str());
  return Status::ok();
}

// Each run's tables go next to its report.json; the multi-run table goes to --out.
Status write_csv(const ReportArgs& args, const trace::Comparison& comparison) {
  for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
    for (const trace::TextTable& table : trace::run_tables(comparison.runs[i].report.tables, std::nullopt)) {
      FOVEA_TRY(
          write_text(std::filesystem::path(args.dirs[i]) / (table.name + ".csv"), trace::format_csv(table)));
    }
  }
  if (comparison.runs.size() < 2) return Status::ok();
  std::error_code ec;
  std::filesystem::create_directories(args.out_dir, ec);
  if (ec)
    return make_error(StatusCode::kIoError, args.out_dir, ": could not create the directory: ", ec.message());
  const trace::TextTable table = trace::comparison_table(comparison, std::nullopt);
  return write_text(std::filesystem::path(args.out_dir) / (table.name + ".csv"), trace::format_csv(table));
}

int run_report(const ReportArgs& args) {
  std::vector<trace::RunInput> inputs;
  for (const std::string& dir : args.dirs) inputs.push_back({.dir = dir});
  auto comparison = trace::compare_runs(inputs);
  if (!comparison.is_ok()) {
    log_error("{}", comparison.status().to_string());
    return kExitFailure;
  }
  for (const trace::RunSummary& run : comparison->runs) print_run_header(run);
  if (comparison->runs.size() == 1) {
    for (const trace::TextTable& table :
         trace::run_tables(comparison->runs[0].report.tables, top_rows(args))) {
      print_table(table);
    }
  } else {
    print_table(trace::comparison_table(*comparison, top_rows(args)));
    std::printf("\n%s", trace::comparison_summary(*comparison).c_str());
  }
  Status status = args.csv ? write_csv(args, *comparison) : Status::ok();
  if (status.is_ok() && !args.html.empty())
    status = write_text(args.html, trace::comparison_html(*comparison));
  if (!status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* report = app.add_subcommand(
      "report",
      "Profiler tables (Nsight Systems' nvtx_gpu_proj_sum, nvtx_sum, cuda_gpu_kern_sum, gpu_gaps) "
      "for one --trace directory, or several compared");
  report->add_option("DIR", args->dirs, "Directories written by --trace (each holds report.json)")
      ->required();
  report->add_flag(
      "--csv", args->csv,
      "Also write each table as CSV: a run's tables into its DIR, the multi-run table into --out");
  report->add_option("--out", args->out_dir, "Where --csv writes the multi-run table")->capture_default_str();
  report->add_option("--top", args->top, "Print at most N rows per table (per run); 0 prints all")
      ->check(CLI::NonNegativeNumber);
  report->add_option("--html", args->html,
                     "Write an offline HTML page with projected time per stage per run");
  report->callback([args, action] { *action = [args] { return run_report(*args); }; });
}

}  // namespace fovea::app
