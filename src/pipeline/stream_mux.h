// StreamMux<T>: frames from N sources in, batches of up to batch_size frames out.
//
// Each source (a demux+decode thread) pushes its frames with push() and ends with end() or
// fail(); one consumer (the mux stage) takes batches with next_batch(). The payload T is opaque
// here: a decoded frame on the device, or a plain value in the tests.
//
// Batch composition, round-robin: sources are visited in order, one frame per visit, starting
// where the previous batch stopped so every source gets its turn first.
// - File mode (live == false): the mux waits for the next source's frame (or its end), so
//   batches are the same on every run whatever the threads' timing, but for a starved source
//   (set_starved): one that cannot bring its next frame until frames already pushed are released
//   downstream (an image source at its memory budget). Waiting for it would wait for the batch
//   being built, so a batch begun goes out partial instead.
// - Live mode: the mux never waits for one source while others have frames; it visits only the
//   sources with frames queued and waits only when none has one. A live source cannot be paused,
//   so when its queue is full its oldest frame is dropped (counted) instead of blocking it; a
//   source that can wait (a file, hold_when_full) is blocked as in file mode.
// - push_timeout_us: how long after a batch's first frame the mux waits for the rest before
//   pushing it partial; -1 waits for a full batch (or the end of the sources). With
//   auto_push_timeout (live), it is one frame period of the fastest open source (the frame rates
//   the sources report with set_frame_rate), as DeepStream advises for batched-push-timeout: a
//   batch never waits longer for a slow camera than the fast ones take to bring their next frame.
// - max_frames_per_source_per_batch caps one source's share of a batch; a batch in
//   which every remaining source has reached its cap is pushed as it is.
// Sources end on their own: an ended or failed source leaves the rotation once its queued frames
// are batched (frames decoded before a failure are good frames), the others carry on, and
// next_batch() returns std::nullopt once every source has ended and everything is batched.
// Source slots: the mux has a fixed number of them (the flow's per-source state is sized by it);
// the constructor opens one per name. With keep_open (a service), sources come and go at run time:
// open_source() takes a free slot, a source that ended and is drained frees its slot again (its
// counters start over for the next one), and next_batch() waits for sources rather than end while
// none is open, until request_stop().
// request_stop() (Ctrl-C) ends every source at once: their next push returns false, and what is
// queued is still batched, so the pipeline drains.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "core/log.h"
#include "core/status.h"
#include "pipeline/stats.h"

namespace fovea::pipeline {

struct MuxOptions {
  std::size_t batch_size = 1;
  std::int64_t push_timeout_us = -1;
  std::optional<std::size_t> max_frames_per_source_per_batch;  // none: no cap
  bool live = false;
  // Frames one source may have waiting in the mux (a flow's mux.source_queue). Four absorbs the
  // few-frame bursts in which a decoder releases frames after B-frame reordering while holding few
  // decoded frames (each one a pool buffer).
  std::size_t source_queue_capacity = 4;
  bool auto_push_timeout = false;  // live: push_timeout_us follows the sources' frame rates
  bool keep_open = false;          // a service: runs until request_stop(), sources come and go
  std::size_t slots = 0;           // source slots; fewer than the names given: one per name
};

// Ok, or an error naming the option and the value it cannot take.
Status validate(const MuxOptions& options);

template <typename T>
struct MuxFrame {
  std::size_t source = 0;              // position in the mux's source list
  std::int64_t index = 0;              // 0-based, per source, counted at push: frames dropped leave gaps
  std::optional<std::int64_t> pts_us;  // presentation time; none when the stream carries none
  T payload;
};

template <typename T>
struct Batch {
  std::uint64_t number = 0;  // 0-based, in the order batches leave the mux
  std::vector<MuxFrame<T>> frames;
};

template <typename T>
class StreamMux {
 public:
  // `options` must have passed validate(). One open source per name, in the first slots.
  StreamMux(MuxOptions options, const std::vector<std::string>& source_names)
      : options_(options), sources_(std::max(options.slots, source_names.size())), room_(sources_.size()) {
    FOVEA_CHECK(validate(options_).is_ok());
    for (std::size_t s = 0; s < sources_.size(); ++s) {
      sources_[s].in_use = s < source_names.size();
      sources_[s].closed = !sources_[s].in_use;
      if (sources_[s].in_use) sources_[s].name = source_names[s];
    }
    update_push_timeout();
  }
  StreamMux(const StreamMux&) = delete;
  StreamMux& operator=(const StreamMux&) = delete;

  // Slots, open or not: source indices are below it.
  std::size_t source_count() const { return sources_.size(); }

  // A new source in a free slot: its index, or std::nullopt when every slot is taken (a slot is
  // free once its last source ended and its frames were batched) or the mux is stopping.
  std::optional<std::size_t> open_source(std::string name) {
    std::lock_guard lock(mutex_);
    if (stop_requested_) return std::nullopt;
    for (std::size_t s = 0; s < sources_.size(); ++s) {
      if (sources_[s].in_use && !sources_[s].finished()) continue;
      if (sources_[s].in_use) retire(sources_[s]);
      sources_[s] = SourceState{.name = std::move(name), .in_use = true};
      return s;
    }
    return std::nullopt;
  }

  // A source that can wait (a file) in a live mux: held back when its queue is full, as in file
  // mode, instead of losing its oldest frame. For the source's own thread, before its first push.
  void hold_when_full(std::size_t source) {
    std::lock_guard lock(mutex_);
    source_at(source).held = true;
  }

  // The source's frame rate, once known: the live push timeout follows the fastest open source.
  void set_frame_rate(std::size_t source, double frames_per_second) {
    {
      std::lock_guard lock(mutex_);
      source_at(source).frame_rate = frames_per_second;
      update_push_timeout();
    }
    changed_.notify_all();  // the mux's push timeout
  }

  // The push timeout in force (auto_push_timeout: from the frame rates).
  std::int64_t push_timeout_us() const {
    std::lock_guard lock(mutex_);
    return push_timeout_us_;
  }

  // Source side, from the source's own thread. Blocks while the source's queue is full (file
  // mode). False once the mux is stopping: the source should stop decoding and return.
  [[nodiscard]] bool push(std::size_t source, T payload, std::optional<std::int64_t> pts_us) {
    std::unique_lock lock(mutex_);
    SourceState& state = source_at(source);
    room_[source].wait(lock,
                       [&] { return stop_requested_ || drops(state) || state.frames.size() < capacity(); });
    if (stop_requested_) {
      return false;
    }
    FOVEA_CHECK_MSG(!state.closed, "a source pushed after its end");
    if (state.frames.size() == capacity()) {
      state.frames.pop_front();
      ++state.dropped;
    }
    state.frames.push_back(MuxFrame<T>{
        .source = source, .index = state.next_index++, .pts_us = pts_us, .payload = std::move(payload)});
    lock.unlock();
    changed_.notify_all();
    return true;
  }

  // End of stream: the source's queued frames are still batched.
  void end(std::size_t source) { close_source(source, Status::ok()); }

  // File mode: while a source is starved, a batch begun does not wait for its next frame (the
  // header says why); the batch goes out with what it has.
  void set_starved(std::size_t source, bool starved) {
    {
      std::lock_guard lock(mutex_);
      source_at(source).starved = starved;
    }
    changed_.notify_all();
  }

  // The source failed: it is reported (log and stats) and leaves the rotation once its queued
  // frames are batched; the other sources carry on.
  void fail(std::size_t source, const Status& error) {
    FOVEA_CHECK(!error.is_ok());
    close_source(source, error);
  }

  // Every source ends now; what is queued is still batched.
  void request_stop() {
    {
      std::lock_guard lock(mutex_);
      stop_requested_ = true;
      for (SourceState& state : sources_) state.closed = true;
    }
    changed_.notify_all();
    for (std::condition_variable& room : room_) room.notify_all();
  }

  // The sources whose slots were reused, together (a service's cameras removed or ended): their
  // frames and drops stay in the run's totals. None before a slot is reused.
  std::optional<SourceStats> retired_stats() const {
    std::lock_guard lock(mutex_);
    if (retired_count_ == 0) return std::nullopt;
    SourceStats stats = retired_;
    stats.name = fmt::format("{} removed", retired_count_);
    return stats;
  }

  // Frames still queued for `source` (a test's or a service's check that it drained).
  std::size_t queued(std::size_t source) const {
    std::lock_guard lock(mutex_);
    return sources_.at(source).frames.size();
  }

  // Consumer side: the next batch, or std::nullopt once every source has ended and is drained.
  std::optional<Batch<T>> next_batch() {
    std::unique_lock lock(mutex_);
    Batch<T> batch;
    std::vector<std::size_t> taken(sources_.size(), 0);
    std::optional<std::chrono::steady_clock::time_point> deadline;
    while (batch.frames.size() < options_.batch_size) {
      const std::optional<std::size_t> source = options_.live ? wait_for_any_frame(lock, taken, deadline)
                                                              : wait_for_next_frame(lock, taken, deadline);
      if (!source) {
        break;
      }
      if (batch.frames.empty() && push_timeout_us_ >= 0) {
        deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(push_timeout_us_);
      }
      take_frame(*source, batch, taken);
    }
    if (batch.frames.empty()) {
      return std::nullopt;
    }
    batch.number = batches_++;
    return batch;
  }

  std::uint64_t batches() const {
    std::lock_guard lock(mutex_);
    return batches_;
  }

  // Frames batched (not pushed) per slot, drops, and how each source ended; a slot never used has
  // an empty name.
  std::vector<SourceStats> source_stats() const {
    std::lock_guard lock(mutex_);
    std::vector<SourceStats> stats;
    for (const SourceState& state : sources_) {
      stats.push_back({.name = state.in_use ? state.name : std::string(),
                       .frames = state.batched,
                       .dropped = state.dropped,
                       .ended = state.closed,
                       .failed = !state.error.is_ok(),
                       .error = state.error.message()});
    }
    return stats;
  }

 private:
  struct SourceState {
    std::string name;
    std::deque<MuxFrame<T>> frames;
    std::int64_t next_index = 0;
    std::uint64_t batched = 0;
    std::uint64_t dropped = 0;
    bool in_use = false;  // a source was opened in this slot
    bool closed = false;  // no more frames will come: end, failure or stop (or never opened)
    Status error;
    double frame_rate = 0.0;  // 0: unknown
    bool held = false;        // hold_when_full
    bool starved = false;     // set_starved
    bool finished() const { return closed && frames.empty(); }
  };

  void retire(const SourceState& state) {
    retired_.frames += state.batched;
    retired_.dropped += state.dropped;
    retired_.ended = true;
    retired_.state = "removed";
    ++retired_count_;
  }

  // A live mux drops a full queue's oldest frame, but for a source that can wait.
  bool drops(const SourceState& state) const { return options_.live && !state.held; }

  // Auto: one frame period of the fastest open source; 30 fps until a source says its rate.
  void update_push_timeout() {
    if (!options_.auto_push_timeout) {
      push_timeout_us_ = options_.push_timeout_us;
      return;
    }
    constexpr double kDefaultFrameRate = 30.0;
    double fastest = 0.0;
    for (const SourceState& state : sources_) {
      if (state.in_use && !state.closed) fastest = std::max(fastest, state.frame_rate);
    }
    push_timeout_us_ = static_cast<std::int64_t>(1e6 / (fastest > 0.0 ? fastest : kDefaultFrameRate));
  }

  std::size_t capacity() const { return options_.source_queue_capacity; }

  SourceState& source_at(std::size_t source) {
    FOVEA_CHECK_MSG(source < sources_.size(), "source index out of range");
    return sources_[source];
  }

  void close_source(std::size_t source, const Status& error) {
    {
      std::lock_guard lock(mutex_);
      SourceState& state = source_at(source);
      state.closed = true;
      update_push_timeout();
      if (!error.is_ok() && state.error.is_ok()) {
        state.error = error;
        log_error("source {}: {}; the other sources carry on", state.name, error.to_string());
      }
    }
    changed_.notify_all();
  }

  // Sources in round-robin order from the cursor that may still add a frame to this batch.
  std::vector<std::size_t> candidates(const std::vector<std::size_t>& taken) const {
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < sources_.size(); ++k) {
      const std::size_t s = (cursor_ + k) % sources_.size();
      const bool capped =
          options_.max_frames_per_source_per_batch && taken[s] >= *options_.max_frames_per_source_per_batch;
      if (!sources_[s].finished() && !capped) order.push_back(s);
    }
    return order;
  }

  template <typename Ready>
  bool wait(std::unique_lock<std::mutex>& lock,
            const std::optional<std::chrono::steady_clock::time_point>& deadline, Ready ready) {
    if (!deadline) {
      changed_.wait(lock, ready);
      return true;
    }
    return changed_.wait_until(lock, *deadline, ready);
  }

  // No candidate left ends the batch, and with it the run once no source is open, unless the mux
  // keeps open: then it waits for a source to be opened until the stop, with an empty batch only (a
  // batch begun goes out with what it has: the last source's last frames). (Sources that are open
  // but have reached their per-batch cap end only the batch.)
  bool none_left(const std::vector<std::size_t>& order, const std::vector<std::size_t>& taken) const {
    if (!order.empty()) return false;
    const bool any_open = std::any_of(sources_.begin(), sources_.end(),
                                      [](const SourceState& state) { return !state.finished(); });
    const bool batch_begun = std::any_of(taken.begin(), taken.end(), [](std::size_t n) { return n > 0; });
    return !options_.keep_open || stop_requested_ || any_open || batch_begun;
  }

  // File mode: the first candidate in order, waiting for its frame; a source that ends while
  // waited for is skipped. std::nullopt when no candidate is left or the deadline passed.
  std::optional<std::size_t> wait_for_next_frame(
      std::unique_lock<std::mutex>& lock, const std::vector<std::size_t>& taken,
      const std::optional<std::chrono::steady_clock::time_point>& deadline) {
    for (;;) {
      const std::vector<std::size_t> order = candidates(taken);
      if (none_left(order, taken)) {
        return std::nullopt;
      }
      if (order.empty()) {
        // keep_open: wait for a source to be opened (or the stop).
        if (!wait(lock, deadline, [&] { return stop_requested_ || !candidates(taken).empty(); })) {
          return std::nullopt;
        }
        continue;
      }
      const SourceState& state = sources_[order.front()];
      const bool batch_begun = std::any_of(taken.begin(), taken.end(), [](std::size_t n) { return n > 0; });
      const auto cut = [&] { return batch_begun && state.starved; };
      if (!wait(lock, deadline, [&] { return !state.frames.empty() || state.closed || cut(); })) {
        return std::nullopt;
      }
      if (!state.frames.empty()) {
        return order.front();
      }
      if (!state.closed) return std::nullopt;  // starved: the batch goes out partial
    }
  }

  // Live mode: the first candidate in order that has a frame, waiting only while none has one.
  std::optional<std::size_t> wait_for_any_frame(
      std::unique_lock<std::mutex>& lock, const std::vector<std::size_t>& taken,
      const std::optional<std::chrono::steady_clock::time_point>& deadline) {
    std::optional<std::size_t> found;
    const auto frame_or_none_left = [&] {
      const std::vector<std::size_t> order = candidates(taken);
      const auto with_frame = std::find_if(order.begin(), order.end(),
                                           [&](std::size_t s) { return !sources_[s].frames.empty(); });
      found = with_frame == order.end() ? std::nullopt : std::optional<std::size_t>(*with_frame);
      return found.has_value() || none_left(order, taken);
    };
    if (!wait(lock, deadline, frame_or_none_left)) {
      return std::nullopt;
    }
    return found;
  }

  void take_frame(std::size_t source, Batch<T>& batch, std::vector<std::size_t>& taken) {
    SourceState& state = sources_[source];
    batch.frames.push_back(std::move(state.frames.front()));
    state.frames.pop_front();
    ++state.batched;
    ++taken[source];
    cursor_ = (source + 1) % sources_.size();
    room_[source].notify_one();  // its thread may be blocked on its full queue
  }

  const MuxOptions options_;
  mutable std::mutex mutex_;
  // What the mux waits on: a frame pushed, a source opened or ended, a frame rate, the stop.
  std::condition_variable changed_;
  std::vector<SourceState> sources_;
  // Per slot, what its source's thread waits on when its queue is full: a frame taken from it, or
  // the stop. One condition for every change woke every source thread on every frame taken and
  // pushed (64 sources at 4,200 frames/s: about half a million wake-ups a second, nearly all to go
  // back to sleep).
  std::vector<std::condition_variable> room_;
  std::size_t cursor_ = 0;
  std::uint64_t batches_ = 0;
  bool stop_requested_ = false;
  std::int64_t push_timeout_us_ = -1;
  SourceStats retired_;  // the sources whose slots were reused, summed
  std::uint64_t retired_count_ = 0;
};

}  // namespace fovea::pipeline
