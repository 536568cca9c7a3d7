// BoundedQueue<T>: the hand-off between two pipeline threads.
//
// Why bounded: a queue that grows without limit turns a slow consumer (an encoder, a sink on a
// slow disk) into unbounded memory growth, because the sources keep decoding at full speed. A
// bounded queue makes a full queue block its producer instead (back-pressure), so the pipeline
// runs at the speed of its slowest stage with a fixed number of batches in flight, which is also
// what lets buffers come from fixed-size pools.
//
// Shutdown: close() wakes every waiter. After it, pushes fail (the item stays with the caller)
// and pops keep returning the items already queued, then std::nullopt: consumers drain, they do
// not lose work.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "core/check.h"

namespace fovea::pipeline {

enum class PushResult {
  kPushed,
  kClosed,    // the queue was closed; the item was not taken
  kTimedOut,  // the queue stayed full until the deadline; the item was not taken
};

// Depth and high-water mark, for the stats (a high-water mark at capacity names the bottleneck:
// the consumer of that queue is the slowest stage).
struct QueueCounters {
  std::size_t depth = 0;
  std::size_t capacity = 0;
  std::size_t high_water = 0;
  std::size_t pushed = 0;
};

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) { FOVEA_CHECK(capacity > 0); }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while the queue is full. `item` is moved from only when the result is kPushed.
  PushResult push(T&& item) {
    return push_until(std::chrono::steady_clock::time_point::max(), std::move(item));
  }

  // Never blocks.
  PushResult try_push(T&& item) {
    return push_until(std::chrono::steady_clock::time_point::min(), std::move(item));
  }

  PushResult push_for(std::chrono::microseconds timeout, T&& item) {
    return push_until(std::chrono::steady_clock::now() + timeout, std::move(item));
  }

  PushResult push_until(std::chrono::steady_clock::time_point deadline, T&& item) {
    std::unique_lock lock(mutex_);
    const auto has_room = [this] { return closed_ || items_.size() < capacity_; };
    if (!wait_until(lock, not_full_, deadline, has_room)) {
      return PushResult::kTimedOut;
    }
    if (closed_) {
      return PushResult::kClosed;
    }
    items_.push_back(std::move(item));
    ++pushed_;
    high_water_ = std::max(high_water_, items_.size());
    lock.unlock();
    not_empty_.notify_one();
    return PushResult::kPushed;
  }

  // Blocks while the queue is empty and open; std::nullopt once it is closed and drained.
  std::optional<T> pop() { return pop_until(std::chrono::steady_clock::time_point::max()); }

  // std::nullopt when nothing is queued (closed or not: is_closed() tells them apart).
  std::optional<T> try_pop() { return pop_until(std::chrono::steady_clock::time_point::min()); }

  // std::nullopt on timeout or once closed and drained (is_closed() tells them apart).
  std::optional<T> pop_for(std::chrono::microseconds timeout) {
    return pop_until(std::chrono::steady_clock::now() + timeout);
  }

  std::optional<T> pop_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    const auto has_item = [this] { return closed_ || !items_.empty(); };
    if (!wait_until(lock, not_empty_, deadline, has_item) || items_.empty()) {
      return std::nullopt;
    }
    std::optional<T> item(std::move(items_.front()));
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  // Idempotent. Wakes every blocked producer and consumer.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool is_closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  QueueCounters counters() const {
    std::lock_guard lock(mutex_);
    return {.depth = items_.size(), .capacity = capacity_, .high_water = high_water_, .pushed = pushed_};
  }

 private:
  // time_point::max() waits without a deadline and time_point::min() not at all, so neither
  // reaches the clock arithmetic of wait_until, where they would overflow.
  template <typename Predicate>
  static bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& condition,
                         std::chrono::steady_clock::time_point deadline, Predicate ready) {
    if (ready()) {
      return true;
    }
    if (deadline == std::chrono::steady_clock::time_point::min()) {
      return false;
    }
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      condition.wait(lock, ready);
      return true;
    }
    return condition.wait_until(lock, deadline, ready);
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  std::size_t high_water_ = 0;
  std::size_t pushed_ = 0;
  bool closed_ = false;
};

}  // namespace fovea::pipeline
