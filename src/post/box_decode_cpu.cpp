// The box decoders' CPU reference: one loop over images and boxes around the shared per-box math.
#include <cstdint>

#include "post/box_decode.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

template <typename T>
float load_at(const TensorView& t, std::int64_t i0, std::int64_t i1, std::int64_t i2) {
  return load_float(static_cast<const T*>(t.data) + i0 * t.strides[0] + i1 * t.strides[1] +
                    i2 * t.strides[2]);
}

Box prior_at(const TensorView& priors, std::int64_t b) {
  const auto* p = static_cast<const float*>(priors.data) + b * priors.strides[0];
  const std::int64_t s = priors.strides[1];
  return Box{p[0], p[s], p[2 * s], p[3 * s]};
}

}  // namespace

Result<BoxDecodePlan> plan_ssd_decode(const TensorView& loc, const TensorView& priors,
                                      const TensorView& boxes) {
  FOVEA_TRY(check_tensor(loc, 3, {DataType::kFloat32, DataType::kFloat16}, "loc"));
  FOVEA_TRY(check_tensor(priors, 2, {DataType::kFloat32}, "priors"));
  const std::int64_t batch = loc.shape[0], count = loc.shape[1];
  if (loc.shape[2] != 4 || priors.shape[0] != count || priors.shape[1] != 4) {
    return make_error(StatusCode::kInvalidArgument,
                      "ssd decode: loc must be [N, B, 4] and priors [B, 4] (B = ", std::to_string(count),
                      ")");
  }
  FOVEA_TRY(check_dense_output(boxes, {batch, count, 4}, DataType::kFloat32, "boxes"));
  return BoxDecodePlan{static_cast<int>(batch), static_cast<int>(count), 0};
}

Status run_ssd_decode_cpu(const TensorView& loc, const TensorView& priors, const SsdDecodeParams& params,
                          const TensorView& boxes) {
  FOVEA_ASSIGN_OR_RETURN(const BoxDecodePlan plan, plan_ssd_decode(loc, priors, boxes));
  FOVEA_TRY(check_memory(loc, false, "loc"));
  FOVEA_TRY(check_memory(priors, false, "priors"));
  FOVEA_TRY(check_memory(boxes, false, "boxes"));
  dispatch_float_dtype(loc.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n = 0; n < plan.batch; ++n) {
      for (std::int64_t b = 0; b < plan.boxes; ++b) {
        const Box box =
            ssd_decode_box(load_at<T>(loc, n, b, 0), load_at<T>(loc, n, b, 1), load_at<T>(loc, n, b, 2),
                           load_at<T>(loc, n, b, 3), prior_at(priors, b), params);
        store_box(static_cast<float*>(boxes.data) + (n * plan.boxes + b) * 4, box);
      }
    }
  });
  return Status::ok();
}

Result<BoxDecodePlan> plan_yolo_decode(const TensorView& predictions, const YoloDecodeParams& params,
                                       const TensorView& boxes, const TensorView& scores) {
  FOVEA_TRY(check_tensor(predictions, 3, {DataType::kFloat32, DataType::kFloat16}, "predictions"));
  const std::int64_t batch = predictions.shape[0], count = predictions.shape[1];
  const std::int64_t first_class = params.has_objectness ? 5 : 4;
  const std::int64_t classes = predictions.shape[2] - first_class;
  if (classes <= 0) {
    return make_error(StatusCode::kInvalidArgument, "yolo decode: predictions have ",
                      std::to_string(predictions.shape[2]), " columns, need ", std::to_string(first_class),
                      " + classes");
  }
  FOVEA_TRY(check_dense_output(boxes, {batch, count, 4}, DataType::kFloat32, "boxes"));
  FOVEA_TRY(check_dense_output(scores, {batch, count, classes}, DataType::kFloat32, "scores"));
  return BoxDecodePlan{static_cast<int>(batch), static_cast<int>(count), static_cast<int>(classes)};
}

Status run_yolo_decode_cpu(const TensorView& predictions, const YoloDecodeParams& params,
                           const TensorView& boxes, const TensorView& scores) {
  FOVEA_ASSIGN_OR_RETURN(const BoxDecodePlan plan, plan_yolo_decode(predictions, params, boxes, scores));
  FOVEA_TRY(check_memory(predictions, false, "predictions"));
  FOVEA_TRY(check_memory(boxes, false, "boxes"));
  FOVEA_TRY(check_memory(scores, false, "scores"));
  const int first_class = params.has_objectness ? 5 : 4;
  dispatch_float_dtype(predictions.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n = 0; n < plan.batch; ++n) {
      for (std::int64_t b = 0; b < plan.boxes; ++b) {
        const auto& p = predictions;
        store_box(static_cast<float*>(boxes.data) + (n * plan.boxes + b) * 4,
                  yolo_decode_box(load_at<T>(p, n, b, 0), load_at<T>(p, n, b, 1), load_at<T>(p, n, b, 2),
                                  load_at<T>(p, n, b, 3), params));
        const float objectness = params.has_objectness ? load_at<T>(p, n, b, 4) : 1.0f;
        float* out = static_cast<float*>(scores.data) + (n * plan.boxes + b) * plan.classes;
        for (int c = 0; c < plan.classes; ++c) {
          out[c] = yolo_score(objectness, load_at<T>(p, n, b, first_class + c), params);
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace fovea::post
