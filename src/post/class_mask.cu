// Class masks on the GPU: one thread per mask pixel, the same per-pixel function as the reference.
#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "post/class_mask.h"

namespace fovea::post {

namespace {

// Images per launch: each one's map, mask and mapping travel in the kernel arguments (2 KiB of the
// 4 KiB allowed).
constexpr int kImagesPerLaunch = 32;
constexpr int kBlockX = 32;  // a warp along a row: coalesced mask writes
constexpr int kBlockY = 8;

struct MaskJob {
  MapSource map;
  std::uint8_t* mask;
  std::size_t mask_pitch;
  int width, height;
  MaskMapping mapping;
};

struct MaskJobs {
  MaskJob jobs[kImagesPerLaunch];
};

// __grid_constant__: the job is picked by blockIdx.z, and indexing a by-value parameter at run time
// copies the whole 2 KiB argument into each thread's local memory.
__global__ void class_mask_kernel(const __grid_constant__ MaskJobs jobs, ClassSet set,
                                  MaskInterpolation interpolation) {
  const MaskJob& job = jobs.jobs[blockIdx.z];
  const int x = blockIdx.x * kBlockX + threadIdx.x;
  const int y = blockIdx.y * kBlockY + threadIdx.y;
  if (x >= job.width || y >= job.height) return;
  job.mask[static_cast<std::size_t>(y) * job.mask_pitch + x] =
      mask_pixel(job.map, set, job.mapping, interpolation, x, y);
}

}  // namespace

Status run_class_mask_cuda(cudaStream_t stream, const image::ImageBatch& class_maps,
                           const ClassMaskParams& params, const image::ImageBatch& masks) {
  FOVEA_TRY(check_class_mask(class_maps, params, masks));
  if (!image::batch_on_device(masks)) {
    return make_error(StatusCode::kInvalidArgument, "class mask: the CUDA run needs device images");
  }
  const ClassSet set = make_class_set(params.classes);
  for (int first = 0; first < masks.size(); first += kImagesPerLaunch) {
    const int count = std::min(kImagesPerLaunch, masks.size() - first);
    MaskJobs jobs{};
    int max_width = 0, max_height = 0;
    for (int i = 0; i < count; ++i) {
      const auto n = static_cast<std::size_t>(first + i);
      const ImageView& map = class_maps.images[n];
      const ImageView& mask = masks.images[n];
      jobs.jobs[i] = MaskJob{MapSource{static_cast<const std::uint8_t*>(map.planes[0].data),
                                       map.planes[0].pitch, map.width, map.height},
                             static_cast<std::uint8_t*>(mask.planes[0].data),
                             mask.planes[0].pitch,
                             mask.width,
                             mask.height,
                             params.mappings.empty()
                                 ? stretch_mask_mapping(mask.width, mask.height, map.width, map.height)
                                 : params.mappings[n]};
      max_width = std::max(max_width, mask.width);
      max_height = std::max(max_height, mask.height);
    }
    const dim3 grid((max_width + kBlockX - 1) / kBlockX, (max_height + kBlockY - 1) / kBlockY, count);
    class_mask_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(jobs, set, params.interpolation);
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

}  // namespace fovea::post
