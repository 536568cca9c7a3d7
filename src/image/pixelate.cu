// Pixelation on the device: one warp per cell (lanes stride over the cell's samples, the sums meet in
// a shuffle reduction, then the lanes write the means back), blockIdx.y = rectangle. The grid, spans
// and rounding are the FOVEA_HD functions of pixelate.h, and sums are exact integers, so the result
// is the CPU reference's bit for bit. Rectangles that share a sample go to separate launches, which
// the stream orders.
#include <algorithm>
#include <string>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/pixelate.h"

namespace fovea::image {

namespace {

constexpr int kWarpSize = 32;
// 4 warps (cells) per block: enough resident warps to hide memory latency on small cells without
// leaving most of a block idle on a rectangle of a few cells.
constexpr int kCellsPerBlock = 4;
constexpr int kThreads = kCellsPerBlock * kWarpSize;
// CUDA's limit on gridDim.y, the rectangles of one launch.
constexpr int kMaxRectsPerLaunch = 65535;
// 64 images of 48 bytes keep the launch parameters under the classic 4 KiB limit; rectangles of
// images beyond them wait for the next launch.
constexpr int kImagesPerLaunch = 64;

struct PixelateImage {
  std::uint8_t* plane0 = nullptr;  // RGB/BGR or Y
  std::size_t pitch0 = 0;
  std::uint8_t* plane1 = nullptr;  // NV12 UV
  std::size_t pitch1 = 0;
  int width = 0;
  int height = 0;
  bool nv12 = false;
};

struct PixelateLaunch {
  PixelateImage images[kImagesPerLaunch];
  int first_image;
  int num_images;
  const PixelateRect* rects;
  int first_rect;
  int cell;
};
static_assert(sizeof(PixelateLaunch) <= 4096, "kernel parameters above 4 KiB need a newer driver");

__device__ unsigned warp_sum(unsigned v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The warp's share of pixelate_span (pixelate_cpu.cpp): every lane sums a strided subset, the warp
// adds the sums, every lane writes its subset.
__device__ void pixelate_span_warp(std::uint8_t* plane, std::size_t pitch, const detail::CellSpan& span,
                                   int channels, int lane) {
  const int count = span.count();
  if (count <= 0) return;  // the same for the whole warp
  const int width = span.x_end - span.x_begin;
  unsigned sums[3] = {};
  for (int i = lane; i < count; i += kWarpSize) {
    const std::uint8_t* p =
        plane + (span.y_begin + i / width) * pitch + (span.x_begin + i % width) * channels;
    for (int c = 0; c < channels; ++c) sums[c] += p[c];
  }
  std::uint8_t means[3];
  for (int c = 0; c < channels; ++c) means[c] = detail::rounded_mean(warp_sum(sums[c]), count);
  for (int i = lane; i < count; i += kWarpSize) {
    std::uint8_t* p = plane + (span.y_begin + i / width) * pitch + (span.x_begin + i % width) * channels;
    for (int c = 0; c < channels; ++c) p[c] = means[c];
  }
}

__global__ void __launch_bounds__(kThreads) pixelate_kernel(const __grid_constant__ PixelateLaunch launch) {
  const PixelateRect r = launch.rects[launch.first_rect + blockIdx.y];
  const int image = r.image - launch.first_image;
  if (image < 0 || image >= launch.num_images) return;  // another launch's image
  const PixelateImage& view = launch.images[image];
  const detail::CellGrid g = detail::cell_grid(r, launch.cell, view.width, view.height);
  const int cell = blockIdx.x * kCellsPerBlock + threadIdx.x / kWarpSize;
  if (cell >= g.cols * g.rows) return;  // whole warps leave together
  const int lane = threadIdx.x % kWarpSize;
  const detail::CellSpan pixels = detail::cell_pixels(g, cell);
  pixelate_span_warp(view.plane0, view.pitch0, pixels, view.nv12 ? 1 : 3, lane);
  if (view.nv12) pixelate_span_warp(view.plane1, view.pitch1, detail::cell_chroma(g, pixels), 2, lane);
}

PixelateImage pixelate_image(const ImageView& view) {
  return PixelateImage{static_cast<std::uint8_t*>(view.planes[0].data),
                       view.planes[0].pitch,
                       static_cast<std::uint8_t*>(view.planes[1].data),
                       view.planes[1].pitch,
                       view.width,
                       view.height,
                       view.format == PixelFormat::kNV12};
}

// The cells of rectangle r when its image is among the launch's, else 0.
int launch_cells(const PixelateLaunch& launch, const PixelateRect& r) {
  const int image = r.image - launch.first_image;
  if (image < 0 || image >= launch.num_images) return 0;
  const detail::CellGrid g =
      detail::cell_grid(r, launch.cell, launch.images[image].width, launch.images[image].height);
  return g.cols * g.rows;
}

// Launches rectangles [begin, end) of the list, which share no sample: one launch per chunk of
// images and chunk of rectangles that has cells to pixelate.
Status launch_run(cudaStream_t stream, const ImageBatch& images, std::span<const PixelateRect> rects,
                  PixelateLaunch& launch, int begin, int end) {
  for (int first_image = 0; first_image < images.size(); first_image += kImagesPerLaunch) {
    launch.first_image = first_image;
    launch.num_images = std::min(kImagesPerLaunch, images.size() - first_image);
    for (int i = 0; i < launch.num_images; ++i)
      launch.images[i] = pixelate_image(images.images[first_image + i]);
    for (int first = begin; first < end; first += kMaxRectsPerLaunch) {
      const int count = std::min(kMaxRectsPerLaunch, end - first);
      int max_cells = 0;
      for (int i = first; i < first + count; ++i) {
        max_cells = std::max(max_cells, launch_cells(launch, rects[static_cast<std::size_t>(i)]));
      }
      if (max_cells == 0) continue;
      launch.first_rect = first;
      const dim3 grid((max_cells + kCellsPerBlock - 1) / kCellsPerBlock, count);
      pixelate_kernel<<<grid, kThreads, 0, stream>>>(launch);
      FOVEA_CUDA_TRY_LAUNCH();
    }
  }
  return Status::ok();
}

}  // namespace

Status run_pixelate_cuda(cudaStream_t stream, const ImageBatch& images, std::span<const PixelateRect> rects,
                         const PixelateParams& params, void* d_buffer, std::size_t buffer_bytes) {
  FOVEA_NVTX_RANGE("pixelate");
  FOVEA_TRY(detail::check_pixelate(images, rects, params));
  if (!batch_on_device(images)) {
    return make_error(StatusCode::kInvalidArgument, "run_pixelate_cuda: the images are not in device memory");
  }
  if (rects.empty()) return Status::ok();
  if (d_buffer == nullptr || buffer_bytes < rects.size_bytes()) {
    return make_error(StatusCode::kInvalidArgument,
                      "pixelate: the rectangle buffer is smaller than the plan's ",
                      std::to_string(rects.size_bytes()), " bytes");
  }
  FOVEA_CUDA_TRY(cudaMemcpyAsync(d_buffer, rects.data(), rects.size_bytes(), cudaMemcpyHostToDevice, stream));
  PixelateLaunch launch{};
  launch.rects = static_cast<const PixelateRect*>(d_buffer);
  launch.cell = params.cell;
  // A run grows until its next rectangle shares a sample with one already in it.
  int begin = 0;
  for (int end = 0; end < static_cast<int>(rects.size()); ++end) {
    for (int i = begin; i < end; ++i) {
      if (detail::pixelate_rects_conflict(images, rects[static_cast<std::size_t>(i)],
                                          rects[static_cast<std::size_t>(end)])) {
        FOVEA_TRY(launch_run(stream, images, rects, launch, begin, end));
        begin = end;
        break;
      }
    }
  }
  return launch_run(stream, images, rects, launch, begin, static_cast<int>(rects.size()));
}

}  // namespace fovea::image
