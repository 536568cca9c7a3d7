// The waits between reconnect attempts: `initial` seconds, doubling each failed attempt up to
// `max`; at most `attempts` attempts in a row (0: no limit). A connection that worked starts the
// waits over. The live stream outputs (sinks.h, StreamSink) reconnect by it.
#pragma once

#include <algorithm>

namespace fovea::pipeline {

class Backoff {
 public:
  Backoff(double initial_s, double max_s, int attempts = 0)
      : initial_(initial_s), max_(max_s), attempts_(attempts) {}

  // One more attempt: false when they are used up.
  bool next() {
    if (attempts_ > 0 && attempt_ >= attempts_) return false;
    wait_ = attempt_ == 0 ? initial_ : std::min(max_, wait_ * 2.0);
    ++attempt_;
    return true;
  }
  // The connection worked: the next loss starts from the first wait again.
  void reset() { attempt_ = 0; }
  double wait_seconds() const { return wait_; }
  int attempt() const { return attempt_; }

 private:
  double initial_;
  double max_;
  int attempts_;
  int attempt_ = 0;
  double wait_ = 0.0;
};

}  // namespace fovea::pipeline
