#include "service/flow_backend.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "pipeline/video_source.h"
#include "service/process_memory.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace fovea::service {
namespace {

using Clock = CounterHistory::Clock;
using pipeline::PipelineStats;
using pipeline::SourceReport;
using pipeline::SourceStats;

// The windows of the rates the API shows: fps smooths a few seconds of batching jitter; a drop in
// the last ten seconds keeps /health degraded across a couple of polls.
constexpr Clock::duration kFpsWindow = std::chrono::seconds(5);
constexpr Clock::duration kDropWindow = std::chrono::seconds(10);
static_assert(kDropWindow <= CounterHistory::kKept);

// A removed source's slot frees once its queued frames (the mux keeps at most 4 per source) are
// batched: a few batches. A POST right after a DELETE waits that long rather than be refused; two
// seconds covers a slow CPU flow.
constexpr Clock::duration kSlotDrainWait = std::chrono::seconds(2);
constexpr auto kSlotPoll = std::chrono::milliseconds(20);

// An id names the source in URLs (/sources/{id}), metadata and MQTT topics (one topic level).
constexpr std::size_t kMaxIdBytes = 128;

Status check_id(std::string_view id) {
  const auto refuse = [&](std::string_view why) {
    return make_error(StatusCode::kInvalidArgument, "POST /sources: id \"", std::string(id),
                      "\": ", std::string(why), " (the id names the source in URLs and MQTT topics)");
  };
  if (id.empty()) return refuse("is empty");
  if (id.size() > kMaxIdBytes) return refuse(fmt::format("is longer than {} bytes", kMaxIdBytes));
  if (id == "." || id == "..") return refuse("is a relative path segment");
  for (const char c : id) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return refuse("contains a control character");
    if (c == '/' || c == '+' || c == '#') return refuse(fmt::format("contains '{}'", c));
  }
  return Status::ok();
}

// The request's `sources:` entry, and its "id" when it has one; parse_source_config checks the
// rest with the file's keys and messages.
Result<std::pair<pipeline::SourceConfig, std::optional<std::string>>> parse_request(nlohmann::json request) {
  std::optional<std::string> id;
  if (const auto it = request.find("id"); it != request.end()) {
    if (!it->is_string()) {
      return make_error(StatusCode::kInvalidArgument, "POST /sources: id: expected a string, got ",
                        it->dump());
    }
    id = it->get<std::string>();
    request.erase(it);
  }
  FOVEA_ASSIGN_OR_RETURN(
      pipeline::SourceConfig source,
      pipeline::parse_source_config(request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                    "POST /sources"));
  return std::pair{std::move(source), std::move(id)};
}

// One slot's figures: the mux's counters and the source's report.
struct SlotFigures {
  const SourceStats* stats = nullptr;
  const SourceReport* report = nullptr;
};

// Per slot, from one reading of the flow (its stats and reports read with no slot changing in
// between): the flow's stats list the slots that have a report, in slot order.
std::vector<std::optional<SlotFigures>> by_slot(const PipelineStats& stats,
                                                const std::vector<std::optional<SourceReport>>& reports) {
  std::vector<std::optional<SlotFigures>> slots(reports.size());
  std::size_t next = 0;
  for (std::size_t s = 0; s < reports.size() && next < stats.sources.size(); ++s) {
    if (!reports[s] || reports[s]->name != stats.sources[next].name) continue;
    slots[s] = SlotFigures{&stats.sources[next++], &*reports[s]};
  }
  return slots;
}

SourceInfo source_info(const std::string& id, const SlotFigures& figures, double fps) {
  const SourceStats& stats = *figures.stats;
  const SourceReport& report = *figures.report;
  return {.id = id,
          .uri = report.uri,
          .state = std::string(pipeline::source_state_name(report.state)),
          .frames = stats.frames,
          .dropped = stats.dropped,
          .reconnects = stats.reconnects,
          .fps = fps,
          // The report names a backend from the start; the API's says which one decoded.
          .decoder = report.frames_decoded > 0 ? stats.decoder : std::string(),
          .error = stats.failed ? stats.error : report.last_error};
}

std::string joined(const std::vector<std::string>& ids) {
  return fmt::format("{}", fmt::join(ids, ", "));
}

// Device memory in use on the flow's GPU (device 0, every process's allocations); none for a flow
// on the CPU, which must not make a CUDA context just to be watched.
std::optional<double> gpu_memory_used_bytes(const pipeline::FlowControl& control) {
#if defined(FOVEA_HAVE_CUDA)
  if (!control.on_gpu()) return std::nullopt;
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
  return static_cast<double>(total - free);
#else
  static_cast<void>(control);
  return std::nullopt;
#endif
}

MetricFamily family(std::string name, std::string help, MetricType type) {
  return {.name = std::move(name), .help = std::move(help), .type = type};
}

HistogramSample latency_histogram(const pipeline::StageStats& stage) {
  const pipeline::LatencySummary& latency = stage.latency;
  HistogramSample histogram{
      .labels = {{"stage", stage.name}}, .sum = latency.total_ms / 1000.0, .count = latency.count};
  for (std::size_t b = 0; b < pipeline::kLatencyBucketsMs.size(); ++b) {
    histogram.upper_bounds.push_back(pipeline::kLatencyBucketsMs[b] / 1000.0);
    histogram.cumulative_counts.push_back(latency.bucket_counts[b]);
  }
  histogram.cumulative_counts.push_back(latency.count);
  return histogram;
}

}  // namespace

struct FlowBackend::Snapshot {
  std::optional<PipelineStats> stats;  // none: the flow is not running
  struct Listed {
    std::size_t slot = 0;
    SourceInfo info;
    std::uint64_t recent_drops = 0;  // over kDropWindow
  };
  std::vector<Listed> sources;  // slot order
};

FlowBackend::FlowBackend(pipeline::FlowControl& control, std::vector<std::string> initial_ids,
                         FlowBackendOptions options)
    : control_(control), options_(options) {
  for (std::size_t slot = 0; slot < initial_ids.size(); ++slot) {
    SourceInfo last{.id = initial_ids[slot], .state = "connecting"};
    entries_.emplace(std::move(initial_ids[slot]), Entry{.slot = slot, .last = std::move(last)});
  }
}

FlowBackend::Snapshot FlowBackend::take_snapshot() const {
  Snapshot snapshot;
  const Clock::time_point now = Clock::now();
  snapshot.stats = control_.stats();
  const std::vector<std::optional<SourceReport>> reports = control_.source_reports();
  if (reports.empty()) snapshot.stats.reset();  // the flow stopped between the two reads
  std::vector<std::optional<SlotFigures>> slots;
  if (snapshot.stats) {
    seen_running_ = true;
    slots = by_slot(*snapshot.stats, reports);
  }
  for (auto& [id, entry] : entries_) {
    std::uint64_t recent_drops = 0;
    if (entry.slot < slots.size() && slots[entry.slot]) {
      const SlotFigures& figures = *slots[entry.slot];
      // The configuration's sources count from the flow's start.
      const auto since_start = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(snapshot.stats->elapsed_s));
      if (entry.counters.empty()) entry.counters.add({.time = now - since_start});
      entry.counters.add({.time = now, .frames = figures.stats->frames, .dropped = figures.stats->dropped});
      entry.last = source_info(id, figures, entry.counters.frames_per_second(kFpsWindow));
      recent_drops = entry.counters.dropped_over(kDropWindow);
    } else if (!snapshot.stats && seen_running_) {
      // The flow has stopped, and with it every source.
      entry.last.fps = 0.0;
      if (entry.last.state != "failed") entry.last.state = "ended";
    }
    snapshot.sources.push_back({.slot = entry.slot, .info = entry.last, .recent_drops = recent_drops});
  }
  std::sort(snapshot.sources.begin(), snapshot.sources.end(),
            [](const Snapshot::Listed& a, const Snapshot::Listed& b) { return a.slot < b.slot; });
  return snapshot;
}

std::vector<SourceInfo> FlowBackend::sources() const {
  const std::lock_guard lock(mutex_);
  std::vector<SourceInfo> sources;
  for (Snapshot::Listed& listed : take_snapshot().sources) sources.push_back(std::move(listed.info));
  return sources;
}

std::string FlowBackend::generated_id() {
  for (;;) {
    std::string id = fmt::format("source-{}", ++generated_);
    if (entries_.count(id) == 0) return id;
  }
}

Result<SourceInfo> FlowBackend::add_source(const nlohmann::json& request) {
  FOVEA_ASSIGN_OR_RETURN(auto parsed, parse_request(request));
  auto& [source, requested_id] = parsed;
  const Clock::time_point deadline = Clock::now() + kSlotDrainWait;
  std::unique_lock lock(mutex_);
  // The "id", else the "name", else one made up.
  std::string id = requested_id ? std::move(*requested_id) : source.name;
  if (id.empty() && !requested_id) id = generated_id();
  FOVEA_TRY(check_id(id));
  source.name = id;
  for (;;) {
    FOVEA_ASSIGN_OR_RETURN(std::optional<SourceInfo> added, try_add(id, source));
    if (added) return std::move(*added);
    if (Clock::now() >= deadline) {
      return make_error(StatusCode::kResourceExhausted,
                        "POST /sources: every source slot of the flow is in use (a ",
                        "removed source holds its slot until its frames have drained); try again");
    }
    lock.unlock();
    std::this_thread::sleep_for(kSlotPoll);
    lock.lock();
  }
}

Result<std::optional<SourceInfo>> FlowBackend::try_add(const std::string& id,
                                                       const pipeline::SourceConfig& source) {
  if (entries_.count(id) > 0) {
    return make_error(StatusCode::kAlreadyExists, "POST /sources: a source with id \"", id, "\" exists");
  }
  // A source that ended by itself stays listed until its slot is reused, but no longer counts: the
  // states are read fresh, since nothing may have asked for them since it ended.
  take_snapshot();
  const auto holding = std::count_if(entries_.begin(), entries_.end(),
                                     [](const auto& entry) { return entry.second.last.state != "ended"; });
  if (static_cast<std::size_t>(holding) >= options_.max_sources) {
    return make_error(StatusCode::kResourceExhausted, "POST /sources: the flow takes at most ",
                      std::to_string(options_.max_sources), " sources; remove one first");
  }
  const Result<std::size_t> slot = control_.add_source(source);
  if (!slot.is_ok()) {
    // No free slot while the flow runs: a removed source still drains its frames.
    if (slot.status().code() == StatusCode::kResourceExhausted && control_.running())
      return std::optional<SourceInfo>();
    return slot.status();
  }
  // A source that ended by itself stayed listed in the slot it held until now.
  std::erase_if(entries_, [&](const auto& entry) { return entry.second.slot == *slot; });
  SourceInfo info{.id = id, .uri = source.uri, .state = "connecting"};
  Entry& entry = entries_[id];
  entry.slot = *slot;
  entry.last = info;
  entry.counters.add({.time = Clock::now()});
  return std::optional<SourceInfo>(std::move(info));
}

Status FlowBackend::remove_source(std::string_view id) {
  const std::lock_guard lock(mutex_);
  const auto entry = entries_.find(id);
  if (entry == entries_.end()) {
    return make_error(StatusCode::kNotFound, "no source with id \"", std::string(id), "\"");
  }
  // False when the source has ended by itself: nothing to stop, and its id goes all the same.
  static_cast<void>(control_.remove_source(entry->second.slot));
  entries_.erase(entry);
  return Status::ok();
}

nlohmann::json FlowBackend::stats() const {
  const std::lock_guard lock(mutex_);
  const std::optional<PipelineStats> stats = control_.stats();
  if (!stats) return {{"running", false}};
  nlohmann::json report = pipeline::to_json(*stats);
  report["running"] = true;
  report["service"] = {{"max_sources", options_.max_sources}, {"sources", entries_.size()}};
  return report;
}

Health FlowBackend::health() const {
  const std::lock_guard lock(mutex_);
  const Snapshot snapshot = take_snapshot();
  if (!snapshot.stats) {
    return {.reason = seen_running_ ? "the flow has stopped" : "the flow has not started yet"};
  }
  std::vector<std::string> reconnecting, failed, dropping;
  for (const Snapshot::Listed& listed : snapshot.sources) {
    // Connecting again after a failed attempt is reconnecting, whatever the state says meanwhile.
    const bool retrying = listed.info.state == "connecting" && !listed.info.error.empty();
    if (listed.info.state == "reconnecting" || retrying) reconnecting.push_back(listed.info.id);
    if (listed.info.state == "failed") failed.push_back(listed.info.id);
    if (listed.recent_drops > 0) dropping.push_back(listed.info.id);
  }
  std::vector<std::string> reasons;
  if (!reconnecting.empty()) reasons.push_back("reconnecting: " + joined(reconnecting));
  if (!failed.empty()) reasons.push_back("failed: " + joined(failed));
  if (!dropping.empty()) reasons.push_back("dropping frames (the flow falls behind): " + joined(dropping));
  std::vector<std::string> outputs_away;
  for (const pipeline::LiveOutputStats& output : snapshot.stats->live_outputs) {
    if (!output.connected) outputs_away.push_back(output.location);
  }
  if (!outputs_away.empty()) reasons.push_back("live outputs not sending: " + joined(outputs_away));
  std::vector<std::string> brokers_away;
  for (const pipeline::BrokerStats& broker : snapshot.stats->brokers) {
    if (!broker.connected) brokers_away.push_back(broker.broker);
  }
  if (!brokers_away.empty()) {
    reasons.push_back("metadata brokers not connected (records are buffered, then dropped): " +
                      joined(brokers_away));
  }
  if (reasons.empty()) return {.ready = true};
  return {.ready = true, .degraded = true, .reason = fmt::format("{}", fmt::join(reasons, "; "))};
}

std::vector<MetricFamily> FlowBackend::metrics() const {
  const std::lock_guard lock(mutex_);
  const Snapshot snapshot = take_snapshot();
  MetricFamily running = family("fovea_flow_running", "1 while the flow runs, else 0.", MetricType::kGauge);
  running.samples.push_back({.value = snapshot.stats ? 1.0 : 0.0});
  // Prometheus's standard name for it, as its client libraries' process collectors give it.
  MetricFamily resident =
      family("process_resident_memory_bytes", "Resident memory of the fovea process.", MetricType::kGauge);
  if (const std::optional<std::uint64_t> bytes = resident_memory_bytes()) {
    resident.samples.push_back({.value = static_cast<double>(*bytes)});
  }
  if (!snapshot.stats) return {std::move(running), std::move(resident)};
  const PipelineStats& stats = *snapshot.stats;

  MetricFamily frames =
      family("fovea_source_frames_total", "Frames of the source batched by the flow.", MetricType::kCounter);
  MetricFamily dropped = family(
      "fovea_source_dropped_total",
      "Frames of the source dropped because the flow fell behind it (live sources).", MetricType::kCounter);
  MetricFamily reconnects =
      family("fovea_source_reconnects_total", "Connections to the source lost (or refused) and made again.",
             MetricType::kCounter);
  MetricFamily fps = family(
      "fovea_source_fps", "Frames of the source batched per second, over the last ~5 s.", MetricType::kGauge);
  MetricFamily up = family("fovea_source_up", "1 while the source delivers frames (state running), else 0.",
                           MetricType::kGauge);
  for (const Snapshot::Listed& listed : snapshot.sources) {
    const SourceInfo& info = listed.info;
    const Labels labels{{"source", info.id}};
    frames.samples.push_back({labels, static_cast<double>(info.frames)});
    dropped.samples.push_back({labels, static_cast<double>(info.dropped)});
    reconnects.samples.push_back({labels, static_cast<double>(info.reconnects)});
    fps.samples.push_back({labels, info.fps});
    up.samples.push_back(
        {{{"source", info.id}, {"decoder", info.decoder}}, info.state == "running" ? 1.0 : 0.0});
  }

  // The flow's stats keep the frames of sources whose slots were reused (StreamMux::retired_stats).
  frames_reported_ = std::max(frames_reported_, stats.total_frames());
  MetricFamily flow_frames =
      family("fovea_frames_total", "Frames batched by the flow, every source's.", MetricType::kCounter);
  flow_frames.samples.push_back({.value = static_cast<double>(frames_reported_)});

  MetricFamily latency =
      family("fovea_stage_latency_seconds",
             "Time a stage takes per batch (the GPU's time for its GPU stages).", MetricType::kHistogram);
  for (const pipeline::StageStats& stage : stats.stages)
    latency.histograms.push_back(latency_histogram(stage));

  MetricFamily depth = family("fovea_queue_depth", "Batches waiting in the queue.", MetricType::kGauge);
  MetricFamily capacity =
      family("fovea_queue_capacity", "Batches the queue holds at most.", MetricType::kGauge);
  for (const pipeline::QueueStats& queue : stats.queues) {
    depth.samples.push_back({{{"queue", queue.name}}, static_cast<double>(queue.counters.depth)});
    capacity.samples.push_back({{{"queue", queue.name}}, static_cast<double>(queue.counters.capacity)});
  }

  std::vector<MetricFamily> families;
  for (MetricFamily* f : {&running, &resident, &frames, &dropped, &reconnects, &fps, &up, &flow_frames,
                          &latency, &depth, &capacity}) {
    families.push_back(std::move(*f));
  }
  if (const std::optional<double> used = gpu_memory_used_bytes(control_)) {
    MetricFamily memory =
        family("fovea_gpu_memory_used_bytes", "Device memory in use on the flow's GPU, every process's.",
               MetricType::kGauge);
    memory.samples.push_back({.value = *used});
    families.push_back(std::move(memory));
  }
  if (!stats.brokers.empty()) {
    MetricFamily published = family("fovea_mqtt_published_total",
                                    "Metadata records handed to the MQTT publisher.", MetricType::kCounter);
    MetricFamily delivered =
        family("fovea_mqtt_delivered_total",
               "Records the broker acknowledged (QoS 0: written to the socket).", MetricType::kCounter);
    MetricFamily broker_dropped =
        family("fovea_mqtt_dropped_total", "Records pushed out of the full buffer while the broker was away.",
               MetricType::kCounter);
    MetricFamily connected =
        family("fovea_mqtt_connected", "1 while connected to the broker, else 0.", MetricType::kGauge);
    for (const pipeline::BrokerStats& broker : stats.brokers) {
      const Labels labels{{"broker", broker.broker}};
      published.samples.push_back({labels, static_cast<double>(broker.published)});
      delivered.samples.push_back({labels, static_cast<double>(broker.delivered)});
      broker_dropped.samples.push_back({labels, static_cast<double>(broker.dropped)});
      connected.samples.push_back({labels, broker.connected ? 1.0 : 0.0});
    }
    for (MetricFamily* f : {&published, &delivered, &broker_dropped, &connected})
      families.push_back(std::move(*f));
  }
  if (!stats.live_outputs.empty()) {
    MetricFamily frames_out =
        family("fovea_output_frames_total", "Pictures a live output (sinks.stream) encoded and sent.",
               MetricType::kCounter);
    MetricFamily dropped_out =
        family("fovea_output_dropped_total",
               "Pictures a live output dropped: its queue full, or its server away.", MetricType::kCounter);
    MetricFamily reconnects_out =
        family("fovea_output_reconnects_total",
               "Connections of a live output made again after a failed or lost one.", MetricType::kCounter);
    MetricFamily connected_out =
        family("fovea_output_connected", "1 while a live output sends, else 0 (reconnecting or failed).",
               MetricType::kGauge);
    for (const pipeline::LiveOutputStats& output : stats.live_outputs) {
      const Labels labels{{"stream", output.stream}, {"location", output.location}};
      frames_out.samples.push_back({labels, static_cast<double>(output.frames)});
      dropped_out.samples.push_back({labels, static_cast<double>(output.dropped)});
      reconnects_out.samples.push_back({labels, static_cast<double>(output.reconnects)});
      connected_out.samples.push_back({labels, output.connected ? 1.0 : 0.0});
    }
    for (MetricFamily* f : {&frames_out, &dropped_out, &reconnects_out, &connected_out})
      families.push_back(std::move(*f));
  }
  return families;
}

}  // namespace fovea::service
