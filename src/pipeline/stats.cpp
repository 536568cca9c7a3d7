#include "pipeline/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "trace/report_format.h"

namespace fovea::pipeline {

double percentile(const std::vector<double>& sorted_samples, double p) {
  if (sorted_samples.empty()) {
    return 0.0;
  }
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted_samples.size()));
  const auto index = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return sorted_samples[std::min(index, sorted_samples.size() - 1)];
}

void LatencyRecorder::record(std::chrono::nanoseconds latency) {
  const double ms = std::chrono::duration<double, std::milli>(latency).count();
  std::lock_guard lock(mutex_);
  ++count_;
  total_ms_ += ms;
  max_ms_ = std::max(max_ms_, ms);
  const auto bucket = std::lower_bound(kLatencyBucketsMs.begin(), kLatencyBucketsMs.end(), ms);
  if (bucket != kLatencyBucketsMs.end())
    ++buckets_[static_cast<std::size_t>(bucket - kLatencyBucketsMs.begin())];
  if (samples_ms_.size() < kReservoirSize) {
    samples_ms_.push_back(ms);
    return;
  }
  // Algorithm R: the count_-th sample replaces a kept one with probability kReservoirSize/count_.
  std::uniform_int_distribution<std::uint64_t> pick(0, count_ - 1);
  const std::uint64_t slot = pick(random_);
  if (slot < kReservoirSize) {
    samples_ms_[slot] = ms;
  }
}

LatencySummary LatencyRecorder::summary() const {
  std::vector<double> sorted;
  LatencySummary summary;
  {
    std::lock_guard lock(mutex_);
    sorted = samples_ms_;
    summary.count = count_;
    summary.max_ms = max_ms_;
    summary.mean_ms = count_ == 0 ? 0.0 : total_ms_ / static_cast<double>(count_);
    summary.total_ms = total_ms_;
    std::uint64_t below = 0;
    for (std::size_t b = 0; b < buckets_.size(); ++b) summary.bucket_counts[b] = below += buckets_[b];
  }
  std::sort(sorted.begin(), sorted.end());
  summary.p50_ms = percentile(sorted, 50.0);
  summary.p99_ms = percentile(sorted, 99.0);
  return summary;
}

std::uint64_t PipelineStats::total_frames() const {
  std::uint64_t total = 0;
  for (const SourceStats& source : sources) total += source.frames;
  return total;
}

std::uint64_t PipelineStats::total_dropped() const {
  std::uint64_t total = 0;
  for (const SourceStats& source : sources) total += source.dropped;
  return total;
}

std::size_t PipelineStats::failed_sources() const {
  return static_cast<std::size_t>(
      std::count_if(sources.begin(), sources.end(), [](const SourceStats& source) { return source.failed; }));
}

std::uint64_t PipelineStats::failed_items() const {
  std::uint64_t total = 0;
  for (const SourceStats& source : sources) total += source.items_failed;
  return total;
}

std::uint64_t PipelineStats::expected_frames() const {
  std::uint64_t total = 0;
  for (const SourceStats& source : sources) {
    if (source.failed) {
      total += source.frames;
    } else if (source.expected == 0) {
      return 0;
    } else {
      total += source.expected;
    }
  }
  return total;
}

double PipelineStats::fps(std::uint64_t frames) const {
  return elapsed_s > 0.0 ? static_cast<double>(frames) / elapsed_s : 0.0;
}

double PipelineStats::steady_fps() const {
  const std::uint64_t frames = total_frames();
  const double span = elapsed_s - first_output_s;
  if (first_output_s < 0.0 || frames <= first_output_frames || span <= 0.0) return 0.0;
  return static_cast<double>(frames - first_output_frames) / span;
}

namespace {

std::string source_state(const PipelineStats& stats, const SourceStats& source) {
  if (source.failed) {
    return "failed: " + source.error;
  }
  // After Ctrl-C every source has stopped; only one that delivered all its frames reached its end.
  const bool complete = source.expected > 0 && source.frames >= source.expected;
  if (stats.interrupted && !complete) return "interrupted";
  return source.ended ? "ended" : "running";
}

// "8s", "2m05s", "1h02m".
std::string short_duration(double seconds) {
  const auto s = static_cast<long long>(std::ceil(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

trace::TextTable source_table(const PipelineStats& stats) {
  trace::TextTable table{.name = "sources",
                         .columns = {"source", "decoder", "frames", "fps", "dropped", "status"},
                         .numeric = {false, false, true, true, true, false}};
  std::size_t on_gpu = 0, on_cpu = 0, fallbacks = 0;
  for (const SourceStats& source : stats.sources) {
    table.rows.push_back({source.name, source.decoder + (source.fallback ? " (fallback)" : ""),
                          std::to_string(source.frames), fmt::format("{:.1f}", stats.fps(source.frames)),
                          std::to_string(source.dropped), source_state(stats, source)});
    on_gpu += source.decoder == "nvdec" ? 1 : 0;
    on_cpu += source.decoder == "cpu" ? 1 : 0;
    fallbacks += source.fallback ? 1 : 0;
  }
  table.rows.push_back(
      {"total", fmt::format("{} nvdec, {} cpu, {} fallbacks", on_gpu, on_cpu, fallbacks),
       std::to_string(stats.total_frames()), fmt::format("{:.1f}", stats.fps(stats.total_frames())),
       std::to_string(stats.total_dropped()), fmt::format("{} failed", stats.failed_sources())});
  return table;
}

trace::TextTable stage_table(const PipelineStats& stats) {
  trace::TextTable table{.name = "stages",
                         .columns = {"stage", "items", "mean ms", "p50 ms", "p99 ms", "max ms"},
                         .numeric = {false, true, true, true, true, true}};
  for (const StageStats& stage : stats.stages) {
    const LatencySummary& l = stage.latency;
    table.rows.push_back({stage.name, std::to_string(l.count), fmt::format("{:.2f}", l.mean_ms),
                          fmt::format("{:.2f}", l.p50_ms), fmt::format("{:.2f}", l.p99_ms),
                          fmt::format("{:.2f}", l.max_ms)});
  }
  return table;
}

// What the stages' ops counted: a row per counter.
trace::TextTable counter_table(const PipelineStats& stats) {
  trace::TextTable table{
      .name = "counted", .columns = {"stage", "counted", "count"}, .numeric = {false, false, true}};
  for (const StageStats& stage : stats.stages) {
    for (const StageCounter& counter : stage.counters)
      table.rows.push_back({stage.name, counter.name, std::to_string(counter.value)});
  }
  return table;
}

trace::TextTable queue_table(const PipelineStats& stats) {
  trace::TextTable table{.name = "queues",
                         .columns = {"queue", "depth", "capacity", "high water", "pushed"},
                         .numeric = {false, true, true, true, true}};
  for (const QueueStats& queue : stats.queues) {
    const QueueCounters& c = queue.counters;
    table.rows.push_back({queue.name, std::to_string(c.depth), std::to_string(c.capacity),
                          std::to_string(c.high_water), std::to_string(c.pushed)});
  }
  return table;
}

trace::TextTable broker_table(const PipelineStats& stats) {
  trace::TextTable table{.name = "brokers",
                         .columns = {"broker", "published", "delivered", "dropped", "queued", "status"},
                         .numeric = {false, true, true, true, true, false}};
  for (const BrokerStats& broker : stats.brokers) {
    table.rows.push_back({broker.broker, std::to_string(broker.published), std::to_string(broker.delivered),
                          std::to_string(broker.dropped), std::to_string(broker.queued),
                          broker.connected ? "connected" : "not connected: " + broker.last_error});
  }
  return table;
}

nlohmann::json latency_json(const LatencySummary& latency) {
  return {{"count", latency.count},
          {"mean_ms", latency.mean_ms},
          {"p50_ms", latency.p50_ms},
          {"p99_ms", latency.p99_ms},
          {"max_ms", latency.max_ms}};
}

}  // namespace

std::string progress_line(const PipelineStats& stats, double current_fps) {
  const std::uint64_t frames = stats.total_frames();
  std::string line = fmt::format("{:.1f}s  {} frames  {:.1f} fps (now {:.1f})", stats.elapsed_s, frames,
                                 stats.fps(frames), current_fps);
  if (const std::uint64_t expected = stats.expected_frames(); expected > 0) {
    const std::uint64_t done = std::min(frames, expected);
    line += fmt::format("  {}%", done * 100 / expected);
    if (current_fps > 0.0) {
      line += "  ETA " + short_duration(static_cast<double>(expected - done) / current_fps);
    }
  }
  if (!stats.sources.empty()) {
    line += "  [";
    for (std::size_t i = 0; i < stats.sources.size(); ++i) {
      const SourceStats& source = stats.sources[i];
      line += fmt::format(
          "{}{} {}", i == 0 ? "" : "  ", source.name,
          source.failed ? std::string("failed") : fmt::format("{:.1f}", stats.fps(source.frames)));
    }
    line += "]";
  }
  if (!stats.queues.empty()) {
    line += "  queues";
    for (const QueueStats& queue : stats.queues) {
      line += fmt::format(" {} {}/{}", queue.name, queue.counters.depth, queue.counters.capacity);
    }
  }
  if (stats.total_dropped() > 0) {
    line += fmt::format("  {} dropped", stats.total_dropped());
  }
  return line;
}

namespace {

// Whether a source is expected to deliver frames now: not done, and not waiting for a connection.
bool delivering(const SourceStats& source) {
  return !source.ended && !source.failed && source.state != "connecting" && source.state != "reconnecting";
}

double slowest_batch_s(const PipelineStats& stats) {
  double slowest_ms = 0.0;
  for (const StageStats& stage : stats.stages) slowest_ms = std::max(slowest_ms, stage.latency.max_ms);
  return slowest_ms * 1e-3;
}

std::string stall_line(const PipelineStats& stats, double stalled_s) {
  std::string line =
      fmt::format("the flow has not moved for {} (no batch out, no frame decoded; {} frames so far)",
                  short_duration(stalled_s), stats.total_frames());
  line += ": sources";
  for (const SourceStats& source : stats.sources) {
    const std::string state = source.failed  ? "failed"
                              : source.ended ? "ended"
                                             : (source.state.empty() ? "running" : source.state);
    line += fmt::format(" {} {} ({} decoded)", source.name, state, source.decoded);
  }
  line += "; queues";
  for (const QueueStats& queue : stats.queues) {
    line += fmt::format(" {} {}/{}", queue.name, queue.counters.depth, queue.counters.capacity);
  }
  return line + " (a full queue's reader is where the frames wait; all empty: the sources)";
}

}  // namespace

std::string StallWatch::check(const PipelineStats& stats) {
  std::uint64_t moved = stats.batches;
  for (const SourceStats& source : stats.sources) moved += source.decoded;
  if (moved != moved_) {
    const bool was_named = named_;
    const double stalled_s = stats.elapsed_s - since_s_;
    moved_ = moved;
    since_s_ = stats.elapsed_s;
    named_ = false;
    return was_named
               ? fmt::format("the flow moves again, after {} without progress", short_duration(stalled_s))
               : "";
  }
  const double stalled_s = stats.elapsed_s - since_s_;
  const bool waits_for_a_source = std::any_of(stats.sources.begin(), stats.sources.end(), delivering);
  if (named_ || stats.first_output_s < 0.0 || !waits_for_a_source ||
      stalled_s < std::max(kStallNoticeS, 4.0 * slowest_batch_s(stats))) {
    return "";
  }
  named_ = true;
  return stall_line(stats, stalled_s);
}

std::string ProgressMeter::line(const PipelineStats& stats) {
  const std::uint64_t frames = stats.total_frames();
  const double span = stats.elapsed_s - last_s_;
  const double current =
      span > 0.0 ? static_cast<double>(frames - std::min(frames, last_frames_)) / span : 0.0;
  last_s_ = stats.elapsed_s;
  last_frames_ = frames;
  return progress_line(stats, current);
}

FlowBound flow_bound(const PipelineStats& stats) {
  const auto busy = [&](const StageStats& stage) {
    return stats.elapsed_s > 0.0
               ? static_cast<double>(stage.latency.count) * stage.latency.mean_ms * 1e-3 / stats.elapsed_s
               : 0.0;
  };
  FlowBound bound{.what = "sources"};
  // The first stage is the mux (it waits for the sources and for a free slot) and the last the sink.
  for (std::size_t s = 1; s + 1 < stats.stages.size(); ++s) {
    if (busy(stats.stages[s]) > bound.busiest_busy) {
      bound.busiest_busy = busy(stats.stages[s]);
      bound.busiest_stage = stats.stages[s].name;
    }
  }
  if (bound.busiest_busy >= kBoundBusy) {
    bound.what = bound.busiest_stage;
  } else if (stats.stages.size() >= 2 && busy(stats.stages.back()) >= kBoundBusy) {
    bound.what = stats.stages.back().name;
  }
  return bound;
}

namespace {

std::string bound_line(const PipelineStats& stats) {
  const FlowBound bound = flow_bound(stats);
  if (bound.busiest_stage.empty()) return {};
  const std::string busiest =
      fmt::format("{} is busy {:.0f}% of the run", bound.busiest_stage, 100.0 * bound.busiest_busy);
  if (bound.what == bound.busiest_stage) return "bound by: " + busiest + "\n";
  if (bound.what == "sources")
    return "bound by: the sources (decode, input); the busiest stage, " + busiest + "\n";
  return "bound by: the " + bound.what + " (encoders, writes); the busiest stage, " + busiest + "\n";
}

// "images: 2 decode threads; read 41%, probe 3%, gpu decode 52%, budget wait 1%, order wait 2% of
// their time": where a source's own threads went (shares of their running time), for a flow its
// sources bound.
std::string source_work_lines(const PipelineStats& stats) {
  std::string text;
  for (const SourceStats& source : stats.sources) {
    const double span = source.threads_span_s > 0.0 ? source.threads_span_s : stats.elapsed_s;
    if (source.work.empty() || source.threads <= 0 || span <= 0.0) continue;
    const double available = source.threads * span;
    std::string parts;
    for (const SourceWork& work : source.work) {
      parts +=
          fmt::format("{}{} {:.0f}%", parts.empty() ? "" : ", ", work.what, 100.0 * work.seconds / available);
    }
    text += fmt::format("{}: {} decode thread{}; {} of their time\n", source.name, source.threads,
                        source.threads == 1 ? "" : "s", parts);
  }
  return text;
}

}  // namespace

std::string format_table(const PipelineStats& stats) {
  std::string text = fmt::format("{} frames in {} batches, {:.2f} s, {:.1f} fps", stats.total_frames(),
                                 stats.batches, stats.elapsed_s, stats.fps(stats.total_frames()));
  if (stats.steady_fps() > 0.0) {
    text += fmt::format(" ({:.1f} fps after the first output at {:.2f} s)", stats.steady_fps(),
                        stats.first_output_s);
  }
  text += "\n\n";
  text += trace::format_aligned(source_table(stats));
  // One blank line between sections (appended apart: GCC 12 misreads "\n" + string as overlapping).
  for (const trace::TextTable& table :
       {stage_table(stats), counter_table(stats), queue_table(stats), broker_table(stats)}) {
    if (!table.rows.empty()) {
      text += '\n';
      text += trace::format_aligned(table);
    }
  }
  if (const std::string line = bound_line(stats); !line.empty()) {
    text += '\n';
    text += line;
  }
  text += source_work_lines(stats);
  return text;
}

nlohmann::json to_json(const PipelineStats& stats) {
  const FlowBound bound = flow_bound(stats);
  nlohmann::json sources = nlohmann::json::array();
  for (const SourceStats& source : stats.sources) {
    nlohmann::json entry = {{"name", source.name},
                            {"frames", source.frames},
                            {"fps", stats.fps(source.frames)},
                            {"dropped", source.dropped},
                            {"ended", source.ended},
                            {"failed", source.failed},
                            {"decoded", source.decoded},
                            {"decoder", source.decoder},
                            {"fallback", source.fallback},
                            {"reconnects", source.reconnects},
                            {"state", source.state}};
    if (source.failed) {
      entry["error"] = source.error;
    }
    if (source.items_failed > 0) {
      entry["skipped"] = source.items_failed;
      nlohmann::json listed = nlohmann::json::array();
      for (const SkippedItem& item : source.failed_items)
        listed.push_back({{"path", item.path}, {"reason", item.reason}});
      entry["skipped_inputs"] = std::move(listed);
    }
    if (!source.work.empty()) {
      nlohmann::json seconds = nlohmann::json::object();
      for (const SourceWork& work : source.work) seconds[work.what] = work.seconds;
      entry["threads"] = source.threads;
      entry["threads_span_s"] = source.threads_span_s;
      entry["work_seconds"] = std::move(seconds);
    }
    sources.push_back(std::move(entry));
  }
  nlohmann::json stages = nlohmann::json::array();
  for (const StageStats& stage : stats.stages) {
    nlohmann::json entry{{"name", stage.name}, {"latency", latency_json(stage.latency)}};
    if (!stage.counters.empty()) {
      nlohmann::json counted = nlohmann::json::object();
      for (const StageCounter& counter : stage.counters) counted[counter.name] = counter.value;
      entry["counters"] = std::move(counted);
    }
    stages.push_back(std::move(entry));
  }
  nlohmann::json queues = nlohmann::json::array();
  for (const QueueStats& queue : stats.queues) {
    const QueueCounters& c = queue.counters;
    queues.push_back({{"name", queue.name},
                      {"depth", c.depth},
                      {"capacity", c.capacity},
                      {"high_water", c.high_water},
                      {"pushed", c.pushed}});
  }
  nlohmann::json report = {
      {"elapsed_s", stats.elapsed_s},
      {"batches", stats.batches},
      {"total",
       {{"frames", stats.total_frames()},
        {"fps", stats.fps(stats.total_frames())},
        {"dropped", stats.total_dropped()},
        {"failed_sources", stats.failed_sources()}}},
      {"startup", {{"first_output_s", stats.first_output_s}, {"steady_fps", stats.steady_fps()}}},
      {"bound",
       {{"what", bound.what}, {"busiest_stage", bound.busiest_stage}, {"busiest_busy", bound.busiest_busy}}},
      {"sources", std::move(sources)},
      {"stages", std::move(stages)},
      {"queues", std::move(queues)}};
  if (!stats.brokers.empty()) {
    nlohmann::json brokers = nlohmann::json::array();
    for (const BrokerStats& broker : stats.brokers) {
      brokers.push_back({{"broker", broker.broker},
                         {"published", broker.published},
                         {"delivered", broker.delivered},
                         {"dropped", broker.dropped},
                         {"rejected", broker.rejected},
                         {"queued", broker.queued},
                         {"reconnects", broker.reconnects},
                         {"connected", broker.connected},
                         {"last_error", broker.last_error}});
    }
    report["brokers"] = std::move(brokers);
  }
  if (!stats.live_outputs.empty()) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const LiveOutputStats& output : stats.live_outputs) {
      outputs.push_back({{"stream", output.stream},
                         {"location", output.location},
                         {"frames", output.frames},
                         {"dropped", output.dropped},
                         {"reconnects", output.reconnects},
                         {"connected", output.connected},
                         {"error", output.error}});
    }
    report["live_outputs"] = std::move(outputs);
  }
  return report;
}

}  // namespace fovea::pipeline
