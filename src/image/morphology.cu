// Dilate/erode as two thread-per-pixel passes per iteration (rows into the workspace, columns into
// the output), each pixel computed by the FOVEA_HD window function the CPU reference uses.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/morphology.h"

namespace fovea::image {

namespace {

// 16 images per launch keep the launch parameters (~0.8 KiB) far under the 4 KiB limit.
constexpr int kJobsPerLaunch = 16;
// 32x8 threads: a warp spans a row segment, so both passes read and write coalesced rows.
constexpr int kBlockWidth = 32;
constexpr int kBlockHeight = 8;

struct MorphologyLaunch {
  detail::MorphologyJob jobs[kJobsPerLaunch];
  int size;
  bool dilate;
  bool from_output;  // later iterations read the previous iteration's output
};

template <bool kRows>
__global__ void morph_kernel(const __grid_constant__ MorphologyLaunch launch) {
  const detail::MorphologyJob& job = launch.jobs[blockIdx.z];
  const int x = blockIdx.x * kBlockWidth + threadIdx.x;
  const int y = blockIdx.y * kBlockHeight + threadIdx.y;
  if (x >= job.width || y >= job.height) return;
  if (kRows) {
    const std::uint8_t* src = launch.from_output ? job.dst : job.src;
    const std::size_t pitch = launch.from_output ? job.dst_pitch : job.src_pitch;
    job.work[y * job.width + x] =
        detail::morph_window(src + y * pitch, 1, x, job.width, launch.size, launch.dilate);
  } else {
    job.dst[y * job.dst_pitch + x] =
        detail::morph_window(job.work + x, job.width, y, job.height, launch.size, launch.dilate);
  }
}

Status launch_iteration(cudaStream_t stream, MorphologyLaunch& args, int num_jobs,
                        const MorphologyParams& params, bool from_output) {
  int max_width = 0;
  int max_height = 0;
  for (int j = 0; j < num_jobs; ++j) {
    max_width = std::max(max_width, args.jobs[j].width);
    max_height = std::max(max_height, args.jobs[j].height);
  }
  const dim3 block(kBlockWidth, kBlockHeight);
  const dim3 grid((max_width + kBlockWidth - 1) / kBlockWidth, (max_height + kBlockHeight - 1) / kBlockHeight,
                  num_jobs);
  args.from_output = from_output;
  args.size = params.element_width;
  morph_kernel<true><<<grid, block, 0, stream>>>(args);
  FOVEA_CUDA_TRY_LAUNCH();
  args.size = params.element_height;
  morph_kernel<false><<<grid, block, 0, stream>>>(args);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status launch_all(cudaStream_t stream, MorphologyLaunch& args, int num_jobs, const MorphologyParams& params) {
  for (int it = 0; it < params.iterations; ++it)
    FOVEA_TRY(launch_iteration(stream, args, num_jobs, params, it > 0));
  return Status::ok();
}

}  // namespace

Status run_morphology_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                           const MorphologyParams& params, void* d_workspace, std::size_t workspace_bytes) {
  FOVEA_NVTX_RANGE("morphology");
  FOVEA_TRY(detail::check_morphology(input, &output, params));
  std::size_t needed = 0;
  for (int i = 0; i < input.size(); ++i) needed += detail::morphology_work_bytes(input, i);
  if (d_workspace == nullptr || workspace_bytes < needed) {
    return make_error(StatusCode::kInvalidArgument, "morphology: the workspace is smaller than the plan's ",
                      std::to_string(needed), " bytes");
  }
  MorphologyLaunch args{};
  args.dilate = params.op == MorphologyOp::kDilate;
  auto* work = static_cast<std::uint8_t*>(d_workspace);
  int num_jobs = 0;
  for (int i = 0; i < input.size(); ++i) {
    if (num_jobs == kJobsPerLaunch) {
      FOVEA_TRY(launch_all(stream, args, num_jobs, params));
      num_jobs = 0;
    }
    args.jobs[num_jobs++] = detail::morphology_job(input, output, i, work);
    work += detail::morphology_work_bytes(input, i);
  }
  return launch_all(stream, args, num_jobs, params);
}

}  // namespace fovea::image
