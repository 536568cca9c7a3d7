// A decoded video frame: an ImageView plus what keeps its memory alive and where it sits in time.
// Frames are cheap to move and copy (the owner is shared); the memory is released when the last
// copy goes away, back to its pool when it came from one.
#pragma once

#include <cstdint>
#include <memory>

#include "core/image.h"

namespace fovea {

struct Rational {
  int num = 0;
  int den = 1;
  double to_double() const { return den == 0 ? 0.0 : static_cast<double>(num) / den; }
};

// Sentinel-free "no timestamp": frames without a pts carry has_pts == false.
struct Frame {
  ImageView image;
  std::shared_ptr<void> owner;  // a PooledBuffer, an AVFrame reference, ...
  std::int64_t pts = 0;         // in time_base units
  bool has_pts = false;
  Rational time_base;
  std::int64_t index = 0;  // 0-based position in display order, per decoder
  bool keyframe = false;
  bool damaged = false;  // the decoder reported errors or concealment for this frame
  int bit_depth = 8;     // bits per sample of the source (10 for P016 from Main10)
};

}  // namespace fovea
