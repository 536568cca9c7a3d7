// Owned test images on the host and (with CUDA) on the device, filled with reproducible random
// data, and comparisons between them. Shared by the image and post tests.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/image.h"

namespace fovea::image::testing {

// An image whose planes live in one host allocation. `extra_pitch` bytes pad every row, so tests
// catch kernels that assume pitch == width.
class HostImage {
 public:
  HostImage(PixelFormat format, int width, int height, int channels = 3, int extra_pitch = 0);
  ImageView& view() { return view_; }
  const ImageView& view() const { return view_; }
  // Uniform random bytes (or floats in [0, 1) for the planar float formats).
  void fill_random(std::uint32_t seed);

 private:
  std::vector<std::byte> bytes_;
  ImageView view_;
};

// The largest absolute difference between two images of the same format and size, over payload
// bytes (u8 samples), u16 samples (P016) or floats (planar F32); planar F16 is compared as float.
double max_abs_difference(const ImageView& a, const ImageView& b);

#if defined(FOVEA_HAVE_CUDA)
// The same on the device (cudaMallocPitch'd planes); freed on destruction.
class DeviceImage {
 public:
  DeviceImage(PixelFormat format, int width, int height, int channels = 3);
  ~DeviceImage();
  DeviceImage(const DeviceImage&) = delete;
  DeviceImage& operator=(const DeviceImage&) = delete;
  ImageView& view() { return view_; }
  void upload(const HostImage& host);
  HostImage download(int extra_pitch = 0) const;

 private:
  ImageView view_;
};
#endif

// True when a CUDA device is present; GPU tests call FOVEA_REQUIRE_GPU() first.
bool have_gpu();
#define FOVEA_REQUIRE_GPU()                                                     \
  do {                                                                          \
    if (!::fovea::image::testing::have_gpu()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

}  // namespace fovea::image::testing
