// A source's counters (frames, drops) read now and then, kept for the last few seconds: the rates
// the API shows (fps over ~5 s, drops over ~10 s) without a thread that samples them. Readings are
// taken whenever the API asks, so a window spans from the newest reading at least that old (or the
// oldest kept) to the last one: with requests a second apart, about the window; with a scrape
// every 15 s, since the previous scrape.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

namespace fovea::service {

class CounterHistory {
 public:
  using Clock = std::chrono::steady_clock;

  struct Reading {
    Clock::time_point time;
    std::uint64_t frames = 0;
    std::uint64_t dropped = 0;
  };

  // The longest window asked for: older readings go, but for the newest one that old.
  static constexpr Clock::duration kKept = std::chrono::seconds(10);
  // Readings closer than this to the previous one replace it: a burst of requests (16 clients at
  // once) keeps a handful of readings, not thousands.
  static constexpr Clock::duration kSpacing = std::chrono::milliseconds(250);

  // Readings come in time order. A counter that went down (a slot's counters started over) reads
  // as no change.
  void add(const Reading& reading);
  bool empty() const { return readings_.empty(); }

  // Frames per second over `window` up to the last reading; 0 before two readings apart in time.
  double frames_per_second(Clock::duration window) const;
  // Frames dropped over `window` up to the last reading.
  std::uint64_t dropped_over(Clock::duration window) const;

 private:
  // The newest reading at least `window` before the last one; the oldest when none is that old.
  const Reading& baseline(Clock::duration window) const;

  std::deque<Reading> readings_;  // oldest first
};

}  // namespace fovea::service
