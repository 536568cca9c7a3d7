// The mosaic on the device: one thread per destination sample, blockIdx.z = job (one plane of one
// tile, or of a fill), jobs passed by value in a __grid_constant__ struct so a launch allocates
// nothing. The per-sample arithmetic is tile_sample (resize_pixel), the CPU reference's.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/tile.h"

namespace fovea::image {

namespace {

// 16 jobs of 224 bytes (8 frames) keep the launch parameters under the classic 4 KiB limit.
constexpr int kJobsPerLaunch = 16;
// 32 x 8 threads: a warp covers 32 consecutive samples of a row (coalesced stores).
constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

struct TileLaunch {
  detail::TileJob jobs[kJobsPerLaunch];
};
static_assert(sizeof(TileLaunch) <= 4096, "kernel parameters above 4 KiB need a newer driver");

__global__ void tile_kernel(const __grid_constant__ TileLaunch launch) {
  const detail::TileJob& job = launch.jobs[blockIdx.z];
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= job.args.dst_width || y >= job.args.dst_height) return;
  detail::tile_sample(job, x, y);
}

// Collects jobs and launches them kJobsPerLaunch at a time.
class JobLauncher {
 public:
  explicit JobLauncher(cudaStream_t stream) : stream_(stream) {}
  JobLauncher(const JobLauncher&) = delete;
  JobLauncher& operator=(const JobLauncher&) = delete;

  Status add(const detail::TileJob& job) {
    if (count_ == kJobsPerLaunch) FOVEA_TRY(flush());
    launch_.jobs[count_++] = job;
    return Status::ok();
  }

  Status flush() {
    if (count_ == 0) return Status::ok();
    int max_width = 0;
    int max_height = 0;
    for (int i = 0; i < count_; ++i) {
      max_width = std::max(max_width, launch_.jobs[i].args.dst_width);
      max_height = std::max(max_height, launch_.jobs[i].args.dst_height);
    }
    const dim3 grid((max_width + kBlockX - 1) / kBlockX, (max_height + kBlockY - 1) / kBlockY,
                    static_cast<unsigned>(count_));
    tile_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream_>>>(launch_);
    count_ = 0;
    FOVEA_CUDA_TRY_LAUNCH();
    return Status::ok();
  }

 private:
  cudaStream_t stream_;
  TileLaunch launch_{};
  int count_ = 0;
};

}  // namespace

Status run_tile_cuda(cudaStream_t stream, const ImageBatch& frames, std::span<const Roi> destinations,
                     const ImageView& canvas) {
  FOVEA_NVTX_RANGE("tile");
  FOVEA_TRY(plan_tile(frames, destinations, canvas));
  if (!batch_on_device(frames)) {
    return make_error(StatusCode::kInvalidArgument, "run_tile_cuda: the images are not in device memory");
  }
  JobLauncher launcher(stream);
  for (int i = 0; i < frames.size(); ++i) {
    for (int plane = 0; plane < 2; ++plane) {
      FOVEA_TRY(launcher.add(detail::tile_job(frames.images[static_cast<std::size_t>(i)],
                                              destinations[static_cast<std::size_t>(i)], canvas, plane)));
    }
  }
  return launcher.flush();
}

Status fill_canvas_cuda(cudaStream_t stream, const ImageView& canvas, Nv12Color color) {
  FOVEA_NVTX_RANGE("fill canvas");
  FOVEA_TRY(detail::check_canvas(canvas));
  if (canvas.memory != MemoryKind::kDevice) {
    return make_error(StatusCode::kInvalidArgument, "fill_canvas_cuda: the canvas is not in device memory");
  }
  JobLauncher launcher(stream);
  for (int plane = 0; plane < 2; ++plane) FOVEA_TRY(launcher.add(detail::fill_job(canvas, plane, color)));
  return launcher.flush();
}

}  // namespace fovea::image
