// Thread-per-pixel joint bilateral filter: each output pixel is the FOVEA_HD function the CPU
// reference uses; neighboring threads read overlapping windows, which the L1 cache serves.
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

__global__ void joint_bilateral_kernel(const __grid_constant__ BilateralLaunch launch) {
  const detail::BilateralJob& job = launch.jobs[blockIdx.z];
  const int x = blockIdx.x * kBlockWidth + threadIdx.x;
  const int y = blockIdx.y * kBlockHeight + threadIdx.y;
  if (x >= job.width || y >= job.height) return;
  job.out[y * job.out_pitch + x] = detail::joint_bilateral_pixel(job, launch.kernel, x, y);
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
