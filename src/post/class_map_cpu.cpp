// Segmentation argmax in plain loops.
#include <cstdint>

#include "post/class_map.h"
#include "post/post_math.h"
#include "post/tensor_args.h"

namespace fovea::post {

Result<ClassMapPlan> plan_class_map(const TensorView& scores, const ClassMapParams& params,
                                    const image::ImageBatch& class_maps) {
  FOVEA_TRY(check_tensor(scores, 4, {DataType::kFloat32, DataType::kFloat16}, "scores"));
  const bool nchw = params.layout == ChannelLayout::kNCHW;
  const ClassMapPlan plan{static_cast<int>(scores.shape[0]), static_cast<int>(scores.shape[nchw ? 1 : 3]),
                          static_cast<int>(scores.shape[nchw ? 2 : 1]),
                          static_cast<int>(scores.shape[nchw ? 3 : 2])};
  if (plan.classes > kMaxMapClasses) {
    return make_error(StatusCode::kInvalidArgument, "class map: ", std::to_string(plan.classes),
                      " classes do not fit a uint8 map (at most 256)");
  }
  FOVEA_TRY(image::check_batch(class_maps, {PixelFormat::kGRAY8}, "class maps"));
  if (class_maps.size() != plan.batch) {
    return make_error(StatusCode::kInvalidArgument, "class map: ", std::to_string(class_maps.size()),
                      " output images for a batch of ", std::to_string(plan.batch));
  }
  for (int n = 0; n < plan.batch; ++n) {
    const ImageView& map = class_maps.images[static_cast<std::size_t>(n)];
    const image::Roi roi = class_maps.roi(n);
    if (map.width != plan.width || map.height != plan.height || roi.width != map.width ||
        roi.height != map.height) {
      return make_error(StatusCode::kInvalidArgument, "class map ", std::to_string(n), ": ",
                        std::to_string(map.width), "x", std::to_string(map.height),
                        " (or its ROI) is not the ", std::to_string(plan.width), "x",
                        std::to_string(plan.height), " of the scores");
    }
  }
  return plan;
}

Status run_class_map_cpu(const TensorView& scores, const ClassMapParams& params,
                         const image::ImageBatch& class_maps) {
  FOVEA_ASSIGN_OR_RETURN(const ClassMapPlan plan, plan_class_map(scores, params, class_maps));
  FOVEA_TRY(check_memory(scores, false, "scores"));
  if (image::batch_on_device(class_maps)) {
    return make_error(StatusCode::kInvalidArgument, "class map: the CPU run needs host output images");
  }
  const bool nchw = params.layout == ChannelLayout::kNCHW;
  const std::int64_t class_stride = scores.strides[nchw ? 1 : 3];
  const std::int64_t y_stride = scores.strides[nchw ? 2 : 1];
  const std::int64_t x_stride = scores.strides[nchw ? 3 : 2];
  dispatch_float_dtype(scores.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int n = 0; n < plan.batch; ++n) {
      for (int y = 0; y < plan.height; ++y) {
        auto* out = class_maps.images[static_cast<std::size_t>(n)].row(0, y);
        for (int x = 0; x < plan.width; ++x) {
          const T* pixel =
              static_cast<const T*>(scores.data) + n * scores.strides[0] + y * y_stride + x * x_stride;
          int best = 0;
          float best_score = load_float(pixel);
          for (int c = 1; c < plan.classes; ++c) {
            const float s = load_float(pixel + c * class_stride);
            if (beats(s, best_score)) {
              best = c;
              best_score = s;
            }
          }
          out[x] = static_cast<std::uint8_t>(best);
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace fovea::post
