// Color conversion on the device: a batch of NV12 frames (1080p x 8 by default) to RGB8, and the
// encode direction RGB8 -> NV12, in GB/s (bytes read plus written) against a device-to-device
// cudaMemcpy that moves the same number of bytes, measured in the same run with CUDA events.
//
//   color_bench [--batch 8] [--width 1920] [--height 1080] [--iterations 200]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "image/color_convert.h"

namespace fovea::image {
namespace {

struct Options {
  int batch = 8;
  int width = 1920;
  int height = 1080;
  int iterations = 200;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int value = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch") == 0) options.batch = value;
    if (std::strcmp(argv[i], "--width") == 0) options.width = value;
    if (std::strcmp(argv[i], "--height") == 0) options.height = value;
    if (std::strcmp(argv[i], "--iterations") == 0) options.iterations = value;
  }
  return options;
}

// Device allocations, freed on destruction.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() {
    for (void* p : allocations_) cudaFree(p);
  }
  // Filled with a constant: the timing should not depend on uninitialized memory.
  Result<void*> allocate(std::size_t bytes) {
    void* data = nullptr;
    FOVEA_CUDA_TRY(cudaMalloc(&data, bytes));
    allocations_.push_back(data);
    FOVEA_CUDA_TRY(cudaMemset(data, 0x5a, bytes));
    return data;
  }

 private:
  std::vector<void*> allocations_;
};

// `count` device images of one format and size, each in its own allocation.
Result<ImageBatch> allocate_batch(DeviceMemory& memory, PixelFormat format, int width, int height,
                                  int count) {
  FOVEA_ASSIGN_OR_RETURN(const ImageAllocation plan, plan_image_allocation(format, width, height));
  ImageBatch batch;
  for (int i = 0; i < count; ++i) {
    FOVEA_ASSIGN_OR_RETURN(void* data, memory.allocate(plan.total_bytes));
    batch.images.push_back(image_view_in(data, plan, format, width, height, MemoryKind::kDevice));
  }
  return batch;
}

// Payload bytes (no pitch padding) of one image.
std::size_t image_bytes(PixelFormat format, int width, int height) {
  auto layout = format_layout(format, width, height);
  std::size_t bytes = 0;
  for (int p = 0; p < layout->num_planes; ++p) {
    bytes += static_cast<std::size_t>(layout->planes[p].width_bytes) *
             static_cast<std::size_t>(layout->planes[p].height);
  }
  return bytes;
}

// Milliseconds per call of `body` (after warm-up), timed with events on `stream`.
template <typename Body>
Result<float> time_ms(cudaStream_t stream, int iterations, Body&& body) {
  // 10 untimed calls load the kernels and warm the clocks and caches.
  for (int i = 0; i < 10; ++i) FOVEA_TRY(body());
  FOVEA_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create(true));
  FOVEA_TRY(start.record(stream));
  for (int i = 0; i < iterations; ++i) FOVEA_TRY(body());
  FOVEA_TRY(stop.record(stream));
  FOVEA_TRY(stop.synchronize());
  FOVEA_ASSIGN_OR_RETURN(const float total, stop.elapsed_ms_since(start));
  return total / static_cast<float>(iterations);
}

// Times input_format -> output_format over the batch and a copy of the same traffic; prints a line.
Status bench_conversion(cudaStream_t stream, const Options& o, PixelFormat input_format,
                        PixelFormat output_format) {
  DeviceMemory memory;
  FOVEA_ASSIGN_OR_RETURN(const ImageBatch input,
                         allocate_batch(memory, input_format, o.width, o.height, o.batch));
  FOVEA_ASSIGN_OR_RETURN(const ImageBatch output,
                         allocate_batch(memory, output_format, o.width, o.height, o.batch));
  const std::size_t moved =
      static_cast<std::size_t>(o.batch) *
      (image_bytes(input_format, o.width, o.height) + image_bytes(output_format, o.width, o.height));
  // A copy of moved / 2 bytes reads and writes `moved` bytes in all.
  FOVEA_ASSIGN_OR_RETURN(void* d_copy_src, memory.allocate(moved / 2));
  FOVEA_ASSIGN_OR_RETURN(void* d_copy_dst, memory.allocate(moved / 2));
  const ColorConvertParams params{output_format, ColorMatrix::kBt709, ColorRange::kLimited};
  FOVEA_ASSIGN_OR_RETURN(const float convert_ms, time_ms(stream, o.iterations, [&] {
                           return run_color_convert_cuda(stream, input, output, params);
                         }));
  FOVEA_ASSIGN_OR_RETURN(
      const float copy_ms, time_ms(stream, o.iterations, [&]() -> Status {
        FOVEA_CUDA_TRY(cudaMemcpyAsync(d_copy_dst, d_copy_src, moved / 2, cudaMemcpyDeviceToDevice, stream));
        return Status::ok();
      }));
  const double convert_gbps = static_cast<double>(moved) / (convert_ms * 1e6);
  const double copy_gbps = static_cast<double>(moved) / (copy_ms * 1e6);
  std::printf(
      "%-8s -> %-6s batch %d %dx%d: %.3f ms, %.1f GB/s; copy of the same bytes %.3f ms, %.1f GB/s; "
      "ratio %.2f\n",
      std::string(pixel_format_name(input_format)).c_str(),
      std::string(pixel_format_name(output_format)).c_str(), o.batch, o.width, o.height,
      static_cast<double>(convert_ms), convert_gbps, static_cast<double>(copy_ms), copy_gbps,
      convert_gbps / copy_gbps);
  return Status::ok();
}

Status run(const Options& options) {
  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  FOVEA_TRY(bench_conversion(stream.get(), options, PixelFormat::kNV12, PixelFormat::kRGB8));
  FOVEA_TRY(bench_conversion(stream.get(), options, PixelFormat::kRGB8, PixelFormat::kNV12));
  return Status::ok();
}

}  // namespace
}  // namespace fovea::image

int main(int argc, char** argv) {
  const fovea::Status status = fovea::image::run(fovea::image::parse_options(argc, argv));
  if (!status.is_ok()) {
    std::fprintf(stderr, "color_bench: %s\n", status.to_string().c_str());
    return 1;
  }
  return 0;
}
