// Compositing is one pass over bytes: each thread computes one byte of a row from the same
// FOVEA_HD function the CPU reference uses, so neighboring threads touch neighboring bytes.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/composite.h"

namespace fovea::image {

namespace {

// 16 planes per launch keep the launch parameters (~1.7 KiB) under the 4 KiB kernel-argument limit.
constexpr int kJobsPerLaunch = 16;
constexpr int kThreads = 256;
// Grid rows per launch; taller images loop (CUDA allows 65535 blocks in y).
constexpr int kMaxGridRows = 65535;

struct CompositeLaunch {
  detail::CompositeJob jobs[kJobsPerLaunch];
  float alpha;
  bool blend;
};

__global__ void __launch_bounds__(kThreads) composite_kernel(const __grid_constant__ CompositeLaunch launch) {
  const detail::CompositeJob& job = launch.jobs[blockIdx.z];
  const int e = blockIdx.x * kThreads + threadIdx.x;
  if (e >= job.elements) return;
  for (int row = blockIdx.y; row < job.rows; row += gridDim.y) {
    job.out[row * job.out_pitch + e] = launch.blend ? detail::blend_element(job, e, row)
                                                    : detail::overlay_element(job, launch.alpha, e, row);
  }
}

Status launch(cudaStream_t stream, const CompositeLaunch& args, int num_jobs) {
  int max_elements = 0;
  int max_rows = 0;
  for (int j = 0; j < num_jobs; ++j) {
    max_elements = std::max(max_elements, args.jobs[j].elements);
    max_rows = std::max(max_rows, args.jobs[j].rows);
  }
  const dim3 grid((max_elements + kThreads - 1) / kThreads, std::min(max_rows, kMaxGridRows), num_jobs);
  composite_kernel<<<grid, kThreads, 0, stream>>>(args);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status run_jobs_cuda(cudaStream_t stream, const ImageBatch& a, const ImageBatch* b, const ImageBatch& mask,
                     const ImageBatch& output, const OverlayParams& params) {
  CompositeLaunch args{};
  args.alpha = params.alpha;
  args.blend = b != nullptr;
  int num_jobs = 0;
  for (int i = 0; i < a.size(); ++i) {
    if (num_jobs + detail::kMaxCompositePlanes > kJobsPerLaunch) {
      FOVEA_TRY(launch(stream, args, num_jobs));
      num_jobs = 0;
    }
    num_jobs += detail::composite_jobs(a, b, mask, output, i, params, args.jobs + num_jobs);
  }
  return launch(stream, args, num_jobs);
}

}  // namespace

Status run_blend_cuda(cudaStream_t stream, const ImageBatch& foreground, const ImageBatch& background,
                      const ImageBatch& mask, const ImageBatch& output) {
  FOVEA_NVTX_RANGE("blend");
  FOVEA_TRY(detail::check_blend(foreground, background, mask, &output));
  return run_jobs_cuda(stream, foreground, &background, mask, output, OverlayParams{});
}

Status run_overlay_cuda(cudaStream_t stream, const ImageBatch& image, const ImageBatch& mask,
                        const ImageBatch& output, const OverlayParams& params) {
  FOVEA_NVTX_RANGE("overlay");
  FOVEA_TRY(detail::check_overlay(image, mask, &output, params));
  return run_jobs_cuda(stream, image, nullptr, mask, output, params);
}

}  // namespace fovea::image
