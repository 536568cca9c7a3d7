#include "trace/report_io.h"

#include <gtest/gtest.h>

#include <fstream>

#include "trace/report_format.h"
#include "trace/synthetic.h"
#include "trace/temp_dir.h"

namespace fovea::trace::testing {
namespace {

using nlohmann::json;

Report sample_report() {
  Report r;
  r.data.mode = CaptureMode::kCupti;
  r.data.label = "batch=4";
  r.data.duration_ns = 20'000'000;
  r.data.ranges = {range("pipeline", 0, 10'000'000, 0, 11), range("inference", 100, 2'000'000, 1, 11, 3),
                   range("post", 3'000'000, 5'000'000, 1, 11, 3)};
  r.data.ranges[2].style = RangeStyle::kStartEnd;
  r.data.ops = {kernel("conv", 150, 200, 900'001, 11), kernel("conv", 160, 900'001, 1'700'003, 11),
                kernel("blend<float>(float*, int)", 3'050'000, 3'100'000, 3'600'007, 11)};
  GpuOpRecord copy = kernel("[CUDA memcpy Device-to-Host]", 3'100'000, 4'900'000, 4'950'000, 11);
  copy.kind = GpuOpKind::kMemcpy;
  r.data.ops.push_back(copy);
  r.data.blocking_calls = {
      {.name = "cudaStreamSynchronize", .thread = 11, .start_ns = 5'000'000, .end_ns = 5'400'000}};
  r.tables = analyze(r.data, 700'000);
  return r;
}

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(TraceReportIo, RoundTripReproducesRecordsAndTables) {
  TempDir dir;
  const Report original = sample_report();
  ASSERT_TRUE(write_report(original, dir.path()).is_ok());
  auto loaded = read_report(dir.path());
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->data, original.data);
  EXPECT_EQ(loaded->tables, original.tables);
  EXPECT_EQ(loaded->tables.gap_threshold_ns, 700'000);
  // The tables stored for other tools are the ones recomputed from the records, to the bit.
  EXPECT_EQ(read_json(dir.path() / kReportFile).at("tables"), tables_to_json(loaded->tables));
  const auto loaded_tables = run_tables(loaded->tables, std::nullopt);
  const auto original_tables = run_tables(original.tables, std::nullopt);
  for (std::size_t i = 0; i < loaded_tables.size(); ++i) {
    EXPECT_EQ(format_csv(loaded_tables[i]), format_csv(original_tables[i])) << loaded_tables[i].name;
  }
}

TEST(TraceReportIo, MissingDirectoryIsNamed) {
  auto r = read_report("/nonexistent/fovea-run");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/fovea-run"), std::string::npos);
}

TEST(TraceReportIo, MissingReportFileIsNamed) {
  TempDir dir;
  auto r = read_report(dir.path());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("report.json"), std::string::npos) << r.status().message();
}

// A folder with a run's statistics but no trace (a `fovea demo` folder, a --report file named
// report.json) says so instead of reporting missing trace keys.
TEST(TraceReportIo, StatisticsAreNotTakenForATrace) {
  TempDir dir;
  write_text(dir.path() / kStatsFile, "{\"elapsed_s\": 1.5}");
  auto r = read_report(dir.path());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("stats.json beside it holds the run's statistics, not a trace"),
            std::string::npos)
      << r.status().message();
  write_text(dir.path() / kReportFile, "{\"elapsed_s\": 1.5, \"batches\": 3}");
  r = read_report(dir.path());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("report.json: holds a run's statistics (--report), not a trace"),
            std::string::npos)
      << r.status().message();
}

TEST(TraceReportIo, CorruptJsonIsNamed) {
  TempDir dir;
  write_text(dir.path() / kReportFile, "{\"format\": \"fovea-trace-report\", \"ranges\": [");
  auto r = read_report(dir.path());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruptData);
  EXPECT_NE(r.status().message().find("report.json: not valid JSON"), std::string::npos)
      << r.status().message();
}

// Each broken field is reported with its file and its key path.
TEST(TraceReportIo, BadFieldsNameTheirKey) {
  struct Case {
    const char* pointer;  // JSON pointer to break
    json value;           // what to put there (null: remove the key)
    const char* expected;
  };
  const Case cases[] = {
      {"/ranges/1/start_ns", nullptr, "key 'ranges[1].start_ns' is missing"},
      {"/ranges/0/end_ns", "soon", "key 'ranges[0].end_ns' is not an integer"},
      {"/ops/2/stream", -3, "key 'ops[2].stream' is not a non-negative integer"},
      {"/ops/0/kind", "shader", "key 'ops[0].kind': unknown value 'shader'"},
      {"/ranges/0/style", "Nested", "key 'ranges[0].style': unknown value 'Nested'"},
      {"/mode", "magic", "key 'mode': unknown value 'magic'"},
      {"/ops", json::object(), "key 'ops' is not an array"},
      {"/format", "chrome", "key 'format' is 'chrome'"},
      {"/version", 99, "key 'version' is 99"},
      {"/ranges/1/end_ns", 1, "key 'ranges[1].end_ns' is before start_ns"},
  };
  const json good = report_to_json(sample_report());
  for (const Case& c : cases) {
    TempDir dir;
    json bad = good;
    const json::json_pointer pointer(c.pointer);
    if (c.value.is_null()) {
      bad[pointer.parent_pointer()].erase(pointer.back());
    } else {
      bad[pointer] = c.value;
    }
    write_text(dir.path() / kReportFile, bad.dump());
    auto r = read_report(dir.path());
    ASSERT_FALSE(r.is_ok()) << c.pointer;
    EXPECT_NE(r.status().message().find("report.json: "), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos) << r.status().message();
  }
}

TEST(TraceReportIo, TopLevelThatIsNotAnObject) {
  TempDir dir;
  write_text(dir.path() / kReportFile, "[1, 2]");
  auto r = read_report(dir.path());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("is not an object"), std::string::npos) << r.status().message();
}

TEST(TraceReportIo, ChromeTraceHasRangesOpsAndFlows) {
  TempDir dir;
  ASSERT_TRUE(write_report(sample_report(), dir.path()).is_ok());
  const json events = read_json(dir.path() / kTraceFile).at("traceEvents");
  ASSERT_TRUE(events.is_array());
  int ranges = 0, ops = 0, calls = 0, flow_starts = 0, flow_ends = 0;
  bool gpu_process = false;
  for (const json& e : events) {
    const std::string ph = e.at("ph");
    if (ph == "X" && e.at("cat") == "fovea") {
      ++ranges;
      EXPECT_EQ(e.at("pid"), 1);
      EXPECT_EQ(e.at("tid"), 11);
    }
    if (ph == "X" && (e.at("cat") == "kernel" || e.at("cat") == "memcpy")) {
      ++ops;
      EXPECT_NE(e.at("pid"), 1);
    }
    if (ph == "X" && e.at("cat") == "cuda_api") ++calls;
    if (ph == "s") ++flow_starts;
    if (ph == "f") {
      ++flow_ends;
      EXPECT_EQ(e.at("bp"), "e");
    }
    if (ph == "M" && e.at("name") == "process_name" && e.at("args").at("name") == "GPU 0") gpu_process = true;
  }
  EXPECT_EQ(ranges, 3);
  EXPECT_EQ(ops, 4);
  EXPECT_EQ(calls, 5);  // the four ops' launching calls and the one blocking call
  EXPECT_EQ(flow_starts, 4);
  EXPECT_EQ(flow_ends, 4);
  EXPECT_TRUE(gpu_process);
  // Microseconds, with the nanoseconds kept as fractions.
  for (const json& e : events) {
    if (e.at("ph") == "X" && e.at("name") == "blend<float>(float*, int)") {
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 3100.0);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 500.007);
    }
  }
}

TEST(TraceReportFormat, CsvQuotesAndAlignedColumns) {
  const Tables t = sample_report().tables;
  const std::vector<TextTable> tables = run_tables(t, std::nullopt);
  ASSERT_EQ(tables.size(), 6u);
  EXPECT_EQ(tables[0].rows.size(), 3u);
  EXPECT_EQ(tables[0].name, "nvtx_gpu_proj_sum");
  EXPECT_EQ(tables[2].name, "cuda_gpu_kern_sum");
  const std::string csv = format_csv(tables[2]);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name");
  EXPECT_NE(csv.find(",\"blend<float>(float*, int)\"\n"), std::string::npos) << csv;
  const std::string text = format_aligned(tables[0]);
  EXPECT_EQ(text.find("Range      Style  "), 0u) << text;  // padded to "inference"
  EXPECT_EQ(run_tables(t, 1)[1].rows.size(), 1u);          // --top
  EXPECT_EQ(tables[3].name, "cuda_api_blocking_sum");
  ASSERT_EQ(tables[3].rows.size(), 1u);
  EXPECT_EQ(tables[3].rows[0].back(), "cudaStreamSynchronize");
  EXPECT_EQ(tables[4].name, "cuda_api_range_sum");
  EXPECT_FALSE(tables[4].rows.empty());
  EXPECT_EQ(tables[5].name, "gpu_gaps");
}

// Reports written before blocking calls were recorded have no such key, and still read.
TEST(TraceReportIo, ReportsWithoutBlockingCallsStillRead) {
  TempDir dir;
  ASSERT_TRUE(write_report(sample_report(), dir.path()).is_ok());
  json older = read_json(dir.path() / kReportFile);
  older.erase("blocking_calls");
  write_text(dir.path() / kReportFile, older.dump());
  auto r = read_report(dir.path());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->data.blocking_calls.empty());
  EXPECT_EQ(r->data.ops.size(), 4u);
}

}  // namespace
}  // namespace fovea::trace::testing
