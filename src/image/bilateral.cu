// Thread-per-pixel joint bilateral filter: each output pixel is the FOVEA_HD function the CPU
// reference uses; neighboring threads read overlapping windows, which the L1 cache serves. A block
// over which the mask is constant (with the filter's radius around it) skips the filter at once.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/bilateral.h"

namespace fovea::image {

namespace {

// 16 images per launch keep the launch parameters (~1 KiB) far under the 4 KiB limit.
constexpr int kJobsPerLaunch = 16;
// 32x8 threads: a warp spans a row segment, so window reads of a warp share cache lines.
constexpr int kBlockWidth = 32;
constexpr int kBlockHeight = 8;

struct BilateralLaunch {
  detail::BilateralJob jobs[kJobsPerLaunch];
  detail::BilateralKernel kernel;
};

// The mask's value when it is the same over the block's pixels and `radius` around them (read
// through the border rule, as the pixels' discs are), else -1. Then every disc of the block is
// constant and its pixels keep that value exactly (constant_mask_value): one read per window pixel
// for the whole block instead of a disc per pixel. Most blocks of a segmentation mask lie away
// from its edges. Every thread of the block must call it.
__device__ int block_constant_value(const detail::BilateralJob& job, const detail::BilateralKernel& k) {
  const int left = blockIdx.x * kBlockWidth, top = blockIdx.y * kBlockHeight;
  const int right = min(left + kBlockWidth, job.width), bottom = min(top + kBlockHeight, job.height);
  const int window_width = right - left + 2 * k.radius;
  const int window_pixels = window_width * (bottom - top + 2 * k.radius);
  const int value = job.mask[top * job.mask_pitch + left];
  bool same = true;
  for (int i = threadIdx.y * kBlockWidth + threadIdx.x; same && i < window_pixels;
       i += kBlockWidth * kBlockHeight) {
    const int wx = border_index(left - k.radius + i % window_width, job.width, k.border);
    const int wy = border_index(top - k.radius + i / window_width, job.height, k.border);
    same = job.mask[wy * job.mask_pitch + wx] == value;
  }
  return __syncthreads_and(same) ? value : -1;
}

__global__ void joint_bilateral_kernel(const __grid_constant__ BilateralLaunch launch) {
  const detail::BilateralJob& job = launch.jobs[blockIdx.z];
  const int left = blockIdx.x * kBlockWidth, top = blockIdx.y * kBlockHeight;
  if (left >= job.width || top >= job.height) return;  // the whole block: a smaller image of the batch
  const int constant = block_constant_value(job, launch.kernel);
  const int x = left + threadIdx.x, y = top + threadIdx.y;
  if (x >= job.width || y >= job.height) return;
  job.out[y * job.out_pitch + x] = constant >= 0 ? static_cast<std::uint8_t>(constant)
                                                 : detail::joint_bilateral_pixel(job, launch.kernel, x, y);
}

Status launch(cudaStream_t stream, const BilateralLaunch& args, int num_jobs) {
  int max_width = 0;
  int max_height = 0;
  for (int j = 0; j < num_jobs; ++j) {
    max_width = std::max(max_width, args.jobs[j].width);
    max_height = std::max(max_height, args.jobs[j].height);
  }
  const dim3 grid((max_width + kBlockWidth - 1) / kBlockWidth, (max_height + kBlockHeight - 1) / kBlockHeight,
                  num_jobs);
  joint_bilateral_kernel<<<grid, dim3(kBlockWidth, kBlockHeight), 0, stream>>>(args);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

Status run_joint_bilateral_cuda(cudaStream_t stream, const ImageBatch& mask, const ImageBatch& guide,
                                const ImageBatch& output, const BilateralParams& params) {
  FOVEA_NVTX_RANGE("joint_bilateral");
  FOVEA_TRY(detail::check_bilateral(mask, guide, &output, params));
  BilateralLaunch args{};
  args.kernel = detail::bilateral_kernel(params);
  int num_jobs = 0;
  for (int i = 0; i < mask.size(); ++i) {
    if (num_jobs == kJobsPerLaunch) {
      FOVEA_TRY(launch(stream, args, num_jobs));
      num_jobs = 0;
    }
    args.jobs[num_jobs++] = detail::bilateral_job(mask, guide, output, i);
  }
  return launch(stream, args, num_jobs);
}

}  // namespace fovea::image
