// Segmentation argmax on the GPU: one thread per pixel; for NCHW consecutive threads read
// consecutive addresses of each class plane.
#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "post/class_map.h"
#include "post/post_math.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

constexpr int kThreads = 256;
// Output images per launch: their pointers and pitches travel in the kernel arguments (512 bytes of
// the 4 KiB allowed).
constexpr int kImagesPerLaunch = 32;

struct OutputMaps {
  std::uint8_t* data[kImagesPerLaunch];
  std::size_t pitch[kImagesPerLaunch];
};

struct ScoreLayout {
  std::int64_t image_stride, class_stride, y_stride, x_stride;
  int classes, height, width;
};

template <typename T>
// __grid_constant__: maps are picked by blockIdx.y, and indexing a by-value parameter at run time
// copies the whole argument into each thread's local memory.
__global__ void class_map_kernel(const T* scores, ScoreLayout layout, int first_image,
                                 const __grid_constant__ OutputMaps maps) {
  const int pixel = blockIdx.x * kThreads + threadIdx.x;
  if (pixel >= layout.width * layout.height) return;
  const int y = pixel / layout.width, x = pixel % layout.width;
  const int n = first_image + static_cast<int>(blockIdx.y);
  const T* p = scores + n * layout.image_stride + y * layout.y_stride + x * layout.x_stride;
  int best = 0;
  float best_score = load_float(p);
  for (int c = 1; c < layout.classes; ++c) {
    const float s = load_float(p + c * layout.class_stride);
    if (beats(s, best_score)) {
      best = c;
      best_score = s;
    }
  }
  maps.data[blockIdx.y][y * maps.pitch[blockIdx.y] + x] = static_cast<std::uint8_t>(best);
}

}  // namespace

Status run_class_map_cuda(cudaStream_t stream, const TensorView& scores, const ClassMapParams& params,
                          const image::ImageBatch& class_maps) {
  FOVEA_ASSIGN_OR_RETURN(const ClassMapPlan plan, plan_class_map(scores, params, class_maps));
  FOVEA_TRY(check_memory(scores, true, "scores"));
  if (!image::batch_on_device(class_maps)) {
    return make_error(StatusCode::kInvalidArgument, "class map: the CUDA run needs device output images");
  }
  const bool nchw = params.layout == ChannelLayout::kNCHW;
  const ScoreLayout layout{scores.strides[0],
                           scores.strides[nchw ? 1 : 3],
                           scores.strides[nchw ? 2 : 1],
                           scores.strides[nchw ? 3 : 2],
                           plan.classes,
                           plan.height,
                           plan.width};
  const int pixel_blocks = (plan.width * plan.height + kThreads - 1) / kThreads;
  for (int first = 0; first < plan.batch; first += kImagesPerLaunch) {
    const int count = std::min(kImagesPerLaunch, plan.batch - first);
    OutputMaps maps{};
    for (int i = 0; i < count; ++i) {
      const ImageView& view = class_maps.images[static_cast<std::size_t>(first + i)];
      maps.data[i] = static_cast<std::uint8_t*>(view.planes[0].data);
      maps.pitch[i] = view.planes[0].pitch;
    }
    dispatch_float_dtype(scores.dtype, [&](auto tag) {
      using T = decltype(tag);
      class_map_kernel<T><<<dim3(pixel_blocks, count), kThreads, 0, stream>>>(
          static_cast<const T*>(scores.data), layout, first, maps);
    });
    FOVEA_CUDA_TRY_LAUNCH();
  }
  return Status::ok();
}

}  // namespace fovea::post
