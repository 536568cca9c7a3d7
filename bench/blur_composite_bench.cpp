// Background blur as the segmentation flow runs it: the fused op (blur_composite.h: one kernel,
// the blurred frame never leaves shared memory) against the separate path (a Gaussian blur of each
// frame, then a blend of the sharp frame over the blurred one by the person mask). Batch of 8 1080p
// RGB8 frames on the device, timed with CUDA events, compared with device-to-device copies in the
// same run.
//
//   blur_composite_bench [kernel_size=15] [batch=8] [iterations=100] [mask=person]
//
// The default 15x15 kernel (sigma 2.6 from OpenCV's formula) is a moderate background blur at
// 1080p: wide enough to wash out background texture, and the size the compute cost is quoted at.
// Wider kernels cost compute, not bytes; pass e.g. 31 to see how the ratio falls.
//
// The mask is a person-shaped blob (head and torso ellipses, ~30% of the frame, 16-pixel soft
// edges), as a segmentation model gives: the fused kernel copies tiles whose mask is all 255, so
// the mask's shape matters and a uniform test mask would flatter (all 255) or penalize (all 0) it.
// The uniform masks time one path of the kernel each, to see where the person mask's time goes:
// `opaque` (all 255: every tile copied), `clear` (all 0: every tile blurred, no blend) and `soft`
// (all 128: every tile blurred and blended).
//
// Bytes: "minimum" counts what any implementation must touch (frame read, mask read, output
// written); "touched" adds what the two-op sequence also moves (the blur reads the frame and writes
// the blurred frame, which the blend reads back). The copy baseline is the faster of one flat
// cudaMemcpyAsync of all frames and per-frame pitched cudaMemcpy2DAsync calls.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "image/blur.h"
#include "image/blur_composite.h"
#include "image/composite.h"

namespace {

using fovea::ImageView;
using fovea::MemoryKind;
using fovea::PixelFormat;
using namespace fovea::image;

#define BENCH_CHECK(call)                                                                                    \
  do {                                                                                                       \
    cudaError_t bench_error_ = (call);                                                                       \
    if (bench_error_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s: %s (%s:%d)\n", #call, cudaGetErrorString(bench_error_), __FILE__, __LINE__); \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

#define BENCH_OK(status_expr)                                          \
  do {                                                                 \
    fovea::Status bench_status_ = (status_expr);                       \
    if (!bench_status_.is_ok()) {                                      \
      std::fprintf(stderr, "%s\n", bench_status_.to_string().c_str()); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

constexpr int kWidth = 1920;
constexpr int kHeight = 1080;

ImageView device_image(PixelFormat format, int bytes_per_pixel) {
  ImageView view;
  view.format = format;
  view.width = kWidth;
  view.height = kHeight;
  view.memory = MemoryKind::kDevice;
  view.num_planes = 1;
  BENCH_CHECK(cudaMallocPitch(&view.planes[0].data, &view.planes[0].pitch,
                              static_cast<std::size_t>(kWidth) * bytes_per_pixel, kHeight));
  BENCH_CHECK(cudaMemset2D(view.planes[0].data, view.planes[0].pitch, 128,
                           static_cast<std::size_t>(kWidth) * bytes_per_pixel, kHeight));
  return view;
}

// 0..1 inside an ellipse, ramping to 0 over `soft` pixels outside it.
double ellipse_coverage(double x, double y, double cx, double cy, double ax, double ay, double soft) {
  const double r = std::hypot((x - cx) / ax, (y - cy) / ay);
  const double outside = (r - 1.0) * std::min(ax, ay);  // ~pixels beyond the edge
  return std::clamp(1.0 - outside / soft, 0.0, 1.0);
}

// A person: a head over a torso that the frame's bottom cuts off.
std::vector<std::uint8_t> person_mask() {
  constexpr double kSoftEdge = 16.0;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(kWidth) * kHeight);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      const double head = ellipse_coverage(x, y, 960, 300, 140, 170, kSoftEdge);
      const double torso = ellipse_coverage(x, y, 960, 880, 440, 480, kSoftEdge);
      mask[static_cast<std::size_t>(y) * kWidth + x] =
          static_cast<std::uint8_t>(std::lround(255.0 * std::max(head, torso)));
    }
  }
  return mask;
}

// The mask the fourth argument names, or nothing for an unknown name.
std::optional<std::vector<std::uint8_t>> named_mask(const std::string& name) {
  const std::size_t pixels = static_cast<std::size_t>(kWidth) * kHeight;
  if (name == "person") return person_mask();
  if (name == "opaque") return std::vector<std::uint8_t>(pixels, 255);
  if (name == "clear") return std::vector<std::uint8_t>(pixels, 0);
  if (name == "soft") return std::vector<std::uint8_t>(pixels, 128);
  return std::nullopt;
}

// Frame content with texture in every channel (the timing does not depend on it; the comparison
// of the fused and separate outputs does).
std::vector<std::uint8_t> textured_frame(int seed) {
  std::vector<std::uint8_t> frame(static_cast<std::size_t>(kWidth) * kHeight * 3);
  std::uint32_t state = 2463534242u + static_cast<std::uint32_t>(seed);
  for (std::size_t i = 0; i < frame.size(); ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    frame[i] = static_cast<std::uint8_t>((i % (kWidth * 3)) / 23 + (state & 63));
  }
  return frame;
}

void upload(const ImageView& view, const std::vector<std::uint8_t>& bytes, int bytes_per_pixel) {
  BENCH_CHECK(cudaMemcpy2D(view.planes[0].data, view.planes[0].pitch, bytes.data(),
                           static_cast<std::size_t>(kWidth) * bytes_per_pixel,
                           static_cast<std::size_t>(kWidth) * bytes_per_pixel, kHeight,
                           cudaMemcpyHostToDevice));
}

// The largest byte difference between two device images of the same size.
int max_difference(const ImageView& a, const ImageView& b, int bytes_per_pixel) {
  const std::size_t row = static_cast<std::size_t>(kWidth) * bytes_per_pixel;
  std::vector<std::uint8_t> ha(row * kHeight), hb(row * kHeight);
  BENCH_CHECK(cudaMemcpy2D(ha.data(), row, a.planes[0].data, a.planes[0].pitch, row, kHeight,
                           cudaMemcpyDeviceToHost));
  BENCH_CHECK(cudaMemcpy2D(hb.data(), row, b.planes[0].data, b.planes[0].pitch, row, kHeight,
                           cudaMemcpyDeviceToHost));
  int worst = 0;
  for (std::size_t i = 0; i < ha.size(); ++i) worst = std::max(worst, std::abs(ha[i] - hb[i]));
  return worst;
}

// Milliseconds per call of `body`, averaged over `iterations` after one warm-up call.
template <typename Body>
float time_ms(cudaStream_t stream, int iterations, Body body) {
  body();
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  BENCH_CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < iterations; ++i) body();
  BENCH_CHECK(cudaEventRecord(stop, stream));
  BENCH_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
  BENCH_CHECK(cudaEventDestroy(start));
  BENCH_CHECK(cudaEventDestroy(stop));
  return ms / static_cast<float>(iterations);
}

}  // namespace

int main(int argc, char** argv) {
  const int kernel_size = argc > 1 ? std::atoi(argv[1]) : 15;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 8;
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 100;
  const std::string mask_name = argc > 4 ? argv[4] : "person";
  const std::optional<std::vector<std::uint8_t>> mask_bytes_host = named_mask(mask_name);
  if (!mask_bytes_host) {
    std::fprintf(stderr, "unknown mask '%s': person, opaque, clear or soft\n", mask_name.c_str());
    return 2;
  }
  cudaStream_t stream;
  BENCH_CHECK(cudaStreamCreate(&stream));
  ImageBatch frames, blurred, masks, output, fused;
  for (int i = 0; i < batch; ++i) {
    frames.images.push_back(device_image(PixelFormat::kRGB8, 3));
    blurred.images.push_back(device_image(PixelFormat::kRGB8, 3));
    masks.images.push_back(device_image(PixelFormat::kGRAY8, 1));
    output.images.push_back(device_image(PixelFormat::kRGB8, 3));
    fused.images.push_back(device_image(PixelFormat::kRGB8, 3));
    upload(frames.images.back(), textured_frame(i), 3);
    upload(masks.images.back(), *mask_bytes_host, 1);
  }
  double coverage = 0.0;
  for (std::uint8_t m : *mask_bytes_host) coverage += m / 255.0;
  coverage /= static_cast<double>(mask_bytes_host->size());
  BlurParams blur;
  blur.kernel_width = blur.kernel_height = kernel_size;

  const double frame_bytes = static_cast<double>(kWidth) * kHeight * 3 * batch;
  const double mask_bytes = static_cast<double>(kWidth) * kHeight * batch;
  const float blur_ms =
      time_ms(stream, iterations, [&] { BENCH_OK(run_blur_cuda(stream, frames, blurred, blur)); });
  const float blend_ms =
      time_ms(stream, iterations, [&] { BENCH_OK(run_blend_cuda(stream, frames, blurred, masks, output)); });
  const float total_ms = time_ms(stream, iterations, [&] {
    BENCH_OK(run_blur_cuda(stream, frames, blurred, blur));
    BENCH_OK(run_blend_cuda(stream, frames, blurred, masks, output));
  });
  const float fused_ms = time_ms(
      stream, iterations, [&] { BENCH_OK(run_blur_composite_cuda(stream, frames, masks, fused, blur)); });
  int worst = 0;
  for (int i = 0; i < batch; ++i)
    worst = std::max(worst, max_difference(fused.images[i], output.images[i], 3));
  // Pitched copies move every frame once, image by image, as the ops see them.
  const float copy2d_ms = time_ms(stream, iterations, [&] {
    for (int i = 0; i < batch; ++i) {
      const ImageView& src = frames.images[i];
      const ImageView& dst = output.images[i];
      BENCH_CHECK(cudaMemcpy2DAsync(dst.planes[0].data, dst.planes[0].pitch, src.planes[0].data,
                                    src.planes[0].pitch, static_cast<std::size_t>(kWidth) * 3, kHeight,
                                    cudaMemcpyDeviceToDevice, stream));
    }
  });
  // One flat copy of the same bytes: what the memory system does at its best.
  void* flat_src = nullptr;
  void* flat_dst = nullptr;
  const auto flat_bytes = static_cast<std::size_t>(frame_bytes);
  BENCH_CHECK(cudaMalloc(&flat_src, flat_bytes));
  BENCH_CHECK(cudaMalloc(&flat_dst, flat_bytes));
  const float flat_ms = time_ms(stream, iterations, [&] {
    BENCH_CHECK(cudaMemcpyAsync(flat_dst, flat_src, flat_bytes, cudaMemcpyDeviceToDevice, stream));
  });
  const double copy2d_gbs = 2.0 * frame_bytes / (copy2d_ms * 1e6);
  const double flat_gbs = 2.0 * frame_bytes / (flat_ms * 1e6);
  const double copy_gbs = std::max(copy2d_gbs, flat_gbs);
  const double minimum_bytes = frame_bytes + mask_bytes + frame_bytes;
  const double touched_bytes = (frame_bytes + frame_bytes) + (2.0 * frame_bytes + mask_bytes + frame_bytes);
  const double minimum_gbs = minimum_bytes / (total_ms * 1e6);
  const double touched_gbs = touched_bytes / (total_ms * 1e6);
  const double fused_gbs = minimum_bytes / (fused_ms * 1e6);
  std::printf("blur %dx%d + blend, %d x %dx%d RGB8, %d iterations, %s mask, coverage %.0f%%\n", kernel_size,
              kernel_size, batch, kWidth, kHeight, iterations, mask_name.c_str(), 100.0 * coverage);
  std::printf("  d2d copy 2-D   %8.3f ms  %7.1f GB/s (8 pitched cudaMemcpy2DAsync, read + written)\n",
              copy2d_ms, copy2d_gbs);
  std::printf("  d2d copy flat  %8.3f ms  %7.1f GB/s (1 cudaMemcpyAsync, read + written)\n", flat_ms,
              flat_gbs);
  std::printf("  copy baseline  %s, %.1f GB/s\n", flat_gbs >= copy2d_gbs ? "flat" : "2-D", copy_gbs);
  std::printf(
      "  fused          %8.4f ms  %7.1f GB/s of %.1f MB minimum bytes  ratio to copy %.3f (target >= "
      "0.600)\n",
      fused_ms, fused_gbs, minimum_bytes / 1e6, fused_gbs / copy_gbs);
  std::printf("  separate path:\n");
  std::printf("    blur         %8.3f ms  %7.1f GB/s (frame read + blurred written)\n", blur_ms,
              2.0 * frame_bytes / (blur_ms * 1e6));
  std::printf("    blend        %8.3f ms  %7.1f GB/s (frame, blurred, mask read + output written)\n",
              blend_ms, (3.0 * frame_bytes + mask_bytes) / (blend_ms * 1e6));
  std::printf("    blur + blend %8.3f ms\n", total_ms);
  std::printf("    minimum bytes %7.1f GB/s  ratio to copy %.2f\n", minimum_gbs, minimum_gbs / copy_gbs);
  std::printf("    touched bytes %7.1f MB  %7.1f GB/s  ratio to copy %.2f\n", touched_bytes / 1e6,
              touched_gbs, touched_gbs / copy_gbs);
  std::printf("  max |fused - separate| = %d (expected <= 1)\n", worst);
  BENCH_CHECK(cudaFree(flat_src));
  BENCH_CHECK(cudaFree(flat_dst));
  for (ImageBatch* b : {&frames, &blurred, &masks, &output, &fused})
    for (ImageView& v : b->images) BENCH_CHECK(cudaFree(v.planes[0].data));
  BENCH_CHECK(cudaStreamDestroy(stream));
  return worst <= 1 ? 0 : 1;
}
