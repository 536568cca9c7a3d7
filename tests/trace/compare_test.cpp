#include "trace/compare.h"

#include <gtest/gtest.h>

#include "trace/report_io.h"
#include "trace/synthetic.h"
#include "trace/temp_dir.h"

namespace fovea::trace::testing {
namespace {

// A run whose pipeline takes `pipeline_ns` on the CPU, with inference and encode projections.
Report run(std::int64_t pipeline_ns, std::int64_t inference_ns, std::int64_t encode_ns,
           const std::string& label = "") {
  TraceData d;
  d.label = label;
  d.ranges = {range("pipeline", 0, pipeline_ns, 0), range("inference", 10, 1000, 1),
              range("encode", 2000, 3000, 1)};
  d.ops = {kernel("infer", 20, 100, 100 + inference_ns), kernel("enc", 2010, 5000, 5000 + encode_ns)};
  return Report{.data = d, .tables = analyze(d)};
}

TEST(TraceCompare, FastestPipelineAndBottlenecks) {
  const Comparison c = compare_reports(
      {{"b1", run(9000, 500, 300)}, {"b4", run(6000, 200, 400)}, {"b16", run(7000, 100, 50)}});
  ASSERT_EQ(c.runs.size(), 3u);
  ASSERT_TRUE(c.fastest.has_value());
  EXPECT_EQ(*c.fastest, 1u);
  EXPECT_EQ(c.runs[1].pipeline_ns, 6000);
  // The pipeline range always holds the most GPU time; it is never the bottleneck.
  EXPECT_EQ(c.runs[0].bottleneck->range, "inference");
  EXPECT_EQ(c.runs[1].bottleneck->range, "encode");
  EXPECT_EQ(c.runs[2].bottleneck->range, "inference");
  const std::string summary = comparison_summary(c);
  EXPECT_NE(summary.find("Fastest pipeline: b4 (0.006 ms wall time)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Bottleneck of b1: inference (0.001 ms GPU per instance, 0.001 ms in total)"),
            std::string::npos)
      << summary;
}

TEST(TraceCompare, NoPipelineRangeMeansNoFastestRun) {
  TraceData d;
  d.ranges = {range("decode", 0, 10)};
  const Comparison c = compare_reports({{"a", Report{.data = d, .tables = analyze(d)}}});
  EXPECT_FALSE(c.fastest.has_value());
  EXPECT_NE(comparison_summary(c).find("none of the runs has a 'pipeline' range"), std::string::npos);
}

// A flow records a `pipeline` range per batch, and batches overlap: the run's time is the span
// from the first one's start to the last one's end, not the sum of their durations.
TEST(TraceCompare, FastestPipelineIsTheWallTimeOfOverlappingRanges) {
  TraceData overlapping;  // three batches in flight together: 300 summed, 200 of wall time
  overlapping.ranges = {range("pipeline", 0, 100, 0, 1), range("pipeline", 50, 150, 0, 2),
                        range("pipeline", 100, 200, 0, 3)};
  TraceData serial;  // one range of 250
  serial.ranges = {range("pipeline", 0, 250)};
  const Comparison c =
      compare_reports({{"overlapping", Report{.data = overlapping, .tables = analyze(overlapping)}},
                       {"serial", Report{.data = serial, .tables = analyze(serial)}}});
  EXPECT_EQ(c.runs[0].pipeline_ns, 200);
  EXPECT_EQ(c.runs[1].pipeline_ns, 250);
  ASSERT_TRUE(c.fastest.has_value());
  EXPECT_EQ(*c.fastest, 0u);
}

// Without GPU data (a CPU run) the bottleneck is the range with the largest CPU time, and the
// HTML page charts CPU time and names the same bottleneck as the terminal's summary.
TEST(TraceCompare, CpuRunsHaveACpuBottleneckAndAChart) {
  TraceData d;
  d.mode = CaptureMode::kCpuOnly;
  d.ranges = {range("pipeline", 0, 1000), range("inference", 10, 710, 1), range("inference", 720, 820, 1),
              range("encode", 830, 990, 1)};
  const Comparison c = compare_reports({{"cpu", Report{.data = d, .tables = analyze(d)}}});
  ASSERT_TRUE(c.runs[0].bottleneck.has_value());
  EXPECT_EQ(c.runs[0].bottleneck->range, "inference");
  EXPECT_FALSE(c.runs[0].bottleneck->gpu);
  EXPECT_EQ(c.runs[0].bottleneck->total_ns, 800);
  EXPECT_EQ(c.runs[0].bottleneck->avg_ns, 400);
  const std::string summary = comparison_summary(c);
  EXPECT_NE(summary.find("Bottleneck of cpu: inference (0.000 ms CPU per instance, 0.001 ms in total; no GPU "
                         "data)"),
            std::string::npos)
      << summary;
  const std::string html = comparison_html(c);
  std::size_t bars = 0;
  for (std::size_t at = html.find("<rect"); at != std::string::npos; at = html.find("<rect", at + 1)) ++bars;
  EXPECT_EQ(bars, 2u) << html;  // inference and encode
  EXPECT_NE(html.find("CPU time per stage"), std::string::npos);
  EXPECT_NE(html.find("<td>inference</td><td>0.001 CPU</td>"), std::string::npos) << html;
}

TEST(TraceCompare, TableHasOneRowGroupPerRun) {
  const Comparison c = compare_reports({{"b1", run(9000, 500, 300)}, {"b4", run(6000, 200, 400)}});
  const TextTable all = comparison_table(c, std::nullopt);
  EXPECT_EQ(all.columns.front(), "Run");
  EXPECT_EQ(all.columns[1], "Range");
  ASSERT_EQ(all.rows.size(), 6u);
  EXPECT_EQ(all.rows[0][0], "b1");
  EXPECT_EQ(all.rows[3][0], "b4");
  EXPECT_EQ(all.rows[3][1], "pipeline");
  EXPECT_EQ(all.rows[4][1], "encode");  // per run, largest projection first
  EXPECT_EQ(comparison_table(c, 1).rows.size(), 2u);
}

TEST(TraceCompare, RunsFromDirectoriesAreLabelled) {
  TempDir dir;
  ASSERT_TRUE(write_report(run(9000, 500, 300), dir.path() / "bs1").is_ok());
  ASSERT_TRUE(write_report(run(6000, 200, 400, "batch 4"), dir.path() / "bs4").is_ok());
  auto c = compare_runs({{.dir = dir.path() / "bs1"},
                         {.dir = dir.path() / "bs4/"},
                         {.dir = dir.path() / "bs1", .label = "again"}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->runs[0].label, "bs1");      // the directory's name
  EXPECT_EQ(c->runs[1].label, "batch 4");  // the recorded label
  EXPECT_EQ(c->runs[2].label, "again");    // the caller's
  EXPECT_EQ(*c->fastest, 1u);
}

// The flow records no label: runs are named by their folders, and same-named folders by their
// paths, so two runs of one clip are told apart.
TEST(TraceCompare, RunsAreLabelledByTheirFoldersAndLabelsAreUnique) {
  TempDir dir;
  for (const char* sub : {"a/run", "b/run", "run1", "run2"})
    ASSERT_TRUE(write_report(run(9000, 500, 300), dir.path() / sub).is_ok());
  auto c = compare_runs({{.dir = dir.path() / "run1/"},
                         {.dir = dir.path() / "run2"},
                         {.dir = dir.path() / "a/run"},
                         {.dir = dir.path() / "b/run"},
                         {.dir = dir.path() / "run2"}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->runs[0].label, "run1");
  EXPECT_EQ(c->runs[1].label, (dir.path() / "run2").string());
  EXPECT_EQ(c->runs[2].label, (dir.path() / "a/run").string());
  EXPECT_EQ(c->runs[3].label, (dir.path() / "b/run").string());
  EXPECT_EQ(c->runs[4].label, (dir.path() / "run2").string() + " #2");
}

TEST(TraceCompare, UnreadableRunFailsWithItsName) {
  TempDir dir;
  ASSERT_TRUE(write_report(run(9000, 500, 300), dir.path() / "ok").is_ok());
  auto c = compare_runs({{.dir = dir.path() / "ok"}, {.dir = dir.path() / "missing"}});
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("missing"), std::string::npos);
}

TEST(TraceCompare, HtmlIsSelfContained) {
  const Comparison c = compare_reports({{"b<1>", run(9000, 500, 300)}, {"b4", run(6000, 200, 400)}});
  const std::string html = comparison_html(c);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("b&lt;1&gt;"), std::string::npos);  // labels are escaped
  EXPECT_EQ(html.find("b<1>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  // One bar per stage per run; the pipeline range is not a stage.
  std::size_t bars = 0;
  for (std::size_t at = html.find("<rect"); at != std::string::npos; at = html.find("<rect", at + 1)) ++bars;
  EXPECT_EQ(bars, 4u);
  EXPECT_NE(html.find(">inference</text>"), std::string::npos);
  EXPECT_EQ(html.find(">pipeline</text>"), std::string::npos);
}

}  // namespace
}  // namespace fovea::trace::testing
