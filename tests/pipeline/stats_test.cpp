#include "pipeline/stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fovea::pipeline {
namespace {

using std::chrono::milliseconds;

TEST(Percentile, NearestRankOnKnownData) {
  std::vector<double> one_to_hundred;
  for (int i = 1; i <= 100; ++i) one_to_hundred.push_back(i);
  EXPECT_EQ(percentile(one_to_hundred, 50.0), 50.0);
  EXPECT_EQ(percentile(one_to_hundred, 99.0), 99.0);
  EXPECT_EQ(percentile(one_to_hundred, 100.0), 100.0);
  EXPECT_EQ(percentile({7.0}, 50.0), 7.0);
  EXPECT_EQ(percentile({1.0, 2.0, 3.0}, 50.0), 2.0);
  EXPECT_EQ(percentile({1.0, 2.0, 3.0, 4.0}, 99.0), 4.0);
  EXPECT_EQ(percentile({}, 50.0), 0.0);
}

TEST(LatencyRecorder, ExactWhileTheReservoirHoldsEverySample) {
  LatencyRecorder recorder;
  for (int i = 100; i >= 1; --i) recorder.record(milliseconds(i));
  const LatencySummary summary = recorder.summary();
  EXPECT_EQ(summary.count, 100u);
  EXPECT_DOUBLE_EQ(summary.p50_ms, 50.0);
  EXPECT_DOUBLE_EQ(summary.p99_ms, 99.0);
  EXPECT_DOUBLE_EQ(summary.max_ms, 100.0);
  EXPECT_DOUBLE_EQ(summary.mean_ms, 50.5);
}

// Past the reservoir the percentiles are estimates from a uniform sample; count, mean and max stay
// exact. 10% of the samples are slow (100 ms), so p50 is fast and p99 slow in any fair sample.
TEST(LatencyRecorder, BoundedPastTheReservoir) {
  LatencyRecorder recorder;
  const int samples = static_cast<int>(LatencyRecorder::kReservoirSize) * 5;
  for (int i = 0; i < samples; ++i) recorder.record(milliseconds(i % 10 == 9 ? 100 : 1));
  const LatencySummary summary = recorder.summary();
  EXPECT_EQ(summary.count, static_cast<std::uint64_t>(samples));
  EXPECT_DOUBLE_EQ(summary.p50_ms, 1.0);
  EXPECT_DOUBLE_EQ(summary.p99_ms, 100.0);
  EXPECT_DOUBLE_EQ(summary.max_ms, 100.0);
  EXPECT_NEAR(summary.mean_ms, 10.9, 1e-9);
}

// The histogram counts every sample, not just the reservoir's: a sample on a bound is in its bucket
// (Prometheus's le), one above the last bound in none.
TEST(LatencyRecorder, HistogramCountsEverySampleCumulatively) {
  LatencyRecorder recorder;
  for (int i = 0; i < 10000; ++i) recorder.record(std::chrono::microseconds(100));  // 0.1 ms: bucket 0
  recorder.record(std::chrono::microseconds(1500));                                 // 1.5 ms: le 2.5
  recorder.record(std::chrono::seconds(20));                                        // above 10 s
  const LatencySummary summary = recorder.summary();
  EXPECT_EQ(summary.count, 10002u);
  EXPECT_EQ(summary.bucket_counts[0], 10000u);
  EXPECT_EQ(summary.bucket_counts[3], 10000u);  // le 1 ms
  EXPECT_EQ(summary.bucket_counts[4], 10001u);  // le 2.5 ms
  EXPECT_EQ(summary.bucket_counts.back(), 10001u);
  EXPECT_NEAR(summary.total_ms, 10000 * 0.1 + 1.5 + 20000.0, 1e-6);
}

TEST(LatencyRecorder, EmptyIsAllZero) {
  const LatencySummary summary = LatencyRecorder().summary();
  EXPECT_EQ(summary.count, 0u);
  EXPECT_EQ(summary.p99_ms, 0.0);
}

PipelineStats known_stats() {
  return {
      .elapsed_s = 2.0,
      .batches = 50,
      .sources =
          {{.name = "cam0", .frames = 120, .decoded = 122, .ended = true, .decoder = "nvdec"},
           {.name = "cam1", .frames = 80, .decoded = 83, .dropped = 3, .decoder = "cpu", .fallback = true},
           {.name = "bad.mp4", .frames = 0, .ended = true, .failed = true, .error = "invalid data"}},
      .stages = {{.name = "infer",
                  .latency = {.count = 50, .mean_ms = 4.0, .p50_ms = 3.5, .p99_ms = 9.25, .max_ms = 12.0}}},
      .queues = {{.name = "mux", .counters = {.depth = 2, .capacity = 4, .high_water = 4, .pushed = 50}}}};
}

TEST(PipelineStats, Totals) {
  const PipelineStats stats = known_stats();
  EXPECT_EQ(stats.total_frames(), 200u);
  EXPECT_EQ(stats.total_dropped(), 3u);
  EXPECT_EQ(stats.failed_sources(), 1u);
  EXPECT_DOUBLE_EQ(stats.fps(stats.total_frames()), 100.0);
  EXPECT_EQ(PipelineStats{}.fps(10), 0.0);
}

TEST(PipelineStats, ProgressLine) {
  EXPECT_EQ(progress_line(known_stats(), 90.0),
            "2.0s  200 frames  100.0 fps (now 90.0)  [cam0 60.0  cam1 40.0  bad.mp4 failed]  queues mux 2/4  "
            "3 dropped");
}

// With every source's frame count known: the percent done, and the time left at the current rate.
TEST(PipelineStats, ProgressLineShowsPercentAndEtaWhenTheFrameCountIsKnown) {
  PipelineStats stats = known_stats();
  stats.sources[0].expected = 300;
  EXPECT_EQ(stats.expected_frames(), 0u) << "cam1's count is unknown";
  stats.sources[1].expected = 500;
  EXPECT_EQ(stats.expected_frames(), 800u) << "the failed source counts what it delivered";
  // 200 of 800 frames; 600 left at 40 fps.
  EXPECT_EQ(progress_line(stats, 40.0),
            "2.0s  200 frames  100.0 fps (now 40.0)  25%  ETA 15s  [cam0 60.0  cam1 40.0  bad.mp4 failed]  "
            "queues mux 2/4  3 dropped");
  EXPECT_TRUE(
      progress_line(stats, 4.0).starts_with("2.0s  200 frames  100.0 fps (now 4.0)  25%  ETA 2m30s  ["));
  EXPECT_TRUE(progress_line(stats, 0.0).starts_with("2.0s  200 frames  100.0 fps (now 0.0)  25%  [cam0"));
}

// The meter's current rate is over the time since its previous line, not since the start.
TEST(PipelineStats, ProgressMeterShowsTheCurrentRate) {
  ProgressMeter meter;
  PipelineStats stats = known_stats();  // 200 frames at 2 s
  EXPECT_TRUE(meter.line(stats).starts_with("2.0s  200 frames  100.0 fps (now 100.0)  ["));
  stats.elapsed_s = 3.0;
  stats.sources[0].frames += 10;  // 10 frames in the last second
  EXPECT_TRUE(meter.line(stats).starts_with("3.0s  210 frames  70.0 fps (now 10.0)  ["));
}

// A flow that stops moving is named once, after kStallNoticeS, with its sources' states and its
// queues' depths; a second line says when it moves again.
TEST(StallWatch, NamesAFlowThatStopsMovingOnceAndSaysWhenItMovesAgain) {
  StallWatch watch;
  PipelineStats stats = known_stats();  // cam1 still running; the first output came at 0.5 s
  stats.first_output_s = 0.5;
  EXPECT_EQ(watch.check(stats), "");
  stats.elapsed_s = 2.0 + kStallNoticeS - 1.0;
  EXPECT_EQ(watch.check(stats), "") << "not yet";
  stats.elapsed_s = 2.0 + kStallNoticeS + 1.0;
  EXPECT_EQ(
      watch.check(stats),
      "the flow has not moved for 31s (no batch out, no frame decoded; 200 frames so far): sources cam0 "
      "ended (122 decoded) cam1 running (83 decoded) bad.mp4 failed (0 decoded); queues mux 2/4 (a "
      "full queue's reader is where the frames wait; all empty: the sources)");
  stats.elapsed_s += 60.0;
  EXPECT_EQ(watch.check(stats), "") << "named once per stall";
  stats.sources[1].decoded += 1;
  EXPECT_EQ(watch.check(stats), "the flow moves again, after 1m31s without progress");
  stats.elapsed_s += 2 * kStallNoticeS;
  EXPECT_NE(watch.check(stats), "") << "a second stall is named too";
}

// No notice before the first output (planning, first frames), when no source is expected to
// deliver (a camera reconnecting says so itself), or within four of the slowest batches so far.
TEST(StallWatch, QuietWhileNothingIsExpectedToMove) {
  PipelineStats stats = known_stats();
  stats.elapsed_s = 1000.0;
  {
    StallWatch watch;
    static_cast<void>(watch.check(known_stats()));
    EXPECT_EQ(watch.check(stats), "") << "before the first output";
  }
  stats.first_output_s = 0.5;
  stats.sources[1].state = "reconnecting";
  {
    StallWatch watch;
    static_cast<void>(watch.check(known_stats()));
    EXPECT_EQ(watch.check(stats), "") << "the only running source is reconnecting";
  }
  stats.sources[1].state = "running";
  stats.elapsed_s = 2.0 + 100.0;
  stats.stages[0].latency.max_ms = 30'000.0;  // a batch took 30 s: 100 s without one is not a stall
  {
    StallWatch watch;
    static_cast<void>(watch.check(known_stats()));
    EXPECT_EQ(watch.check(stats), "");
    stats.elapsed_s = 2.0 + 121.0;
    EXPECT_NE(watch.check(stats), "");
  }
}

// After Ctrl-C the sources that had not delivered all their frames say "interrupted", not "ended".
TEST(PipelineStats, InterruptedSourcesSaySo) {
  PipelineStats stats = known_stats();
  stats.interrupted = true;
  stats.sources[0].expected = 120;  // cam0 had delivered every frame before Ctrl-C
  stats.sources[1].ended = true;
  const std::string table = format_table(stats);
  EXPECT_NE(table.find("cam0     nvdec                           120   60.0        0  ended\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("cam1     cpu (fallback)                   80   40.0        3  interrupted\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("failed: invalid data"), std::string::npos) << table;
}

TEST(PipelineStats, FinalTableIsAligned) {
  EXPECT_EQ(format_table(known_stats()),
            "200 frames in 50 batches, 2.00 s, 100.0 fps\n"
            "\n"
            "source   decoder                      frames    fps  dropped  status\n"
            "-------  ---------------------------  ------  -----  -------  --------------------\n"
            "cam0     nvdec                           120   60.0        0  ended\n"
            "cam1     cpu (fallback)                   80   40.0        3  running\n"
            "bad.mp4                                    0    0.0        0  failed: invalid data\n"
            "total    1 nvdec, 1 cpu, 1 fallbacks     200  100.0        3  1 failed\n"
            "\n"
            "stage  items  mean ms  p50 ms  p99 ms  max ms\n"
            "-----  -----  -------  ------  ------  ------\n"
            "infer     50     4.00    3.50    9.25   12.00\n"
            "\n"
            "queue  depth  capacity  high water  pushed\n"
            "-----  -----  --------  ----------  ------\n"
            "mux        2         4           4      50\n");
}

// The first batch out at 0.75 s with 25 frames: the other 175 frames took the remaining 1.25 s.
TEST(PipelineStats, SteadyStateStartsAfterTheFirstOutput) {
  PipelineStats stats = known_stats();
  EXPECT_EQ(stats.steady_fps(), 0.0) << "no output yet";
  stats.first_output_s = 0.75;
  stats.first_output_frames = 25;
  EXPECT_DOUBLE_EQ(stats.steady_fps(), 140.0);
  const std::string table = format_table(stats);
  EXPECT_EQ(table.substr(0, table.find('\n')),
            "200 frames in 50 batches, 2.00 s, 100.0 fps (140.0 fps after the first output at 0.75 s)");
  EXPECT_EQ(to_json(stats)["startup"], (nlohmann::json{{"first_output_s", 0.75}, {"steady_fps", 140.0}}));
  stats.first_output_frames = 200;  // everything came out in the first batch
  EXPECT_EQ(stats.steady_fps(), 0.0);
}

TEST(PipelineStats, JsonShape) {
  const nlohmann::json json = to_json(known_stats());
  EXPECT_EQ(json["elapsed_s"], 2.0);
  EXPECT_EQ(json["batches"], 50);
  EXPECT_EQ(json["total"],
            (nlohmann::json{{"frames", 200}, {"fps", 100.0}, {"dropped", 3}, {"failed_sources", 1}}));
  ASSERT_EQ(json["sources"].size(), 3u);
  EXPECT_EQ(json["sources"][0], (nlohmann::json{{"name", "cam0"},
                                                {"frames", 120},
                                                {"decoded", 122},
                                                {"decoder", "nvdec"},
                                                {"fallback", false},
                                                {"fps", 60.0},
                                                {"dropped", 0},
                                                {"ended", true},
                                                {"failed", false},
                                                {"reconnects", 0},
                                                {"state", ""}}));
  EXPECT_EQ(json["sources"][2]["error"], "invalid data");
  EXPECT_EQ(json["stages"][0],
            (nlohmann::json{
                {"name", "infer"},
                {"latency",
                 {{"count", 50}, {"mean_ms", 4.0}, {"p50_ms", 3.5}, {"p99_ms", 9.25}, {"max_ms", 12.0}}}}));
  EXPECT_EQ(
      json["queues"][0],
      (nlohmann::json{{"name", "mux"}, {"depth", 2}, {"capacity", 4}, {"high_water", 4}, {"pushed", 50}}));
}

// A broker sink's counters get a table and a "brokers" entry; a run without one keeps its shape.
TEST(PipelineStats, BrokersAreReportedOnlyWhenThereAreAny) {
  PipelineStats stats = known_stats();
  EXPECT_FALSE(to_json(stats).contains("brokers"));
  EXPECT_EQ(format_table(stats).find("broker"), std::string::npos);
  stats.brokers = {BrokerStats{.broker = "127.0.0.1:1883",
                               .published = 200,
                               .delivered = 180,
                               .dropped = 15,
                               .queued = 5,
                               .reconnects = 2,
                               .last_error = "Connection refused"}};
  EXPECT_EQ(to_json(stats)["brokers"],
            nlohmann::json::parse(R"([{"broker": "127.0.0.1:1883", "published": 200,
      "delivered": 180, "dropped": 15, "rejected": 0, "queued": 5, "reconnects": 2, "connected": false,
      "last_error": "Connection refused"}])"));
  const std::string table = format_table(stats);
  EXPECT_EQ(table.substr(table.find("\nbroker ") + 1),
            "broker          published  delivered  dropped  queued  status\n"
            "--------------  ---------  ---------  -------  ------  ---------------------------------\n"
            "127.0.0.1:1883        200        180       15       5  not connected: Connection refused\n");
}

// sinks.stream's counters (for /stats while the flow runs) get a "live_outputs" entry; a run without
// one keeps its shape.
TEST(PipelineStats, LiveOutputsAreReportedOnlyWhenThereAreAny) {
  PipelineStats stats = known_stats();
  EXPECT_FALSE(to_json(stats).contains("live_outputs"));
  stats.live_outputs = {LiveOutputStats{.stream = "mosaic",
                                        .location = "rtsp://127.0.0.1:8554/live",
                                        .frames = 120,
                                        .dropped = 30,
                                        .reconnects = 1,
                                        .connected = false}};
  EXPECT_EQ(to_json(stats)["live_outputs"], nlohmann::json::parse(R"([{"stream": "mosaic",
      "location": "rtsp://127.0.0.1:8554/live", "frames": 120, "dropped": 30, "reconnects": 1,
      "connected": false, "error": ""}])"));
}

}  // namespace
}  // namespace fovea::pipeline

namespace fovea::pipeline {
namespace {

// A 10 s run whose stages were busy for the given seconds (100 batches each).
PipelineStats busy_for(double mux_s, double preprocess_s, double inference_s, double sink_s) {
  const auto stage = [](std::string name, double seconds) {
    return StageStats{.name = std::move(name), .latency = {.count = 100, .mean_ms = seconds * 10.0}};
  };
  return PipelineStats{.elapsed_s = 10.0,
                       .stages = {stage("mux", mux_s), stage("preprocess", preprocess_s),
                                  stage("inference", inference_s), stage("sink", sink_s)}};
}

TEST(FlowBound, IsTheBusiestStageWhenItIsBusyMostOfTheRun) {
  const FlowBound bound = flow_bound(busy_for(9.0, 1.0, 9.5, 9.0));
  EXPECT_EQ(bound.what, "inference");
  EXPECT_DOUBLE_EQ(bound.busiest_busy, 0.95);
  EXPECT_THAT(format_table(busy_for(9.0, 1.0, 9.5, 9.0)),
              ::testing::HasSubstr("bound by: inference is busy 95%"));
}

TEST(FlowBound, IsTheSourcesWhenEveryStageWaits) {
  const FlowBound bound = flow_bound(busy_for(9.5, 1.0, 5.7, 5.0));
  EXPECT_EQ(bound.what, "sources");
  EXPECT_EQ(bound.busiest_stage, "inference");
  EXPECT_THAT(format_table(busy_for(9.5, 1.0, 5.7, 5.0)),
              ::testing::HasSubstr(
                  "bound by: the sources (decode, input); the busiest stage, inference is busy 57%"));
}

TEST(FlowBound, IsTheSinkWhenTheStagesWaitForIt) {
  EXPECT_EQ(flow_bound(busy_for(2.0, 1.0, 3.0, 9.0)).what, "sink");
}

}  // namespace
}  // namespace fovea::pipeline
