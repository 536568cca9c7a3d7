// JPEG files with the chroma sampling and progression the nvJPEG tests choose, written through
// libjpeg (io::encode_image always writes baseline 4:2:0).
#pragma once

#include <string>

#include "io/image_codec.h"

namespace fovea::io::testing {

struct JpegShape {
  // Luma's sampling factors; chroma's are 1x1. 2x2 is 4:2:0, 1x1 4:4:4, 2x1 4:2:2, 4x1 4:1:1.
  int luma_h = 2;
  int luma_v = 2;
  bool progressive = false;
  int quality = 90;
};

// `rgb` (kRGB8, host) as a YCbCr JPEG of that shape.
std::string encode_shaped_jpeg(const HostImage& rgb, const JpegShape& shape);

}  // namespace fovea::io::testing
