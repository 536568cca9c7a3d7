#include "trace/report_io.h"

#include <fmt/format.h>

#include <fstream>
#include <string>
#include <system_error>

#include "core/output_file.h"
#include "trace/chrome_trace.h"

namespace fovea::trace {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "fovea-trace-report";
constexpr int kVersion = 1;

json stats_json(const Stats& s, const char* prefix) {
  const std::string p = prefix;
  return json{{p + "total_ns", s.total},  {"instances", s.instances}, {p + "avg_ns", s.avg},
              {p + "med_ns", s.med},      {p + "min_ns", s.min},      {p + "max_ns", s.max},
              {p + "stddev_ns", s.stddev}};
}

json range_json(const RangeRecord& r) {
  return json{{"domain", r.domain},
              {"name", r.name},
              {"style", range_style_name(r.style)},
              {"thread", r.thread},
              {"start_ns", r.start_ns},
              {"end_ns", r.end_ns},
              {"level", r.level},
              {"batch", r.batch ? json(*r.batch) : json(nullptr)}};
}

json op_json(const GpuOpRecord& o) {
  return json{{"kind", gpu_op_kind_name(o.kind)},
              {"name", o.name},
              {"device", o.device},
              {"stream", o.stream},
              {"start_ns", o.start_ns},
              {"end_ns", o.end_ns},
              {"correlation", o.correlation},
              {"api_name", o.api_name},
              {"api_thread", o.api_thread},
              {"api_start_ns", o.api_start_ns},
              {"api_end_ns", o.api_end_ns}};
}

json blocking_call_json(const BlockingCall& c) {
  return json{{"name", c.name}, {"thread", c.thread}, {"start_ns", c.start_ns}, {"end_ns", c.end_ns}};
}

// Reads one typed field of a JSON object; `where` names the object ("ranges[3]").
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  template <typename T>
  Status read(const char* key, T* out) const {
    FOVEA_ASSIGN_OR_RETURN(const json* value, find(key));
    if constexpr (std::is_same_v<T, std::string>) {
      if (!value->is_string()) return wrong(key, "a string");
      *out = value->get<std::string>();
    } else if constexpr (std::is_unsigned_v<T>) {
      if (!value->is_number_unsigned()) return wrong(key, "a non-negative integer");
      *out = value->get<T>();
    } else {
      if (!value->is_number_integer()) return wrong(key, "an integer");
      *out = value->get<T>();
    }
    return Status::ok();
  }

  Status read_optional(const char* key, std::optional<std::int64_t>* out) const {
    FOVEA_ASSIGN_OR_RETURN(const json* value, find(key));
    if (value->is_null()) {
      *out = std::nullopt;
      return Status::ok();
    }
    std::int64_t v = 0;
    FOVEA_TRY(read(key, &v));
    *out = v;
    return Status::ok();
  }

  template <typename Enum>
  Status read_enum(const char* key, std::optional<Enum> (*parse)(std::string_view), Enum* out) const {
    std::string text;
    FOVEA_TRY(read(key, &text));
    const std::optional<Enum> value = parse(text);
    if (!value)
      return make_error(StatusCode::kCorruptData, "key '", where_, key, "': unknown value '", text, "'");
    *out = *value;
    return Status::ok();
  }

  Result<const json*> array(const char* key) const {
    FOVEA_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_array()) return wrong(key, "an array");
    return value;
  }

 private:
  Result<const json*> find(const char* key) const {
    if (!object_.is_object()) {
      return make_error(StatusCode::kCorruptData, "'", where_.empty() ? "(top level)" : where_,
                        "' is not an object");
    }
    auto it = object_.find(key);
    if (it == object_.end())
      return make_error(StatusCode::kCorruptData, "key '", where_, key, "' is missing");
    return &*it;
  }
  Status wrong(const char* key, const char* expected) const {
    return make_error(StatusCode::kCorruptData, "key '", where_, key, "' is not ", expected);
  }

  const json& object_;
  std::string where_;  // with a trailing "." when not the top level
};

Result<RangeRecord> range_from_json(const json& j, const std::string& where) {
  const Fields f(j, where + ".");
  RangeRecord r;
  FOVEA_TRY(f.read("domain", &r.domain));
  FOVEA_TRY(f.read("name", &r.name));
  FOVEA_TRY(f.read_enum("style", parse_range_style, &r.style));
  FOVEA_TRY(f.read("thread", &r.thread));
  FOVEA_TRY(f.read("start_ns", &r.start_ns));
  FOVEA_TRY(f.read("end_ns", &r.end_ns));
  FOVEA_TRY(f.read("level", &r.level));
  FOVEA_TRY(f.read_optional("batch", &r.batch));
  if (r.end_ns < r.start_ns)
    return make_error(StatusCode::kCorruptData, "key '", where, ".end_ns' is before start_ns");
  return r;
}

Result<GpuOpRecord> op_from_json(const json& j, const std::string& where) {
  const Fields f(j, where + ".");
  GpuOpRecord o;
  FOVEA_TRY(f.read_enum("kind", parse_gpu_op_kind, &o.kind));
  FOVEA_TRY(f.read("name", &o.name));
  FOVEA_TRY(f.read("device", &o.device));
  FOVEA_TRY(f.read("stream", &o.stream));
  FOVEA_TRY(f.read("start_ns", &o.start_ns));
  FOVEA_TRY(f.read("end_ns", &o.end_ns));
  FOVEA_TRY(f.read("correlation", &o.correlation));
  FOVEA_TRY(f.read("api_name", &o.api_name));
  FOVEA_TRY(f.read("api_thread", &o.api_thread));
  FOVEA_TRY(f.read("api_start_ns", &o.api_start_ns));
  FOVEA_TRY(f.read("api_end_ns", &o.api_end_ns));
  if (o.end_ns < o.start_ns)
    return make_error(StatusCode::kCorruptData, "key '", where, ".end_ns' is before start_ns");
  return o;
}

Result<BlockingCall> blocking_call_from_json(const json& j, const std::string& where) {
  const Fields f(j, where + ".");
  BlockingCall c;
  FOVEA_TRY(f.read("name", &c.name));
  FOVEA_TRY(f.read("thread", &c.thread));
  FOVEA_TRY(f.read("start_ns", &c.start_ns));
  FOVEA_TRY(f.read("end_ns", &c.end_ns));
  if (c.end_ns < c.start_ns)
    return make_error(StatusCode::kCorruptData, "key '", where, ".end_ns' is before start_ns");
  return c;
}

template <typename Record>
Status read_records(const Fields& top, const char* key,
                    Result<Record> (*parse)(const json&, const std::string&), std::vector<Record>* out) {
  FOVEA_ASSIGN_OR_RETURN(const json* items, top.array(key));
  for (std::size_t i = 0; i < items->size(); ++i) {
    FOVEA_ASSIGN_OR_RETURN(Record record, parse((*items)[i], fmt::format("{}[{}]", key, i)));
    out->push_back(std::move(record));
  }
  return Status::ok();
}

Status write_json(const json& j, const std::filesystem::path& path) {
  return write_file_atomically(path, j.dump(1) + '\n', "trace file");
}

}  // namespace

json tables_to_json(const Tables& t) {
  json proj = json::array();
  for (const GpuProjRow& r : t.gpu_proj) {
    json row = stats_json(r.proj, "proj_");
    row.update({{"range", r.range},
                {"style", range_style_name(r.style)},
                {"total_range_ns", r.total_range_ns},
                {"total_gpu_ops", r.total_gpu_ops},
                {"avg_gpu_ops", r.avg_gpu_ops},
                {"avg_range_level", r.avg_range_level},
                {"avg_num_child", r.avg_num_child}});
    proj.push_back(std::move(row));
  }
  json nvtx = json::array();
  for (const NvtxRow& r : t.nvtx) {
    json row = stats_json(r.time, "");
    row.update({{"range", r.range}, {"style", range_style_name(r.style)}, {"time_percent", r.time_percent}});
    nvtx.push_back(std::move(row));
  }
  json kernels = json::array();
  for (const KernelRow& r : t.kernels) {
    json row = stats_json(r.time, "");
    row.update({{"name", r.name}, {"time_percent", r.time_percent}});
    kernels.push_back(std::move(row));
  }
  json blocking = json::array();
  for (const BlockingCallRow& r : t.blocking_calls) {
    json row = stats_json(r.time, "");
    row.update({{"name", r.name}, {"time_percent", r.time_percent}, {"threads", r.threads}});
    blocking.push_back(std::move(row));
  }
  json by_range = json::array();
  for (const ApiRangeRow& r : t.api_by_range) {
    json row = stats_json(r.time, "");
    row.update({{"range", r.range}, {"name", r.name}, {"range_percent", r.range_percent}});
    by_range.push_back(std::move(row));
  }
  json gaps = json::array();
  for (const GapRow& g : t.gaps) {
    gaps.push_back({{"row", g.row},
                    {"device", g.device},
                    {"duration_ns", g.duration_ns},
                    {"start_ns", g.start_ns},
                    {"end_ns", g.end_ns}});
  }
  return json{{"nvtx_gpu_proj_sum", std::move(proj)},      {"nvtx_sum", std::move(nvtx)},
              {"cuda_gpu_kern_sum", std::move(kernels)},   {"cuda_api_blocking_sum", std::move(blocking)},
              {"cuda_api_range_sum", std::move(by_range)}, {"gpu_gaps", std::move(gaps)}};
}

json report_to_json(const Report& report) {
  const TraceData& d = report.data;
  json ranges = json::array();
  for (const RangeRecord& r : d.ranges) ranges.push_back(range_json(r));
  json ops = json::array();
  for (const GpuOpRecord& o : d.ops) ops.push_back(op_json(o));
  json blocking = json::array();
  for (const BlockingCall& c : d.blocking_calls) blocking.push_back(blocking_call_json(c));
  return json{{"format", kFormat},
              {"version", kVersion},
              {"mode", capture_mode_name(d.mode)},
              {"label", d.label},
              {"duration_ns", d.duration_ns},
              {"gap_threshold_ns", report.tables.gap_threshold_ns},
              {"ranges", std::move(ranges)},
              {"ops", std::move(ops)},
              {"blocking_calls", std::move(blocking)},
              {"tables", tables_to_json(report.tables)}};
}

Result<Report> report_from_json(const json& j) {
  const Fields top(j, "");
  std::string format;
  int version = 0;
  FOVEA_TRY(top.read("format", &format));
  if (format != kFormat)
    return make_error(StatusCode::kCorruptData, "key 'format' is '", format, "', not ", kFormat);
  FOVEA_TRY(top.read("version", &version));
  if (version != kVersion) {
    return make_error(StatusCode::kUnsupported, "key 'version' is ", std::to_string(version),
                      "; this fovea reads version ", std::to_string(kVersion));
  }
  Report report;
  TraceData& d = report.data;
  FOVEA_TRY(top.read_enum("mode", parse_capture_mode, &d.mode));
  FOVEA_TRY(top.read("label", &d.label));
  FOVEA_TRY(top.read("duration_ns", &d.duration_ns));
  std::int64_t threshold = 0;
  FOVEA_TRY(top.read("gap_threshold_ns", &threshold));
  FOVEA_TRY(read_records(top, "ranges", range_from_json, &d.ranges));
  FOVEA_TRY(read_records(top, "ops", op_from_json, &d.ops));
  // Absent in reports written before blocking calls were recorded.
  if (j.contains("blocking_calls")) {
    FOVEA_TRY(read_records(top, "blocking_calls", blocking_call_from_json, &d.blocking_calls));
  }
  report.tables = analyze(d, threshold);
  return report;
}

Status write_report(const Report& report, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return make_error(StatusCode::kIoError, dir.string(), ": could not create the directory: ", ec.message());
  FOVEA_TRY(write_json(report_to_json(report), dir / kReportFile));
  return write_json(chrome_trace(report.data), dir / kTraceFile);
}

Result<Report> read_report(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return make_error(StatusCode::kNotFound, dir.string(), ": no such run directory");
  }
  const std::filesystem::path path = dir / kReportFile;
  std::ifstream in(path);
  if (!in) {
    if (std::filesystem::exists(dir / kStatsFile, ec)) {
      return make_error(StatusCode::kNotFound, path.string(), ": not found; ", kStatsFile,
                        " beside it holds the run's statistics, not a trace (trace a run with --trace ",
                        dir.string(), ")");
    }
    return make_error(StatusCode::kNotFound, path.string(), ": not found (is this a --trace directory?)");
  }
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(StatusCode::kCorruptData, path.string(), ": not valid JSON");
  // Older `fovea demo` folders and `--report DIR/report.json` put the statistics under this name.
  if (j.is_object() && !j.contains("format") && j.contains("elapsed_s")) {
    return make_error(StatusCode::kInvalidArgument, path.string(),
                      ": holds a run's statistics (--report), not a trace (trace a run with --trace ",
                      dir.string(), ")");
  }
  auto report = report_from_json(j);
  if (!report.is_ok()) return report.status().with_context(path.string());
  return report;
}

}  // namespace fovea::trace
