// Pipeline statistics: what a run reports while it runs (one progress line) and at its end (an
// aligned table on the terminal and the same figures in report.json).
//
// The figures are gathered into a plain PipelineStats snapshot by whoever owns the pipeline's
// parts (the mux's source counters, each stage's latency, each queue's counters), so the
// formatting here is independent of the payload and tested on known data.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipeline/queue.h"

namespace fovea::pipeline {

// Upper bounds (ms) of the latency histogram's buckets, for Prometheus (fovea serve's /metrics):
// from a fast kernel's 0.1 ms to a stalled stage's 5 s, about three buckets a decade.
inline constexpr std::array<double, 16> kLatencyBucketsMs = {0.1, 0.25, 0.5, 1,   2.5,  5,    10,   25,
                                                             50,  100,  250, 500, 1000, 2500, 5000, 10000};

struct LatencySummary {
  std::uint64_t count = 0;
  double mean_ms = 0.0;
  double p50_ms = 0.0;
  double p99_ms = 0.0;
  double max_ms = 0.0;
  double total_ms = 0.0;
  // Samples at or below each bound of kLatencyBucketsMs (cumulative, as Prometheus counts them);
  // the samples above the last bound are count - bucket_counts.back().
  std::array<std::uint64_t, kLatencyBucketsMs.size()> bucket_counts{};
};

// Nearest-rank percentile (the smallest sample with at least p% of the samples at or below it)
// of samples sorted ascending; p in (0, 100]. Nearest rank returns a measured value, never an
// interpolation between two. 0 for no samples.
double percentile(const std::vector<double>& sorted_samples, double p);

// Per-item processing time of one stage, recorded from its thread and read by the stats thread.
// Memory is fixed: the first kReservoirSize samples are kept exactly, after that a uniform random
// sample of all of them (reservoir sampling, Algorithm R). Percentiles are therefore exact for
// short runs and an unbiased estimate for long ones; count, mean and max are always exact.
class LatencyRecorder {
 public:
  // p99 of 4096 samples rests on the ~41 slowest of them, enough for a stable tail; 32 KiB a stage.
  static constexpr std::size_t kReservoirSize = 4096;

  LatencyRecorder() = default;
  LatencyRecorder(const LatencyRecorder&) = delete;
  LatencyRecorder& operator=(const LatencyRecorder&) = delete;

  void record(std::chrono::nanoseconds latency);
  LatencySummary summary() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> samples_ms_;
  std::uint64_t count_ = 0;
  double total_ms_ = 0.0;
  double max_ms_ = 0.0;
  std::array<std::uint64_t, kLatencyBucketsMs.size()> buckets_{};  // per bucket, not cumulative
  // A fixed seed: two runs over the same samples report the same percentiles.
  std::minstd_rand random_{20240601};
};

// An input a source skipped (an image file that could not be read or decoded) and why.
struct SkippedItem {
  std::string path;
  std::string reason;
  bool operator==(const SkippedItem&) const = default;
};
// A source lists this many of its skipped inputs by name; the rest are counted.
inline constexpr std::size_t kMaxListedFailures = 100;

// Time a source's own threads spent in one kind of work over the run, summed over the threads
// (image sources: "read", "probe", "cpu decode", "gpu decode", "upload", "budget wait", "order wait").
struct SourceWork {
  std::string what;
  double seconds = 0.0;
  bool operator==(const SourceWork&) const = default;
};

struct SourceStats {
  std::string name;
  std::uint64_t frames = 0;   // batched by the mux
  std::uint64_t decoded = 0;  // out of the decoder (frames before `start` and dropped ones included)
  std::uint64_t dropped = 0;  // live sources only: the oldest frame goes when the source's queue is full
  bool ended = false;
  bool failed = false;
  std::string error;               // why the source failed, when it did
  std::string decoder;             // the backend that decoded it ("nvdec", "cpu"); "" when unknown
  bool fallback = false;           // nvdec was asked for and the cpu decoder used instead
  std::uint64_t expected = 0;      // the frames it will deliver; 0 when unknown or endless (looping, live)
  std::uint64_t reconnects = 0;    // live: connections lost (or refused) and tried again
  std::string state;               // connecting, running, reconnecting, ended, failed; "" when unknown
  std::uint64_t items_failed = 0;  // image sources: files skipped (unreadable, not decodable)
  std::vector<SkippedItem> failed_items;  // the first kMaxListedFailures of them
  // Where the source's threads spent their time (image sources; empty for the others), and how many
  // threads there were: the summary names it when the sources bound the flow.
  std::vector<SourceWork> work;
  int threads = 0;
  // How long the threads ran, from their start to the last one's end (or now): the shares in the
  // summary are of threads x this, so the run's start-up before them does not dilute them.
  double threads_span_s = 0.0;
};

// Something an op of a stage counted over the run ("classified", "reused"; Op::counters).
struct StageCounter {
  std::string name;
  std::uint64_t value = 0;
};

struct StageStats {
  std::string name;
  LatencySummary latency;
  std::vector<StageCounter> counters;  // its ops', in op order; empty for most stages
};

struct QueueStats {
  std::string name;
  QueueCounters counters;
};

// A sink's connection to a message broker (sinks.mqtt), from its publisher's counters
// (io/mqtt_publisher.h). Every published record is delivered, dropped, rejected or still queued.
struct BrokerStats {
  std::string broker;           // "host:port"
  std::uint64_t published = 0;  // records handed to the publisher
  std::uint64_t delivered = 0;  // acknowledged by the broker (QoS 0: written to the socket)
  std::uint64_t dropped = 0;    // pushed out of the full buffer while the broker was away (the oldest)
  std::uint64_t rejected = 0;   // a topic or payload MQTT cannot carry
  std::size_t queued = 0;       // not delivered yet: waiting, or sent and not acknowledged
  std::uint64_t reconnects = 0;
  bool connected = false;
  std::string last_error;  // the latest connection failure or rejection; "" when none
};

// A live output of sinks.stream (an HLS playlist or an RTSP push), from its encoder thread's
// counters, readable while the flow runs.
struct LiveOutputStats {
  std::string stream;    // a source's name, or "mosaic"
  std::string location;  // the playlist or the RTSP URL
  std::int64_t frames = 0;
  std::int64_t dropped = 0;     // pictures dropped: its queue full, or its server away
  std::int64_t reconnects = 0;  // connections made again after a failed or lost one
  bool connected = true;        // false while it waits to reconnect, or once it failed for good
  std::string error;            // why it failed for good; "" otherwise
};

struct PipelineStats {
  double elapsed_s = 0.0;
  std::uint64_t batches = 0;
  std::vector<SourceStats> sources;
  std::vector<StageStats> stages;
  std::vector<QueueStats> queues;
  // When the first batch left the pipeline (seconds after the start; negative until then) and its
  // frames. Before it lies the start-up: sources opening, decoders' first frames, the first
  // batch's trip through every stage.
  double first_output_s = -1.0;
  std::uint64_t first_output_frames = 0;
  bool interrupted = false;                   // Ctrl-C stopped the sources: those that had not ended say so
  std::vector<BrokerStats> brokers;           // one per broker sink; empty without one
  std::vector<LiveOutputStats> live_outputs;  // sinks.stream's; empty without one

  std::uint64_t total_frames() const;
  std::uint64_t total_dropped() const;
  std::size_t failed_sources() const;
  std::uint64_t failed_items() const;  // inputs the sources skipped (image files)
  // The frames every source will deliver; 0 when any source's count is unknown (a failed source
  // counts what it delivered).
  std::uint64_t expected_frames() const;
  // Frames per second of wall-clock time since the start; 0 before any time has passed.
  double fps(std::uint64_t frames) const;
  // The steady state: frames after the first batch over the time after it, what a long run
  // converges to (the start-up is a fixed cost); 0 until a batch after the first has left.
  double steady_fps() const;
};

// What bounds the run's throughput, from the stages' busy time (count x mean latency over the run's
// wall time; a GPU stage's latency is its GPU time): the busiest working stage when it is busy at
// least kBoundBusy of the run; else the sink when it is (encoders or writes holding the flow back);
// else the sources (decode or input): every stage waits for frames.
inline constexpr double kBoundBusy = 0.75;
struct FlowBound {
  std::string what;  // a stage's name, "sink" or "sources"
  std::string busiest_stage;
  double busiest_busy = 0.0;  // 0..1 (above 1 when a stage's GPU work overlaps itself)
};
FlowBound flow_bound(const PipelineStats& stats);

// One line without a newline, for a progress line redrawn in place: elapsed time, frames, the mean
// rate and `current_fps` (the rate since the previous line), with the percent done and the time
// left at the current rate when the frame count is known, then per source and per queue:
// "12.3s  1200 frames  97.6 fps (now 101.2)  60%  ETA 8s  [cam0 48.8  cam1 48.8]  queues mux 2/4".
std::string progress_line(const PipelineStats& stats, double current_fps);

// Produces the progress lines of one run: remembers the previous snapshot for the current rate.
class ProgressMeter {
 public:
  std::string line(const PipelineStats& stats);

 private:
  double last_s_ = 0.0;
  std::uint64_t last_frames_ = 0;
};

// Names a flow that has stopped moving, which would otherwise sit silent: no batch has left it and
// no source has decoded a frame for kStallNoticeS (or four times its slowest batch so far, for a
// model that is merely slow), after the first output, while a source is running (a live camera
// connecting or reconnecting is the source's own news). The notice gives the sources' states and
// the queues' depths, which say where the frames stand; it is given once per stall, and a second
// line says when the flow moves again.
inline constexpr double kStallNoticeS = 30.0;
class StallWatch {
 public:
  // A line to log now, or "".
  std::string check(const PipelineStats& stats);

 private:
  std::uint64_t moved_ = 0;  // batches out plus frames decoded, at the last change
  double since_s_ = 0.0;     // when that changed
  bool named_ = false;       // this stall has been named
};

// The final report: sources (frames, fps, drops, status: ended, running, interrupted or failed), stages
// (p50/p99/max), queues (capacity, high-water mark), brokers when there are any (published, delivered,
// dropped), one aligned table per section, ending in a newline. (Live outputs are in the summary's
// outputs, which the flow commands print after it.)
std::string format_table(const PipelineStats& stats);

// The same figures for report.json: {"elapsed_s", "batches", "total": {...}, "startup":
// {"first_output_s", "steady_fps"}, "sources": [...], "stages": [...], "queues": [...]}, and
// "brokers": [...] and "live_outputs": [...] (sinks.stream's counters, for /stats while the flow
// runs) when there are any (a run without one keeps the report's shape).
nlohmann::json to_json(const PipelineStats& stats);

}  // namespace fovea::pipeline
