// The constant-velocity Kalman filter of SORT-family trackers on a box's center x, center y,
// aspect ratio (width / height) and height, with their velocities (8 states, 4 measured).
//
// Noise model: DeepSORT's and ByteTrack's (kalman_filter.py in both): standard deviations
// proportional to the box height, 1/20 of it for positions and 1/160 for velocities per frame,
// so a filter behaves the same on small and large objects. SORT's own filter works on area and
// aspect with fixed noise; the height-proportional model is the one ByteTrack was tuned with.
//
// Plain fixed-size arrays instead of Eigen (which fovea does not depend on): the matrices are 8x8
// and 4x4, the transition matrix is [I I; 0 I] and the measurement matrix [I 0], so predict is
// two passes of additions and the update needs one 4x4 inverse; written out, that is a few hundred
// flops with no temporaries on the heap, which a generic matrix library would not beat.
#pragma once

#include <array>

#include "core/box.h"

namespace fovea::track {

class BoxKalman {
 public:
  BoxKalman() = default;
  // A filter at `box` with zero velocity and the initial uncertainty of DeepSORT's initiate().
  explicit BoxKalman(Box box);

  // One frame forward. `hold_height` zeroes the height velocity first, as ByteTrack does for
  // tracks that are not being tracked (a lost box would otherwise keep growing or shrinking).
  void predict(bool hold_height);
  // Corrects the state with a measured box.
  void update(Box box);
  // The state's box (corners); a non-positive predicted height gives an empty box.
  Box box() const;

 private:
  std::array<double, 8> x_{};
  std::array<double, 64> p_{};  // row-major covariance
};

}  // namespace fovea::track
