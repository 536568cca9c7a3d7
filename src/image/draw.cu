// OSD in one launch per 16 images: each block owns a 32x8 tile of one image, culls its image's part
// of the command list against the tile (a warp ballot per 32 commands keeps list order), and each
// thread applies
// the surviving commands to its pixel in order with the FOVEA_HD coverage functions the CPU
// reference uses. Tiles no command reaches only read the list; pixels no command covers are never
// read or written.
#include <algorithm>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/draw.h"

namespace fovea::image {

namespace {

// 16 images per launch keep the launch parameters (~0.8 KiB) far under the 4 KiB limit.
constexpr int kImagesPerLaunch = 16;
constexpr int kTileWidth = 32;
constexpr int kTileHeight = 8;
constexpr int kThreads = kTileWidth * kTileHeight;
constexpr int kWarps = kThreads / 32;

struct DrawImage {
  std::uint8_t* plane0 = nullptr;  // RGB/BGR or Y
  std::size_t pitch0 = 0;
  std::uint8_t* plane1 = nullptr;  // NV12 UV
  std::size_t pitch1 = 0;
  int width = 0;
  int height = 0;
  PixelFormat format = PixelFormat::kRGB8;
  // The span of the command list holding every command of this image (the OSD lists them image by
  // image): a tile scans only it, not the whole batch's list.
  int command_begin = 0;
  int command_end = 0;
};

struct DrawLaunch {
  DrawImage images[kImagesPerLaunch];
  int first_image;
  const std::uint8_t* font;
  const DrawCommand* commands;
  DrawParams params;
};

__device__ bool touches_tile(const DrawCommand& c, int image, const DrawImage& view, int x0, int y0) {
  if (c.image != image) return false;
  const detail::PixelBox b = detail::clip_box(detail::command_box(c), view.width, view.height);
  return b.x_begin < x0 + kTileWidth && b.x_end > x0 && b.y_begin < y0 + kTileHeight && b.y_end > y0 &&
         b.x_begin < b.x_end && b.y_begin < b.y_end;
}

__global__ void __launch_bounds__(kThreads) draw_kernel(const __grid_constant__ DrawLaunch launch) {
  const DrawImage& view = launch.images[blockIdx.z];
  const int image = launch.first_image + static_cast<int>(blockIdx.z);
  const int x0 = blockIdx.x * kTileWidth;
  const int y0 = blockIdx.y * kTileHeight;
  if (x0 >= view.width || y0 >= view.height) return;  // the whole block leaves together
  const int x = x0 + threadIdx.x;
  const int y = y0 + threadIdx.y;
  const int tid = threadIdx.y * kTileWidth + threadIdx.x;
  const bool inside = x < view.width && y < view.height;
  const bool nv12 = view.format == PixelFormat::kNV12;
  const bool owns_chroma = nv12 && x % 2 == 0 && y % 2 == 0;
  const int channels = nv12 ? 1 : 3;
  std::uint8_t* pixel = inside ? view.plane0 + y * view.pitch0 + x * channels : nullptr;
  std::uint8_t* chroma = owns_chroma && inside ? view.plane1 + (y / 2) * view.pitch1 + x : nullptr;
  std::uint8_t value[3] = {};
  std::uint8_t uv[2] = {};
  bool loaded = false;

  __shared__ unsigned masks[kWarps];
  for (int base = view.command_begin; base < view.command_end; base += kThreads) {
    const int i = base + tid;
    const bool hit = i < view.command_end && touches_tile(launch.commands[i], image, view, x0, y0);
    const unsigned ballot = __ballot_sync(0xffffffffu, hit);
    if (threadIdx.x == 0) masks[threadIdx.y] = ballot;  // a warp is one tile row of 32 threads
    __syncthreads();
    for (int w = 0; w < kWarps && inside; ++w) {
      for (unsigned m = masks[w]; m != 0; m &= m - 1) {
        const DrawCommand& c = launch.commands[base + w * 32 + __ffs(m) - 1];
        const detail::Paint paint = detail::command_paint(c, launch.font, x, y);
        if (paint == detail::Paint::kNone) continue;
        if (!loaded) {
          for (int ch = 0; ch < channels; ++ch) value[ch] = pixel[ch];
          if (chroma != nullptr) uv[0] = chroma[0], uv[1] = chroma[1];
          loaded = true;
        }
        const bool fg = paint == detail::Paint::kColor;
        const detail::PaintColor col =
            detail::paint_color(fg ? c.color : c.background, view.format, launch.params);
        const float alpha = fg ? c.alpha : c.background_alpha;
        for (int ch = 0; ch < channels; ++ch) value[ch] = detail::paint_sample(value[ch], col.v[ch], alpha);
        if (chroma != nullptr) {
          for (int ch = 0; ch < 2; ++ch) uv[ch] = detail::paint_sample(uv[ch], col.v[1 + ch], alpha);
        }
      }
    }
    __syncthreads();  // masks is rewritten by the next chunk
  }
  if (!loaded) return;
  for (int ch = 0; ch < channels; ++ch) pixel[ch] = value[ch];
  if (chroma != nullptr) chroma[0] = uv[0], chroma[1] = uv[1];
}

DrawImage draw_image(const ImageView& view) {
  return DrawImage{static_cast<std::uint8_t*>(view.planes[0].data),
                   view.planes[0].pitch,
                   static_cast<std::uint8_t*>(view.planes[1].data),
                   view.planes[1].pitch,
                   view.width,
                   view.height,
                   view.format};
}

}  // namespace

Status run_draw_cuda(cudaStream_t stream, const ImageBatch& images, std::span<const DrawCommand> commands,
                     const DrawParams& params, void* d_buffer, std::size_t buffer_bytes) {
  FOVEA_NVTX_RANGE("draw");
  FOVEA_TRY(detail::check_draw(images, commands));
  if (commands.empty()) return Status::ok();
  const std::size_t needed = detail::kDrawFontBytes + commands.size() * sizeof(DrawCommand);
  if (d_buffer == nullptr || buffer_bytes < needed) {
    return make_error(StatusCode::kInvalidArgument, "draw: the command buffer is smaller than the plan's ",
                      std::to_string(needed), " bytes");
  }
  auto* buffer = static_cast<std::uint8_t*>(d_buffer);
  FOVEA_CUDA_TRY(
      cudaMemcpyAsync(buffer, &kBitmapFont[0][0], sizeof(kBitmapFont), cudaMemcpyHostToDevice, stream));
  FOVEA_CUDA_TRY(cudaMemcpyAsync(buffer + detail::kDrawFontBytes, commands.data(), commands.size_bytes(),
                                 cudaMemcpyHostToDevice, stream));
  DrawLaunch launch{};
  launch.font = buffer;
  launch.commands = reinterpret_cast<const DrawCommand*>(buffer + detail::kDrawFontBytes);
  launch.params = params;
  // Per image, the first and one past the last of its commands (an image without any: empty).
  std::vector<std::pair<int, int>> spans(static_cast<std::size_t>(images.size()), {0, 0});
  for (int i = static_cast<int>(commands.size()) - 1; i >= 0; --i) {
    auto& span = spans[static_cast<std::size_t>(commands[static_cast<std::size_t>(i)].image)];
    if (span.second == 0) span.second = i + 1;
    span.first = i;
  }
  for (int first = 0; first < images.size(); first += kImagesPerLaunch) {
    const int count = std::min(kImagesPerLaunch, images.size() - first);
    int max_width = 0;
    int max_height = 0;
    for (int i = 0; i < count; ++i) {
      launch.images[i] = draw_image(images.images[first + i]);
      launch.images[i].command_begin = spans[static_cast<std::size_t>(first + i)].first;
      launch.images[i].command_end = spans[static_cast<std::size_t>(first + i)].second;
      max_width = std::max(max_width, launch.images[i].width);
      max_height = std::max(max_height, launch.images[i].height);
    }
    launch.first_image = first;
    const dim3 grid((max_width + kTileWidth - 1) / kTileWidth, (max_height + kTileHeight - 1) / kTileHeight,
                    count);
    draw_kernel<<<grid, dim3(kTileWidth, kTileHeight), 0, stream>>>(launch);
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

}  // namespace fovea::image
