// Background blur as the segmentation flow runs it: a Gaussian blur of each frame, then a blend of
// the sharp frame over the blurred one by the person mask. Batch of 8 1080p RGB8 frames on the
// device, timed with CUDA events, compared with cudaMemcpyDeviceToDevice in the same run.
//
//   blur_composite_bench [kernel_size=15] [batch=8] [iterations=100]
//
// The default 15x15 kernel (sigma 2.6 from OpenCV's formula) is a moderate background blur at
// 1080p: wide enough to wash out background texture, and the size the compute cost is quoted at.
// Wider kernels cost compute, not bytes; pass e.g. 31 to see how the ratio falls.
//
// Bytes: "minimum" counts what any implementation must touch (frame read, mask read, output
// written); "touched" adds what this two-op sequence also moves (the blur reads the frame and writes
// the blurred frame, which the blend reads back). The blur's separable intermediate stays in
// shared memory, so it adds no bytes.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime_api.h>

#include "image/blur.h"
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
  cudaStream_t stream;
  BENCH_CHECK(cudaStreamCreate(&stream));
  ImageBatch frames, blurred, masks, output;
  for (int i = 0; i < batch; ++i) {
    frames.images.push_back(device_image(PixelFormat::kRGB8, 3));
    blurred.images.push_back(device_image(PixelFormat::kRGB8, 3));
    masks.images.push_back(device_image(PixelFormat::kGRAY8, 1));
    output.images.push_back(device_image(PixelFormat::kRGB8, 3));
  }
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
  // The copy moves every frame once, image by image (pitched 2-D copies, as the ops see them).
  const float copy_ms = time_ms(stream, iterations, [&] {
    for (int i = 0; i < batch; ++i) {
      const ImageView& src = frames.images[i];
      const ImageView& dst = output.images[i];
      BENCH_CHECK(cudaMemcpy2DAsync(dst.planes[0].data, dst.planes[0].pitch, src.planes[0].data,
                                    src.planes[0].pitch, static_cast<std::size_t>(kWidth) * 3, kHeight,
                                    cudaMemcpyDeviceToDevice, stream));
    }
  });
  const double copy_gbs = 2.0 * frame_bytes / (copy_ms * 1e6);
  const double minimum_bytes = frame_bytes + mask_bytes + frame_bytes;
  const double touched_bytes = (frame_bytes + frame_bytes) + (2.0 * frame_bytes + mask_bytes + frame_bytes);
  const double minimum_gbs = minimum_bytes / (total_ms * 1e6);
  const double touched_gbs = touched_bytes / (total_ms * 1e6);
  std::printf("blur %dx%d + blend, %d x %dx%d RGB8, %d iterations\n", kernel_size, kernel_size, batch, kWidth,
              kHeight, iterations);
  std::printf("  blur           %8.3f ms  %7.1f GB/s (frame read + blurred written)\n", blur_ms,
              2.0 * frame_bytes / (blur_ms * 1e6));
  std::printf("  blend          %8.3f ms  %7.1f GB/s (frame, blurred, mask read + output written)\n",
              blend_ms, (3.0 * frame_bytes + mask_bytes) / (blend_ms * 1e6));
  std::printf("  blur + blend   %8.3f ms\n", total_ms);
  std::printf("  d2d copy       %8.3f ms  %7.1f GB/s (read + written)\n", copy_ms, copy_gbs);
  std::printf("  minimum bytes  %7.1f MB  %7.1f GB/s  ratio to copy %.2f (target >= 0.60)\n",
              minimum_bytes / 1e6, minimum_gbs, minimum_gbs / copy_gbs);
  std::printf("  touched bytes  %7.1f MB  %7.1f GB/s  ratio to copy %.2f\n", touched_bytes / 1e6, touched_gbs,
              touched_gbs / copy_gbs);
  for (ImageBatch* b : {&frames, &blurred, &masks, &output})
    for (ImageView& v : b->images) BENCH_CHECK(cudaFree(v.planes[0].data));
  BENCH_CHECK(cudaStreamDestroy(stream));
  return 0;
}
