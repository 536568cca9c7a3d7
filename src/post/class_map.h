// Segmentation argmax: a network's per-class scores to a class map, one uint8 class per pixel.
//
// | input                              | dtype            | output                                  |
// |------------------------------------|------------------|-----------------------------------------|
// | scores [N, C, H, W] (kNCHW) or     | float32, float16 | N kGRAY8 images of W x H (class index)  |
// | [N, H, W, C] (kNHWC), strided      |                  |                                         |
//
// The class of a pixel is the index of its largest score; equal scores go to the lower index, and
// NaN loses to any number (a pixel whose scores are all NaN gets class 0). At most 256 classes (the
// map is uint8). The output images are pitched GRAY8 views of exactly W x H without ROIs; a dense
// [N, H, W] buffer is N views with pitch W. The comparison is exact, so CPU and CUDA agree exactly.
// The CPU run takes host memory, the CUDA run device memory.
#pragma once

#include "core/cuda_stream.h"
#include "core/image.h"
#include "core/status.h"
#include "image/batch.h"

namespace fovea::post {

enum class ChannelLayout { kNCHW, kNHWC };

inline constexpr int kMaxMapClasses = 256;

struct ClassMapParams {
  ChannelLayout layout = ChannelLayout::kNCHW;
};

struct ClassMapPlan {
  int batch = 0;
  int classes = 0;
  int height = 0;
  int width = 0;
};

Result<ClassMapPlan> plan_class_map(const TensorView& scores, const ClassMapParams& params,
                                    const image::ImageBatch& class_maps);
Status run_class_map_cpu(const TensorView& scores, const ClassMapParams& params,
                         const image::ImageBatch& class_maps);
Status run_class_map_cuda(cudaStream_t stream, const TensorView& scores, const ClassMapParams& params,
                          const image::ImageBatch& class_maps);

}  // namespace fovea::post
