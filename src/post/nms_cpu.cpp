// The NMS reference in plain loops: per image, per class, sort, greedy suppression; then top-k.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "post/nms.h"

namespace fovea::post {

namespace {

struct Candidate {
  float score = 0.0f;
  std::uint32_t flat_index = 0;  // box * C + class
};

// Score descending, then flat index ascending.
bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.flat_index < b.flat_index);
}

Box box_at(const float* boxes, std::int64_t index) {
  const float* b = boxes + index * 4;
  return normalized_box(Box{b[0], b[1], b[2], b[3]});
}

// The survivors of one class of one image, appended to `kept`.
void nms_one_class(const NmsShape& shape, const NmsParams& params, const float* image_boxes,
                   const float* image_scores, int class_id, std::vector<Candidate>& kept) {
  std::vector<Candidate> candidates;
  for (int b = 0; b < shape.boxes; ++b) {
    const float score = image_scores[static_cast<std::int64_t>(b) * shape.classes + class_id];
    if (score > params.score_threshold) {
      candidates.push_back({score, static_cast<std::uint32_t>(b) * shape.classes + class_id});
    }
  }
  std::sort(candidates.begin(), candidates.end(), ranks_before);
  if (candidates.size() > static_cast<std::size_t>(params.max_candidates_per_class)) {
    candidates.resize(static_cast<std::size_t>(params.max_candidates_per_class));
  }
  std::vector<Candidate> class_kept;
  for (const Candidate& c : candidates) {
    const Box box = box_at(image_boxes, c.flat_index / shape.classes);
    bool suppressed = false;
    for (const Candidate& k : class_kept) {
      if (suppresses(box_at(image_boxes, k.flat_index / shape.classes), box, params.iou_threshold)) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) {
      class_kept.push_back(c);
    }
  }
  kept.insert(kept.end(), class_kept.begin(), class_kept.end());
}

}  // namespace

Status check_nms(const NmsShape& shape, const NmsParams& params) {
  if (shape.batch <= 0 || shape.boxes <= 0 || shape.classes <= 0) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("nms: shape {} x {} boxes x {} classes is empty", shape.batch, shape.boxes,
                                  shape.classes));
  }
  if (shape.classes > kMaxNmsClasses) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("nms: {} classes, at most {} are supported",
                                                                shape.classes, kMaxNmsClasses));
  }
  // Flat indices (box * C + class) are 32-bit in the sort keys; CUB's offsets are int.
  const std::int64_t elements = static_cast<std::int64_t>(shape.batch) * shape.boxes * shape.classes;
  if (static_cast<std::int64_t>(shape.boxes) * shape.classes > INT32_MAX || elements > INT32_MAX) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("nms: {} x {} boxes x {} classes is more than 2^31 scores", shape.batch,
                                  shape.boxes, shape.classes));
  }
  if (std::isnan(params.score_threshold) || std::isnan(params.iou_threshold)) {
    return make_error(StatusCode::kInvalidArgument, "nms: a threshold is NaN");
  }
  if (params.top_k <= 0 || params.max_candidates_per_class <= 0) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("nms: top_k {} and max_candidates_per_class {} must be positive",
                                  params.top_k, params.max_candidates_per_class));
  }
  if (params.max_candidates_per_class > kMaxCandidatesPerClass) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("nms: max_candidates_per_class {} is above the supported {}",
                                  params.max_candidates_per_class, kMaxCandidatesPerClass));
  }
  if (params.background_class < -1 || params.background_class >= shape.classes) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("nms: background class {} is not -1 or a class of {}",
                                  params.background_class, shape.classes));
  }
  return Status::ok();
}

Status run_nms_cpu(const NmsShape& shape, const NmsParams& params, const float* boxes, const float* scores,
                   const DetectionList& output) {
  FOVEA_TRY(check_nms(shape, params));
  for (int n = 0; n < shape.batch; ++n) {
    const float* image_boxes = boxes + static_cast<std::int64_t>(n) * shape.boxes * 4;
    const float* image_scores = scores + static_cast<std::int64_t>(n) * shape.boxes * shape.classes;
    std::vector<Candidate> kept;
    for (int c = 0; c < shape.classes; ++c) {
      if (c != params.background_class) {
        nms_one_class(shape, params, image_boxes, image_scores, c, kept);
      }
    }
    std::sort(kept.begin(), kept.end(), ranks_before);
    const int count = std::min(static_cast<int>(kept.size()), params.top_k);
    output.counts[n] = count;
    for (int i = 0; i < count; ++i) {
      const Candidate& c = kept[static_cast<std::size_t>(i)];
      const int box_index = static_cast<int>(c.flat_index / shape.classes);
      output.detections[static_cast<std::int64_t>(n) * params.top_k + i] =
          Detection{n, static_cast<int>(c.flat_index % shape.classes), box_index, c.score,
                    box_at(image_boxes, box_index)};
    }
  }
  return Status::ok();
}

#if !defined(FOVEA_HAVE_CUDA)
Result<NmsPlan> plan_nms(const NmsShape& shape, const NmsParams& params) {
  FOVEA_TRY(check_nms(shape, params));
  return NmsPlan{0, params.top_k};
}

Status run_nms_cuda(cudaStream_t, const NmsShape&, const NmsParams&, const float*, const float*, void*,
                    std::size_t, const DetectionList&) {
  return make_error(StatusCode::kUnsupported, "nms: this build has no CUDA");
}

Status copy_detections_to_host(cudaStream_t, const NmsShape&, const NmsParams&, const DetectionList&,
                               const DetectionList&) {
  return make_error(StatusCode::kUnsupported, "nms: this build has no CUDA");
}
#endif

}  // namespace fovea::post
