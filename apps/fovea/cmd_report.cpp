// fovea report DIR...: the profiler's tables for one traced run, or several runs side by side.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "core/log.h"
#include "core/output_file.h"
#include "report_output.h"
#include "trace/compare.h"
#include "trace/report_format.h"
#include "trace/report_io.h"

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

std::vector<std::filesystem::path> run_dirs(const ReportArgs& args) {
  return {args.dirs.begin(), args.dirs.end()};
}

int run_report(const ReportArgs& args) {
  std::vector<PlannedOutput> outputs;
  if (!args.html.empty()) outputs.push_back({.what = "--html", .path = args.html});
  if (args.csv && args.dirs.size() > 1)
    outputs.push_back({.what = "--out", .path = args.out_dir, .is_folder = true});
  // The runs' own files are the inputs: --html RUN/report.json must not replace one.
  std::vector<std::string> run_files;
  for (const std::string& dir : args.dirs) {
    run_files.push_back((std::filesystem::path(dir) / trace::kReportFile).string());
    run_files.push_back((std::filesystem::path(dir) / trace::kTraceFile).string());
  }
  if (Status status = check_outputs(outputs, run_files); !status.is_ok()) {
    log_error("{}", status.to_string());
    return kExitUsage;
  }
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
  Status status = args.csv ? write_csv(run_dirs(args), args.out_dir, *comparison) : Status::ok();
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
      "Profiler tables (Nsight Systems' nvtx_gpu_proj_sum, nvtx_sum, cuda_gpu_kern_sum, gpu_gaps; the "
      "CUDA calls that blocked, cuda_api_blocking_sum, and CUDA time by range, cuda_api_range_sum) for one "
      "--trace directory, or several compared");
  report->add_option("DIR", args->dirs, "Directories written by --trace (each holds report.json)")
      ->required();
  report->add_flag(
      "--csv", args->csv,
      "Also write each table as CSV: a run's tables into its DIR, the multi-run table into --out");
  report->add_option("--out", args->out_dir, "Where --csv writes the multi-run table")->capture_default_str();
  report->add_option("--top", args->top, "Print at most N rows per table (per run); 0 prints all")
      ->check(at_least(0));
  report->add_option("--html", args->html,
                     "Write an offline HTML page with projected time per stage per run");
  report->callback([args, action] { *action = [args] { return run_report(*args); }; });
}

}  // namespace fovea::app
