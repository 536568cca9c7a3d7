// Stages: one named thread each, joined to its neighbours by BoundedQueues.
//
//   SourceStage<Out>        produce() -> output           (the mux: batches from the sources)
//   TransformStage<In, Out> input -> process() -> output  (preprocess, inference, postprocess, ...)
//   SinkStage<In>           input -> consume()            (encoders, metadata writers, null sink)
//
// Shutdown is by closing queues, so every way of ending drains what is already queued:
// - end of input: the input queue is closed and empty; the stage closes its output and ends, and
//   the stage downstream drains and ends in turn;
// - error: the stage records the Status, stops, and closes both queues: downstream drains what was
//   produced before the error, upstream's next push fails so it stops instead of blocking forever;
// - request_stop() (Ctrl-C): closes the stage's input; the stage drains what is queued, then ends
//   as at end of input. To stop a whole pipeline, stop its head (the mux) and the rest drains.
// A stage whose output was closed by downstream ends cleanly; the stage that failed holds the error.
//
// Latency: each stage records the time spent in its function per item (not the time blocked on
// its queues), see LatencyRecorder for how the percentiles are kept. A stage whose work runs on the
// GPU is created with host timing off: its function only enqueues, and the flow records the GPU
// time of its work instead (record_latency, from CUDA events).
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "core/status.h"
#include "pipeline/queue.h"
#include "pipeline/stats.h"

namespace fovea::pipeline {

enum class StepOutcome { kContinue, kEnd };

// The thread, the status and the latency shared by every stage kind.
class Stage {
 public:
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  const std::string& name() const { return name_; }
  // Waits for the thread to end; idempotent.
  void join();
  // The error that stopped the stage, prefixed with its name; ok while running and after a clean end.
  Status status() const;
  LatencySummary latency() const { return latency_.summary(); }
  StageStats stats() const { return {.name = name_, .latency = latency()}; }
  // For stages timed elsewhere (on the GPU); thread-safe.
  void record_latency(std::chrono::nanoseconds latency) { latency_.record(latency); }

 protected:
  explicit Stage(std::string name, bool host_timed = true)
      : name_(std::move(name)), host_timed_(host_timed) {}
  // Stage kinds join in their own destructors (their members are gone by the time this one runs).
  ~Stage();

  // Runs `step` on the stage's thread until it returns kEnd or an error, then `close_queues`.
  void start_thread(std::function<Result<StepOutcome>()> step, std::function<void()> close_queues);

  // Calls `work`, recording how long it took.
  template <typename Work>
  auto timed(Work&& work) {
    const auto start = std::chrono::steady_clock::now();
    auto result = std::forward<Work>(work)();
    if (host_timed_) latency_.record(std::chrono::steady_clock::now() - start);
    return result;
  }

 private:
  void run(const std::function<Result<StepOutcome>()>& step, const std::function<void()>& close_queues);

  const std::string name_;
  const bool host_timed_;
  LatencyRecorder latency_;
  mutable std::mutex status_mutex_;
  Status status_;
  std::thread thread_;
};

// `produce` returns the next item, std::nullopt at the end, or an error. `stop_producer` is called
// when the stage ends, so that a producer fed by other threads (the mux) releases them when
// downstream went away or produce failed; it must be harmless after a normal end.
template <typename Out>
class SourceStage final : public Stage {
 public:
  using Produce = std::function<Result<std::optional<Out>>()>;

  SourceStage(std::string name, BoundedQueue<Out>& output, Produce produce,
              std::function<void()> stop_producer)
      : Stage(std::move(name)),
        output_(output),
        produce_(std::move(produce)),
        stop_producer_(std::move(stop_producer)) {}
  ~SourceStage() { join(); }

  void start() {
    start_thread([this] { return step(); },
                 [this] {
                   output_.close();
                   stop_producer_();
                 });
  }

 private:
  Result<StepOutcome> step() {
    FOVEA_ASSIGN_OR_RETURN(std::optional<Out> item, timed(produce_));
    if (!item || output_.push(std::move(*item)) == PushResult::kClosed) {
      return StepOutcome::kEnd;
    }
    return StepOutcome::kContinue;
  }

  BoundedQueue<Out>& output_;
  Produce produce_;
  std::function<void()> stop_producer_;
};

template <typename In, typename Out>
class TransformStage final : public Stage {
 public:
  using Process = std::function<Result<Out>(In&&)>;

  TransformStage(std::string name, BoundedQueue<In>& input, BoundedQueue<Out>& output, Process process,
                 bool host_timed = true)
      : Stage(std::move(name), host_timed), input_(input), output_(output), process_(std::move(process)) {}
  ~TransformStage() { join(); }

  void start() {
    start_thread([this] { return step(); },
                 [this] {
                   output_.close();
                   input_.close();
                 });
  }
  // Drains what is queued, then ends as at end of input.
  void request_stop() { input_.close(); }

 private:
  Result<StepOutcome> step() {
    std::optional<In> item = input_.pop();
    if (!item) {
      return StepOutcome::kEnd;
    }
    FOVEA_ASSIGN_OR_RETURN(Out out, timed([&] { return process_(std::move(*item)); }));
    if (output_.push(std::move(out)) == PushResult::kClosed) {
      return StepOutcome::kEnd;
    }
    return StepOutcome::kContinue;
  }

  BoundedQueue<In>& input_;
  BoundedQueue<Out>& output_;
  Process process_;
};

template <typename In>
class SinkStage final : public Stage {
 public:
  using Consume = std::function<Status(In&&)>;

  SinkStage(std::string name, BoundedQueue<In>& input, Consume consume, bool host_timed = true)
      : Stage(std::move(name), host_timed), input_(input), consume_(std::move(consume)) {}
  ~SinkStage() { join(); }

  void start() {
    start_thread([this] { return step(); }, [this] { input_.close(); });
  }
  // Drains what is queued, then ends as at end of input.
  void request_stop() { input_.close(); }

 private:
  Result<StepOutcome> step() {
    std::optional<In> item = input_.pop();
    if (!item) {
      return StepOutcome::kEnd;
    }
    FOVEA_TRY(timed([&] { return consume_(std::move(*item)); }));
    return StepOutcome::kContinue;
  }

  BoundedQueue<In>& input_;
  Consume consume_;
};

}  // namespace fovea::pipeline
