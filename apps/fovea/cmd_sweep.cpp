// fovea sweep CONFIG.yaml --param key=v1,v2,... [--param ...] --out DIR: the flow a configuration
// describes, run once per combination of the listed values (the cartesian product, the first
// --param varying slowest; keys joined by '+' in one --param take each value together, e.g. both
// secondary models' batch sizes), each run traced into DIR/<label>/; then the multi-run report of
// `fovea report`, the fastest configuration by frames per second and its bottleneck stage, and
// DIR/sweep.json.
//
// Every combination is checked before anything runs, so a typo in the last value costs nothing.
// A failing run is reported and the sweep goes on; Ctrl-C finalizes the run in progress, skips the
// rest and still writes the report of the runs that completed.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/log.h"
#include "pipeline/config.h"
#include "pipeline/flow.h"
#include "report_output.h"
#include "trace/compare.h"
#include "trace/report_io.h"

namespace fovea::app {
namespace {

// A folder name longer than this gets cut; well below the 255 bytes of common file systems, so
// the run number appended after it still fits.
constexpr std::size_t kMaxFolderName = 200;

struct SweepArgs {
  std::string config;
  std::vector<std::string> params;
  std::string out_dir;
  std::string device = "auto";
  bool csv = false;
  std::size_t top = 0;  // 0: every row
};

// The configuration keys a --param's key sets: "a+b" sets a and b to each value.
std::vector<std::string> keys_of(std::string_view key) {
  std::vector<std::string> keys;
  for (std::size_t begin = 0;;) {
    const std::size_t plus = key.find('+', begin);
    keys.emplace_back(key.substr(begin, plus - begin));
    if (plus == std::string_view::npos) return keys;
    begin = plus + 1;
  }
}

struct Param {
  std::string key;                  // as given: one key, or several joined by '+'
  std::vector<std::string> keys;    // the configuration keys it sets (keys_of)
  std::vector<std::string> values;  // YAML, as given
  bool sets(std::string_view config_key) const {
    return std::find(keys.begin(), keys.end(), config_key) != keys.end();
  }
};

enum class Outcome { kNotRun, kOk, kPartial, kFailed, kInterrupted };

struct SweepRun {
  std::string label;   // "mux.batch_size=4,model.precision=fp16"
  std::string folder;  // the label as a safe folder name
  std::vector<std::pair<std::string, std::string>> values;
  pipeline::PipelineConfig config;
  Outcome outcome = Outcome::kNotRun;
  std::string error;
  std::optional<pipeline::FlowResult> result;
  std::optional<std::size_t> report_index;      // into the comparison's runs, when traced
  std::optional<trace::Bottleneck> bottleneck;  // the comparison's, so the HTML page says the same
};

// --- the command line -----------------------------------------------------------------------------

// "1, 2,[0.1,0.2,0.3]" -> {"1", "2", "[0.1,0.2,0.3]"}: values are YAML, so a comma inside brackets,
// braces or quotes (a quoted YAML scalar: the quote opens the value) belongs to the value; blanks
// around a value are dropped.
Result<std::vector<std::string>> split_values(std::string_view list, const std::string& key) {
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (const char c : list) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if ((c == '"' || c == '\'') && current.find_first_not_of(" \t") == std::string::npos) {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      values.push_back(std::move(current));
      current.clear();
      continue;
    }
    current += c;
  }
  if (quote != 0 || depth != 0) {
    return make_error(StatusCode::kInvalidArgument, "--param ", key, ": unbalanced quote or bracket in '",
                      std::string(list), "'");
  }
  values.push_back(std::move(current));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t first = values[i].find_first_not_of(" \t");
    if (first == std::string::npos) {
      return make_error(StatusCode::kInvalidArgument, "--param ", key, ": value ", std::to_string(i + 1),
                        " of '", std::string(list), "' is empty");
    }
    values[i] = values[i].substr(first, values[i].find_last_not_of(" \t") + 1 - first);
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i)) {
      return make_error(StatusCode::kInvalidArgument, "--param ", key, ": value '", values[i],
                        "' is listed twice");
    }
  }
  return values;
}

Result<std::vector<Param>> parse_params(const std::vector<std::string>& texts) {
  std::vector<Param> params;
  for (const std::string& text : texts) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      return make_error(StatusCode::kInvalidArgument, "--param ", text,
                        ": expected key=value1,value2,... (e.g. mux.batch_size=1,2,4)");
    }
    Param param{.key = text.substr(0, equals)};
    if (equals + 1 == text.size()) {
      return make_error(StatusCode::kInvalidArgument, "--param ", param.key, ": no values after '=' (e.g. ",
                        param.key, "=1,2,4)");
    }
    param.keys = keys_of(param.key);
    for (const std::string& key : param.keys) {
      if (key.empty()) {
        return make_error(StatusCode::kInvalidArgument, "--param ", param.key,
                          ": an empty key (keys that vary together are joined by one '+')");
      }
      const auto elsewhere = [&key](const Param& other) { return other.sets(key); };
      if (std::count(param.keys.begin(), param.keys.end(), key) > 1 ||
          std::any_of(params.begin(), params.end(), elsewhere)) {
        return make_error(StatusCode::kInvalidArgument, "--param ", param.key, ": ", key,
                          " is given twice; list all its values in one --param");
      }
    }
    FOVEA_ASSIGN_OR_RETURN(param.values, split_values(std::string_view(text).substr(equals + 1), param.key));
    params.push_back(std::move(param));
  }
  return params;
}

// Letters, digits and . _ - + = , stay; every other byte (/, spaces, brackets, quotes, ...)
// becomes '_'. A name over kMaxFolderName bytes is cut, and a name cut or already taken by an
// earlier run gets "~N" (N: the run's number, from 1) appended, so every run has its own folder.
std::string folder_name(const std::string& label, std::size_t number, std::set<std::string>& taken) {
  std::string name;
  for (const char c : label) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string_view("._-+=,").find(c) != std::string_view::npos;
    name += safe ? c : '_';
  }
  if (name.size() > kMaxFolderName || taken.contains(name)) {
    name = name.substr(0, kMaxFolderName) + "~" + std::to_string(number);
  }
  taken.insert(name);
  return name;
}

// The cartesian product, the first --param varying slowest.
std::vector<std::vector<std::pair<std::string, std::string>>> combinations(const std::vector<Param>& params) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out(1);
  for (const Param& param : params) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& prefix : out) {
      for (const std::string& value : param.values) {
        next.push_back(prefix);
        next.back().emplace_back(param.key, value);
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string label_of(const std::vector<std::pair<std::string, std::string>>& values) {
  std::string label;
  for (const auto& [key, value] : values) label += (label.empty() ? "" : ",") + key + "=" + value;
  return label;
}

// Each run's files stay in its folder: the stats report, and the video and metadata outputs unless
// a --param sets where they go.
void redirect_outputs(pipeline::PipelineConfig& config, const std::filesystem::path& run_dir,
                      const std::vector<Param>& params) {
  const auto swept = [&params](std::string_view key) {
    return std::any_of(params.begin(), params.end(), [key](const Param& p) { return p.sets(key); });
  };
  config.stats.progress = false;
  config.stats.report = (run_dir / trace::kStatsFile).string();
  if (config.sinks.video && !swept("sinks.video.output_dir")) {
    config.sinks.video->output_dir = (run_dir / "video").string();
  }
  if (config.sinks.metadata && !swept("sinks.metadata.path")) {
    config.sinks.metadata->path =
        (run_dir / std::filesystem::path(config.sinks.metadata->path).filename()).string();
  }
}

// apply_override for each key a --param's key names, its errors worded for --param: "--param
// mux.batch_size=0: mux.batch_size: must be between 1 and 1024, got 0" (apply_override names the
// assignment as a --set option).
Status apply_value(pipeline::PipelineConfig& config, const std::string& param_key, const std::string& value,
                   std::string_view context) {
  for (const std::string& key : keys_of(param_key)) {
    const std::string assignment = key + "=" + value;
    Status status = pipeline::apply_override(config, assignment);
    if (status.is_ok()) continue;
    std::string_view reason = status.message();
    const std::string set_prefix = "--set " + assignment + ": ";
    if (reason.starts_with(set_prefix)) reason.remove_prefix(set_prefix.size());
    return Status(status.code(), fmt::format("--param {}: {}", context, reason));
  }
  return Status::ok();
}

// Every combination, checked: each value alone on the file's configuration first (so that a bad
// value is named once, not once per combination), then each combination whole.
Result<std::vector<SweepRun>> plan_runs(const pipeline::PipelineConfig& base,
                                        const std::vector<Param>& params,
                                        const std::filesystem::path& out_dir) {
  for (const Param& param : params) {
    for (const std::string& value : param.values) {
      pipeline::PipelineConfig config = base;
      FOVEA_TRY(apply_value(config, param.key, value, param.key + "=" + value));
    }
  }
  std::vector<SweepRun> runs;
  std::set<std::string> taken;
  for (auto& values : combinations(params)) {
    SweepRun run{.label = label_of(values), .values = std::move(values), .config = base};
    run.folder = folder_name(run.label, runs.size() + 1, taken);
    for (const auto& [key, value] : run.values) {
      FOVEA_TRY(apply_value(run.config, key, value, "combination " + run.label));
    }
    redirect_outputs(run.config, out_dir / run.folder, params);
    runs.push_back(std::move(run));
  }
  return runs;
}

// --- running --------------------------------------------------------------------------------------

pipeline::DeviceChoice device_choice(const std::string& device) {
  return device == "cuda"  ? pipeline::DeviceChoice::kGpu
         : device == "cpu" ? pipeline::DeviceChoice::kCpu
                           : pipeline::DeviceChoice::kAuto;
}

double fps(const pipeline::FlowResult& result) {
  return result.stats.fps(result.stats.total_frames());
}

// The trace names the run by its label (the flow names it by its first source), so that
// `fovea report DIR/*` labels the runs as the sweep does.
Result<trace::Report> relabel_trace(const std::filesystem::path& run_dir, const std::string& label) {
  FOVEA_ASSIGN_OR_RETURN(trace::Report report, trace::read_report(run_dir));
  report.data.label = label;
  FOVEA_TRY(trace::write_report(report, run_dir));
  return report;
}

// Runs one combination into its folder; the outcome and figures go into `run`, the trace (when
// written) into `reports`.
void execute(SweepRun& run, const SweepArgs& args,
             std::vector<std::pair<std::string, trace::Report>>& reports) {
  const std::filesystem::path run_dir = std::filesystem::path(args.out_dir) / run.folder;
  std::error_code ec;
  // A trace left by an earlier sweep must not stand in for this run's.
  std::filesystem::remove(run_dir / trace::kReportFile, ec);
  std::filesystem::remove(run_dir / trace::kTraceFile, ec);
  const pipeline::FlowOptions options{.device = device_choice(args.device),
                                      .interrupt = &interrupt_flag(),
                                      .progress = nullptr,
                                      .trace_dir = run_dir.string()};
  Result<pipeline::FlowResult> result = pipeline::run_flow(run.config, options);
  if (!result.is_ok()) {
    run.outcome = result.status().code() == StatusCode::kCancelled ? Outcome::kInterrupted : Outcome::kFailed;
    run.error = result.status().to_string();
    return;
  }
  const pipeline::PipelineStats& stats = result->stats;
  if (result->interrupted) {
    run.outcome = Outcome::kInterrupted;
  } else if (stats.total_frames() == 0 && result->partial()) {
    run.outcome = Outcome::kFailed;
    run.error = "every source failed";
  } else if (result->partial()) {
    run.outcome = Outcome::kPartial;
    run.error = fmt::format("{} of {} sources failed, {} outputs failed", stats.failed_sources(),
                            stats.sources.size(), result->failed_outputs);
  } else if (!result->report_status.is_ok()) {
    run.outcome = Outcome::kFailed;
    run.error = result->report_status.to_string();
  } else {
    run.outcome = Outcome::kOk;
  }
  run.result = std::move(*result);
  Result<trace::Report> report = relabel_trace(run_dir, run.label);
  if (report.is_ok()) {
    run.report_index = reports.size();
    reports.emplace_back(run.label, std::move(*report));
  } else if (run.outcome == Outcome::kOk) {
    run.outcome = Outcome::kFailed;
    run.error = "no trace: " + report.status().to_string();
  }
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kNotRun: return "not run";
    case Outcome::kOk: return "ok";
    case Outcome::kPartial: return "partial";
    case Outcome::kFailed: return "failed";
    case Outcome::kInterrupted: return "interrupted";
  }
  return "";
}

// "[2/5] mux.batch_size=2: 123.4 fps, 96 frames in 0.78 s, ok"
void print_run_line(const SweepRun& run, std::size_t number, std::size_t count) {
  std::string line = fmt::format("[{}/{}] {}: ", number, count, run.label);
  if (run.result) {
    line += fmt::format("{:.1f} fps, {} frames in {:.2f} s, ", fps(*run.result),
                        run.result->stats.total_frames(), run.result->stats.elapsed_s);
  }
  line += outcome_name(run.outcome);
  if (!run.error.empty()) line += " (" + run.error + ")";
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// --- the report -----------------------------------------------------------------------------------

std::string bottleneck_text(const SweepRun& run) {
  return run.report_index ? trace::bottleneck_text(run.bottleneck) : "unknown (the run has no trace)";
}

// The completed run (not partial, not interrupted) with the highest total frames per second.
std::optional<std::size_t> fastest_run(const std::vector<SweepRun>& runs) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].outcome != Outcome::kOk) continue;
    if (!best || fps(*runs[i].result) > fps(*runs[best.value()].result)) best = i;
  }
  return best;
}

nlohmann::json bottleneck_json(const std::optional<trace::Bottleneck>& bottleneck) {
  if (!bottleneck) return nullptr;
  return {{"stage", bottleneck->range},
          {"ms_per_instance", bottleneck->avg_ns / 1e6},
          {"total_ms", static_cast<double>(bottleneck->total_ns) / 1e6},
          {"source", bottleneck->gpu ? "gpu projection" : "cpu time"}};
}

nlohmann::json sweep_json(const SweepArgs& args, const std::vector<Param>& params,
                          const std::vector<SweepRun>& runs, std::optional<std::size_t> fastest) {
  nlohmann::json j;
  j["config"] = args.config;
  j["device"] = args.device;
  j["params"] = nlohmann::json::array();
  for (const Param& param : params) j["params"].push_back({{"key", param.key}, {"values", param.values}});
  j["runs"] = nlohmann::json::array();
  for (const SweepRun& run : runs) {
    nlohmann::json r{{"label", run.label}, {"folder", run.folder}, {"status", outcome_name(run.outcome)}};
    r["values"] = nlohmann::json::object();
    for (const auto& [key, value] : run.values) r["values"][key] = value;
    r["error"] = run.error;
    if (run.result) {
      r["fps"] = fps(*run.result);
      r["frames"] = run.result->stats.total_frames();
      r["elapsed_s"] = run.result->stats.elapsed_s;
      r["ran_on"] = run.result->device;
    }
    r["bottleneck"] = bottleneck_json(run.bottleneck);
    j["runs"].push_back(std::move(r));
  }
  if (fastest) {
    const SweepRun& run = runs[*fastest];
    j["fastest"] = {{"label", run.label},
                    {"folder", run.folder},
                    {"fps", fps(*run.result)},
                    {"bottleneck", bottleneck_json(run.bottleneck)}};
  } else {
    j["fastest"] = nullptr;
  }
  return j;
}

// The multi-run report of `fovea report DIR/<label>...` for the traced runs, then the fastest
// configuration. The comparison's fastest run is the sweep's (frames per second), so that the
// HTML page marks the one named here.
Status report(const SweepArgs& args, const std::vector<Param>& params, std::vector<SweepRun>& runs,
              std::vector<std::pair<std::string, trace::Report>> reports) {
  const std::filesystem::path out_dir(args.out_dir);
  trace::Comparison comparison = trace::compare_reports(std::move(reports));
  const std::optional<std::size_t> fastest = fastest_run(runs);
  comparison.fastest.reset();
  if (fastest) comparison.fastest = runs[*fastest].report_index;
  std::vector<std::filesystem::path> run_dirs;
  for (SweepRun& run : runs) {
    if (!run.report_index) continue;
    run.bottleneck = comparison.runs[*run.report_index].bottleneck;
    run_dirs.push_back(out_dir / run.folder);
  }
  if (!comparison.runs.empty()) {
    std::printf("\n");
    for (const trace::RunSummary& run : comparison.runs) print_run_header(run);
    print_table(trace::comparison_table(comparison, args.top > 0 ? std::optional(args.top) : std::nullopt));
    std::printf("\n");
  }
  for (const SweepRun& run : runs) {
    if (run.result && run.result->stats.total_frames() > 0)
      std::printf("bottleneck of %s: %s\n", run.label.c_str(), bottleneck_text(run).c_str());
  }
  if (fastest) {
    const SweepRun& run = runs[*fastest];
    std::printf("fastest: %s (%.1f fps); its bottleneck: %s\n", run.label.c_str(), fps(*run.result),
                bottleneck_text(run).c_str());
  } else {
    std::printf("fastest: none (no run completed)\n");
  }
  std::fflush(stdout);
  if (!comparison.runs.empty()) {
    if (args.csv) FOVEA_TRY(write_csv(run_dirs, out_dir, comparison));
    FOVEA_TRY(write_text(out_dir / "report.html", trace::comparison_html(comparison)));
  }
  return write_text(out_dir / "sweep.json", sweep_json(args, params, runs, fastest).dump(2) + "\n");
}

int run_sweep(const SweepArgs& args) {
  Result<std::vector<Param>> params = parse_params(args.params);
  if (!params.is_ok()) {
    log_error("{}", params.status().to_string());
    return kExitUsage;
  }
  Result<pipeline::PipelineConfig> base = pipeline::load_config(args.config);
  if (!base.is_ok()) {
    log_error("{}", base.status().to_string());
    return kExitUsage;
  }
  Result<std::vector<SweepRun>> runs = plan_runs(*base, *params, args.out_dir);
  if (!runs.is_ok()) {
    log_error("{}", runs.status().to_string());
    return kExitUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(args.out_dir, ec);
  if (ec) {
    log_error("--out {}: could not create the directory: {}", args.out_dir, ec.message());
    return kExitFailure;
  }
  std::printf("sweep: %zu runs of %s into %s\n", runs->size(), args.config.c_str(), args.out_dir.c_str());
  std::fflush(stdout);
  std::vector<std::pair<std::string, trace::Report>> reports;
  bool interrupted = false;
  for (std::size_t i = 0; i < runs->size() && !interrupted; ++i) {
    SweepRun& run = (*runs)[i];
    if (interrupt_flag()) break;
    execute(run, args, reports);
    print_run_line(run, i + 1, runs->size());
    interrupted = run.outcome == Outcome::kInterrupted || interrupt_flag();
  }
  interrupted = interrupted || interrupt_flag();
  if (Status status = report(args, *params, *runs, std::move(reports)); !status.is_ok()) {
    log_error("{}", status.to_string());
    return interrupted ? kExitInterrupted : kExitFailure;
  }
  if (interrupted) return kExitInterrupted;
  const bool any_failed = std::any_of(runs->begin(), runs->end(),
                                      [](const SweepRun& run) { return run.outcome != Outcome::kOk; });
  return any_failed ? kExitPartial : kExitOk;
}

}  // namespace

void add_sweep_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Run the flow a YAML configuration describes once per combination of parameter values, each "
      "traced, and compare the runs: the multi-run report, the fastest configuration and its bottleneck");
  sweep->add_option("config", args->config, "Configuration file (docs/config.md)")
      ->required()
      ->check(CLI::ExistingFile);
  sweep
      ->add_option("--param", args->params,
                   "key=v1,v2,...: a configuration key and the values it takes, as for fovea run --set "
                   "(values are YAML; commas inside [...] or quotes stay in the value). Repeatable: every "
                   "combination runs, the first --param varying slowest. Keys joined by '+' take each value "
                   "together: models.1.batch_size+models.2.batch_size=8,32")
      ->required()
      ->allow_extra_args(false);  // one key a --param, so the config may follow it
  sweep
      ->add_option("--out", args->out_dir,
                   "Folder for the runs: DIR/<label>/ each (trace.json, report.json, stats.json, and the "
                   "video and metadata outputs unless a --param sets their paths), DIR/report.html, "
                   "DIR/sweep.json. A label is key=value[,key=value...]; in its folder name every "
                   "character but letters, digits and . _ - + = , becomes _, and a name over 200 "
                   "characters or already taken gets ~N (the run's number) appended")
      ->required();
  sweep
      ->add_option("--device", args->device,
                   "Where the flow runs: auto (the GPU when there is one), cuda, cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  sweep->add_flag("--csv", args->csv,
                  "Also write each run's tables as CSV into its folder and the multi-run table into DIR");
  sweep->add_option("--top", args->top, "Print at most N rows per run in the comparison table; 0 prints all")
      ->check(at_least(0));
  sweep->footer(
      "Each run prints one line as it ends (label, fps, frames, status); no progress line. The fastest "
      "configuration is the completed run with the highest total fps; its bottleneck is the range with "
      "the largest projected GPU time, or without GPU data the largest CPU time (as fovea report "
      "and DIR/report.html say).\n"
      "Exit codes: 0 every run completed; 2 a bad --param or configuration (nothing runs); 3 some "
      "runs failed (the others are reported); 1 the report could not be written; 130 Ctrl-C (the "
      "current run is finalized, the rest skipped, the report covers the completed runs).");
  sweep->callback([args, action] { *action = [args] { return run_sweep(*args); }; });
}

}  // namespace fovea::app
