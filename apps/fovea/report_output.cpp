#include "report_output.h"

#include <cstdio>

#include "core/check.h"
#include "core/output_file.h"

namespace fovea::app {
namespace {

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

}  // namespace

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
  FOVEA_TRY(write_file_atomically(path, text, "report"));
  std::printf("wrote %s\n", path.string().c_str());
  return Status::ok();
}

Status write_csv(const std::vector<std::filesystem::path>& run_dirs, const std::filesystem::path& out_dir,
                 const trace::Comparison& comparison) {
  FOVEA_CHECK(run_dirs.size() == comparison.runs.size());
  for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
    for (const trace::TextTable& table : trace::run_tables(comparison.runs[i].report.tables, std::nullopt)) {
      FOVEA_TRY(write_text(run_dirs[i] / (table.name + ".csv"), trace::format_csv(table)));
    }
  }
  if (comparison.runs.size() < 2) return Status::ok();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    return make_error(StatusCode::kIoError, out_dir.string(),
                      ": could not create the directory: ", ec.message());
  const trace::TextTable table = trace::comparison_table(comparison, std::nullopt);
  return write_text(out_dir / (table.name + ".csv"), trace::format_csv(table));
}

}  // namespace fovea::app
