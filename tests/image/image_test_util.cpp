#include "image/image_test_util.h"

#include <cmath>
#include <cstring>
#include <random>

#include "core/check.h"
#include "core/half.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "core/cuda_raii.h"
#endif

namespace fovea::image::testing {

namespace {

// Bytes per sample of a format's planes.
int sample_bytes(PixelFormat format) {
  switch (format) {
    case PixelFormat::kP016:
    case PixelFormat::kPlanarF16: return 2;
    case PixelFormat::kPlanarF32: return 4;
    default: return 1;
  }
}

}  // namespace

HostImage::HostImage(PixelFormat format, int width, int height, int channels, int extra_pitch) {
  auto layout = format_layout(format, width, height, channels);
  FOVEA_CHECK(layout.is_ok());
  view_.format = format;
  view_.width = width;
  view_.height = height;
  view_.channels = channels;
  view_.memory = MemoryKind::kHost;
  view_.num_planes = layout->num_planes;
  std::size_t total = 0;
  std::array<std::size_t, kMaxPlanes> offsets{};
  for (int p = 0; p < layout->num_planes; ++p) {
    offsets[p] = total;
    // Padding keeps rows aligned to the sample size (P016 and float rows hold 2- and 4-byte samples).
    const int sample = sample_bytes(format);
    const int padding = (extra_pitch + sample - 1) / sample * sample;
    view_.planes[p].pitch = static_cast<std::size_t>(layout->planes[p].width_bytes + padding);
    total += view_.planes[p].pitch * static_cast<std::size_t>(layout->planes[p].height);
  }
  bytes_.assign(total, std::byte{0});
  for (int p = 0; p < layout->num_planes; ++p) view_.planes[p].data = bytes_.data() + offsets[p];
}

void HostImage::fill_random(std::uint32_t seed) {
  std::mt19937 rng(seed);
  if (view_.format == PixelFormat::kPlanarF32 || view_.format == PixelFormat::kPlanarF16) {
    std::uniform_real_distribution<float> dist(0.0f, 1.0f);
    auto layout = format_layout(view_.format, view_.width, view_.height, view_.channels);
    for (int p = 0; p < view_.num_planes; ++p) {
      for (int y = 0; y < layout->planes[p].height; ++y) {
        for (int x = 0; x < view_.width; ++x) {
          if (view_.format == PixelFormat::kPlanarF32) {
            view_.row<float>(p, y)[x] = dist(rng);
          } else {
            view_.row<std::uint16_t>(p, y)[x] = float_to_half(dist(rng)).bits;
          }
        }
      }
    }
    return;
  }
  std::uniform_int_distribution<int> dist(0, 255);
  for (std::byte& b : bytes_) b = static_cast<std::byte>(dist(rng));
}

double max_abs_difference(const ImageView& a, const ImageView& b) {
  FOVEA_CHECK(a.format == b.format && a.width == b.width && a.height == b.height && a.channels == b.channels);
  auto layout = format_layout(a.format, a.width, a.height, a.channels);
  FOVEA_CHECK(layout.is_ok());
  const int bytes = sample_bytes(a.format);
  double worst = 0;
  for (int p = 0; p < layout->num_planes; ++p) {
    const int samples = layout->planes[p].width_bytes / bytes;
    for (int y = 0; y < layout->planes[p].height; ++y) {
      for (int x = 0; x < samples; ++x) {
        double va = 0;
        double vb = 0;
        switch (a.format) {
          case PixelFormat::kP016:
            va = a.row<std::uint16_t>(p, y)[x];
            vb = b.row<std::uint16_t>(p, y)[x];
            break;
          case PixelFormat::kPlanarF32:
            va = a.row<float>(p, y)[x];
            vb = b.row<float>(p, y)[x];
            break;
          case PixelFormat::kPlanarF16:
            va = half_to_float(Half{a.row<std::uint16_t>(p, y)[x]});
            vb = half_to_float(Half{b.row<std::uint16_t>(p, y)[x]});
            break;
          default: va = a.row<std::uint8_t>(p, y)[x]; vb = b.row<std::uint8_t>(p, y)[x];
        }
        const double d = std::isnan(va) || std::isnan(vb) ? INFINITY : std::abs(va - vb);
        worst = std::max(worst, d);
      }
    }
  }
  return worst;
}

#if defined(FOVEA_HAVE_CUDA)
DeviceImage::DeviceImage(PixelFormat format, int width, int height, int channels) {
  auto layout = format_layout(format, width, height, channels);
  FOVEA_CHECK(layout.is_ok());
  view_.format = format;
  view_.width = width;
  view_.height = height;
  view_.channels = channels;
  view_.memory = MemoryKind::kDevice;
  view_.num_planes = layout->num_planes;
  for (int p = 0; p < layout->num_planes; ++p) {
    FOVEA_CHECK(cudaMallocPitch(&view_.planes[p].data, &view_.planes[p].pitch,
                                static_cast<std::size_t>(layout->planes[p].width_bytes),
                                static_cast<std::size_t>(layout->planes[p].height)) == cudaSuccess);
  }
}

DeviceImage::~DeviceImage() {
  for (int p = 0; p < view_.num_planes; ++p) cudaFree(view_.planes[p].data);
}

void DeviceImage::upload(const HostImage& host) {
  auto layout = format_layout(view_.format, view_.width, view_.height, view_.channels);
  for (int p = 0; p < view_.num_planes; ++p) {
    FOVEA_CHECK(cudaMemcpy2D(view_.planes[p].data, view_.planes[p].pitch, host.view().planes[p].data,
                             host.view().planes[p].pitch,
                             static_cast<std::size_t>(layout->planes[p].width_bytes),
                             static_cast<std::size_t>(layout->planes[p].height),
                             cudaMemcpyHostToDevice) == cudaSuccess);
  }
  // A copy from pageable memory may return before its DMA lands, and the ops run on non-blocking
  // streams, which are not ordered after the legacy stream these copies use.
  FOVEA_CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

HostImage DeviceImage::download(int extra_pitch) const {
  HostImage host(view_.format, view_.width, view_.height, view_.channels, extra_pitch);
  auto layout = format_layout(view_.format, view_.width, view_.height, view_.channels);
  FOVEA_CHECK(cudaDeviceSynchronize() == cudaSuccess);
  for (int p = 0; p < view_.num_planes; ++p) {
    FOVEA_CHECK(cudaMemcpy2D(host.view().planes[p].data, host.view().planes[p].pitch, view_.planes[p].data,
                             view_.planes[p].pitch, static_cast<std::size_t>(layout->planes[p].width_bytes),
                             static_cast<std::size_t>(layout->planes[p].height),
                             cudaMemcpyDeviceToHost) == cudaSuccess);
  }
  return host;
}

bool have_gpu() {
  return cuda_device_count() > 0;
}
#else
bool have_gpu() {
  return false;
}
#endif

}  // namespace fovea::image::testing
