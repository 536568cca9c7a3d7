#include "service/prometheus.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace fovea::service {
namespace {

MetricFamily counter(std::string name, std::vector<MetricSample> samples) {
  return {.name = std::move(name),
          .help = "Frames.",
          .type = MetricType::kCounter,
          .samples = std::move(samples)};
}

MetricFamily gauge(std::string name, std::vector<MetricSample> samples) {
  return {
      .name = std::move(name), .help = "Depth.", .type = MetricType::kGauge, .samples = std::move(samples)};
}

MetricFamily latency_histogram(Labels labels) {
  return {.name = "fovea_stage_latency_seconds",
          .help = "Per-batch latency of a stage.",
          .type = MetricType::kHistogram,
          .histograms = {{.labels = std::move(labels),
                          .upper_bounds = {0.005, 0.01, 1},
                          .cumulative_counts = {2, 5, 7, 8},
                          .sum = 3.25,
                          .count = 8}}};
}

TEST(Prometheus, CountersAndGaugesWithLabels) {
  const std::string text = render_prometheus({
      counter("fovea_source_frames_total", {{{{"source", "cam1"}}, 120}, {{{"source", "cam2"}}, 0}}),
      gauge("fovea_queue_depth", {{{{"queue", "mux"}, {"stage", "infer"}}, 3}, {{}, 1.5}}),
  });
  EXPECT_EQ(text,
            "# HELP fovea_source_frames_total Frames.\n"
            "# TYPE fovea_source_frames_total counter\n"
            "fovea_source_frames_total{source=\"cam1\"} 120\n"
            "fovea_source_frames_total{source=\"cam2\"} 0\n"
            "# HELP fovea_queue_depth Depth.\n"
            "# TYPE fovea_queue_depth gauge\n"
            "fovea_queue_depth{queue=\"mux\",stage=\"infer\"} 3\n"
            "fovea_queue_depth 1.5\n");
}

TEST(Prometheus, HistogramBucketsAreCumulativeWithInfLast) {
  EXPECT_EQ(render_prometheus({latency_histogram({{"stage", "infer"}})}),
            "# HELP fovea_stage_latency_seconds Per-batch latency of a stage.\n"
            "# TYPE fovea_stage_latency_seconds histogram\n"
            "fovea_stage_latency_seconds_bucket{stage=\"infer\",le=\"0.005\"} 2\n"
            "fovea_stage_latency_seconds_bucket{stage=\"infer\",le=\"0.01\"} 5\n"
            "fovea_stage_latency_seconds_bucket{stage=\"infer\",le=\"1\"} 7\n"
            "fovea_stage_latency_seconds_bucket{stage=\"infer\",le=\"+Inf\"} 8\n"
            "fovea_stage_latency_seconds_sum{stage=\"infer\"} 3.25\n"
            "fovea_stage_latency_seconds_count{stage=\"infer\"} 8\n");
}

TEST(Prometheus, HistogramWithoutLabelsHasOnlyLe) {
  const std::string text = render_prometheus({latency_histogram({})});
  EXPECT_NE(text.find("fovea_stage_latency_seconds_bucket{le=\"+Inf\"} 8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fovea_stage_latency_seconds_sum 3.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fovea_stage_latency_seconds_count 8\n"), std::string::npos) << text;
}

TEST(Prometheus, EscapesHelpAndLabelValues) {
  MetricFamily family = gauge("fovea_source_up", {{{{"source", "a\\b \"quoted\"\nnext"}}, 1}});
  family.help = "Up (1) or not; a \\ and a\nnewline \"kept\".";
  EXPECT_EQ(render_prometheus({family}),
            "# HELP fovea_source_up Up (1) or not; a \\\\ and a\\nnewline \"kept\".\n"
            "# TYPE fovea_source_up gauge\n"
            "fovea_source_up{source=\"a\\\\b \\\"quoted\\\"\\nnext\"} 1\n");
}

TEST(Prometheus, NumbersParseBackInGo) {
  const auto value_of = [](double value) {
    const std::string text = render_prometheus({gauge("g", {{{}, value}})});
    const std::string line = text.substr(text.rfind("\ng ") + 3);
    return line.substr(0, line.size() - 1);
  };
  EXPECT_EQ(value_of(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(value_of(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(value_of(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(value_of(10000000), "10000000");  // not 1e+07
  EXPECT_EQ(value_of(9007199254740992.0), "9007199254740992");
  EXPECT_EQ(value_of(-42), "-42");
  EXPECT_EQ(value_of(-0.0), "0");
  EXPECT_EQ(value_of(0.1), "0.1");
  EXPECT_EQ(value_of(1.0 / 3.0), "0.3333333333333333");  // shortest form that reads back exactly
  EXPECT_EQ(std::stod(value_of(1.0 / 3.0)), 1.0 / 3.0);
  EXPECT_EQ(value_of(1e300), "1e+300");
  EXPECT_EQ(value_of(2.5e-7), "2.5e-07");
}

TEST(Prometheus, FamilyWithoutSamplesKeepsHelpAndType) {
  EXPECT_EQ(render_prometheus({counter("fovea_reconnects_total", {})}),
            "# HELP fovea_reconnects_total Frames.\n# TYPE fovea_reconnects_total counter\n");
  EXPECT_EQ(render_prometheus({}), "");
}

// A malformed family is fovea's bug, caught where it is rendered.
TEST(PrometheusDeathTest, BadMetricName) {
  EXPECT_DEATH(render_prometheus({gauge("fovea-fps", {})}), "fovea-fps");
  EXPECT_DEATH(render_prometheus({gauge("1fps", {})}), "1fps");
  EXPECT_DEATH(render_prometheus({gauge("", {})}), "check failed");
}

TEST(PrometheusDeathTest, BadLabelName) {
  EXPECT_DEATH(render_prometheus({gauge("g", {{{{"source:id", "x"}}, 1}})}), "source:id");
  EXPECT_DEATH(render_prometheus({gauge("g", {{{{"__name__", "x"}}, 1}})}), "__name__");
  EXPECT_DEATH(render_prometheus({latency_histogram({{"le", "1"}})}), "le");
}

TEST(PrometheusDeathTest, CounterNotEndingInTotal) {
  EXPECT_DEATH(render_prometheus({counter("fovea_frames", {})}), "fovea_frames");
}

TEST(PrometheusDeathTest, MalformedHistogramAndDuplicateFamily) {
  MetricFamily uneven = latency_histogram({});
  uneven.histograms[0].cumulative_counts.pop_back();
  EXPECT_DEATH(render_prometheus({uneven}), "cumulative_counts");
  MetricFamily descending = latency_histogram({});
  descending.histograms[0].upper_bounds = {1, 0.5, 2};
  EXPECT_DEATH(render_prometheus({descending}), "ascend");
  MetricFamily mixed = latency_histogram({});
  mixed.samples.push_back({{}, 1});
  EXPECT_DEATH(render_prometheus({mixed}), "fovea_stage_latency_seconds");
  EXPECT_DEATH(render_prometheus({gauge("g", {}), gauge("g", {})}), "check failed");
}

}  // namespace
}  // namespace fovea::service
