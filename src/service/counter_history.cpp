#include "service/counter_history.h"

#include "core/check.h"

namespace fovea::service {

void CounterHistory::add(const Reading& reading) {
  if (!readings_.empty()) {
    FOVEA_CHECK(reading.time >= readings_.back().time);
  }
  // The last of several readings replaces the one before, but never the only one: it is the base.
  if (readings_.size() >= 2 && reading.time - readings_.back().time < kSpacing) {
    readings_.back() = reading;
  } else {
    readings_.push_back(reading);
  }
  while (readings_.size() >= 2 && readings_[1].time <= reading.time - kKept) readings_.pop_front();
}

const CounterHistory::Reading& CounterHistory::baseline(Clock::duration window) const {
  FOVEA_CHECK(!readings_.empty());
  const Clock::time_point cutoff = readings_.back().time - window;
  for (auto it = readings_.rbegin(); it != readings_.rend(); ++it) {
    if (it->time <= cutoff) return *it;
  }
  return readings_.front();
}

double CounterHistory::frames_per_second(Clock::duration window) const {
  if (readings_.empty()) return 0.0;
  const Reading& base = baseline(window);
  const Reading& last = readings_.back();
  const double seconds = std::chrono::duration<double>(last.time - base.time).count();
  if (seconds <= 0.0 || last.frames < base.frames) return 0.0;
  return static_cast<double>(last.frames - base.frames) / seconds;
}

std::uint64_t CounterHistory::dropped_over(Clock::duration window) const {
  if (readings_.empty()) return 0;
  const Reading& base = baseline(window);
  const Reading& last = readings_.back();
  return last.dropped >= base.dropped ? last.dropped - base.dropped : 0;
}

}  // namespace fovea::service
