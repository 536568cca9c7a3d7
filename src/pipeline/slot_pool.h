// SlotPool<T>: a fixed set of reusable per-batch resources (a batch's buffers and its ready event),
// handed out one at a time and given back when the handle goes away.
//
// Why a fixed set: every buffer a batch needs is allocated once, when the pipeline is built, so the
// steady state allocates nothing; and acquire() blocks while every slot is in use, so the number of
// slots bounds the batches in flight (and the memory they hold) from the head of the pipeline,
// whatever the queues between the stages hold.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/check.h"

namespace fovea::pipeline {

template <typename T>
class SlotPool {
  struct State {
    std::mutex mutex;
    std::condition_variable returned;
    std::vector<std::unique_ptr<T>> free;
    std::size_t size = 0;
    bool closed = false;
  };

 public:
  // Owns one slot; gives it back to the pool when destroyed. Movable, not copyable.
  class Handle {
   public:
    Handle() = default;
    Handle(Handle&& other) noexcept = default;
    Handle& operator=(Handle&& other) noexcept {
      give_back();
      state_ = std::move(other.state_);
      slot_ = std::move(other.slot_);
      return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { give_back(); }

    T* operator->() const { return slot_.get(); }
    T& operator*() const { return *slot_; }
    explicit operator bool() const { return slot_ != nullptr; }

   private:
    friend class SlotPool;
    Handle(std::shared_ptr<State> state, std::unique_ptr<T> slot)
        : state_(std::move(state)), slot_(std::move(slot)) {}

    void give_back() {
      if (!slot_) return;
      {
        std::lock_guard lock(state_->mutex);
        state_->free.push_back(std::move(slot_));
      }
      state_->returned.notify_one();
    }

    std::shared_ptr<State> state_;
    std::unique_ptr<T> slot_;
  };

  explicit SlotPool(std::vector<std::unique_ptr<T>> slots) : state_(std::make_shared<State>()) {
    FOVEA_CHECK(!slots.empty());
    state_->size = slots.size();
    state_->free = std::move(slots);
  }
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  std::size_t size() const { return state_->size; }

  // Blocks while every slot is in use; std::nullopt once the pool is closed.
  std::optional<Handle> acquire() {
    std::unique_lock lock(state_->mutex);
    state_->returned.wait(lock, [this] { return state_->closed || !state_->free.empty(); });
    if (state_->closed) {
      return std::nullopt;
    }
    std::unique_ptr<T> slot = std::move(state_->free.back());
    state_->free.pop_back();
    return Handle(state_, std::move(slot));
  }

  // Wakes a blocked acquire(), which returns std::nullopt, as every later one does (shutdown).
  void close() {
    {
      std::lock_guard lock(state_->mutex);
      state_->closed = true;
    }
    state_->returned.notify_all();
  }

  std::size_t in_use() const {
    std::lock_guard lock(state_->mutex);
    return state_->size - state_->free.size();
  }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fovea::pipeline
