// Blur parameters the blur tests share.
#pragma once

#include "image/blur.h"

namespace fovea::image::testing {

// A Gaussian of kw x kh (sigma 0: OpenCV's rule from the size). The border value 77 is far from
// typical pixel values, so a constant border that leaks in shows.
inline BlurParams gaussian(int kw, int kh, BorderMode border, double sigma = 0.0) {
  BlurParams params;
  params.kernel_width = kw;
  params.kernel_height = kh;
  params.sigma_x = sigma;
  params.border = border;
  params.border_value = 77.0f;
  return params;
}

}  // namespace fovea::image::testing
