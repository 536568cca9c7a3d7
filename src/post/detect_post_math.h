// The detection postprocess's per-candidate arithmetic (detect_post.h's steps 1-3), written once as
// FOVEA_HD functions for the CPU reference (detect_post_cpu.cpp) and the kernels (detect_post.cu).
// Every float operation is rounded on its own, so both runs compute the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.h"
#include "post/box_decode.h"
#include "post/detect_post.h"
#include "post/post_math.h"

namespace fovea::post::detail {

// Everything a run needs besides the tensors, built once per run from the plan and the mappings
// (the CUDA run passes it by value as a kernel parameter).
struct DetectArgs {
  DetectLayoutKind kind = DetectLayoutKind::kSsd;
  int batch = 0, rows = 0, classes = 0, candidates = 0, grid_width = 0, grid_height = 0;
  int model_columns = 0;  // kBoxes: the scores' last dimension (C, or 1 for [N, A])
  int score_columns = 0;  // what NMS sees: classes, or 1 for kNmsOutputs
  int background_class = -1;
  bool best_class_only = false;
  float min_width = 0.0f, min_height = 0.0f;
  SsdDecodeParams ssd;
  bool softmax = true;
  YoloDecodeParams yolo;
  float box_scale_x = 1.0f, box_scale_y = 1.0f;  // kBoxes, kNmsOutputs: normalized coordinates to pixels
  float stride_x = 0.0f, stride_y = 0.0f, norm_x = 0.0f, norm_y = 0.0f, offset_x = 0.0f, offset_y = 0.0f;
  bool coverage_sigmoid = false;
  FrameMapping mappings[kMaxDetectBatch];
  float thresholds[kMaxDetectClasses];  // classes entries
};

// The CUDA run's workspace: decoded boxes [N, B, 4], the scores NMS sees [N, B, columns], then
// post::nms's own workspace (offsets in bytes, 256-byte aligned).
struct DetectWorkspace {
  std::size_t boxes = 0, scores = 0, nms = 0, nms_bytes = 0, total = 0;
};
DetectWorkspace detect_workspace_layout(const NmsShape& shape, std::size_t nms_bytes);

// Validates the run's tensors and mappings against the plan (`device`: they must be device memory).
Result<DetectArgs> make_detect_args(const DetectPostPlan& plan, const DetectInputs& inputs, bool device);

// The warp's order of the softmax sum, which the CPU reference reproduces: lane l adds the terms
// c = l, l + 32, ... in order, then the 32 partial sums are combined by the butterfly
// s[l] = s[l] + s[l ^ o] for o = 16, 8, 4, 2, 1 (every lane ends with the same sum).
inline constexpr int kSumLanes = 32;
float softmax_sum(const float* terms, int count);

// The model's tensors (dense), T = float or std::uint16_t (float16 bits).
template <typename T>
struct DetectTensors {
  const T* loc = nullptr;
  const T* logits = nullptr;
  const float* priors = nullptr;
  const T* predictions = nullptr;
  const T* coverage = nullptr;
  const T* bbox = nullptr;
  const T* boxes = nullptr;
  const T* scores = nullptr;
  const void* count = nullptr;
  DataType count_dtype = DataType::kInt32;
  const void* class_ids = nullptr;
  DataType class_ids_dtype = DataType::kInt32;
};
template <typename T>
DetectTensors<T> detect_tensors(const DetectPostPlan& plan, const DetectInputs& inputs);

FOVEA_HD float negative_infinity() {
  return bits_to_float(0xff800000u);
}

FOVEA_HD bool is_finite(float f) {
  return sub_rn(f, f) == 0.0f;  // NaN and +-inf give NaN
}

// int32, int64 or float32 element i as a float (exact below 2^24, far above any class id or count).
FOVEA_HD float load_number(const void* data, DataType dtype, std::int64_t i) {
  if (dtype == DataType::kInt32) return static_cast<float>(static_cast<const std::int32_t*>(data)[i]);
  if (dtype == DataType::kInt64) return static_cast<float>(static_cast<const std::int64_t*>(data)[i]);
  return static_cast<const float*>(data)[i];
}

// Step 2: the frame box, or false when the candidate is dropped.
FOVEA_HD bool frame_box(Box in, const FrameMapping& m, float min_width, float min_height, Box& out) {
  if (!is_finite(in.x1) || !is_finite(in.y1) || !is_finite(in.x2) || !is_finite(in.y2)) return false;
  Box b{add_rn(mul_rn(sub_rn(in.x1, m.pad_x), m.scale_x), m.origin_x),
        add_rn(mul_rn(sub_rn(in.y1, m.pad_y), m.scale_y), m.origin_y),
        add_rn(mul_rn(sub_rn(in.x2, m.pad_x), m.scale_x), m.origin_x),
        add_rn(mul_rn(sub_rn(in.y2, m.pad_y), m.scale_y), m.origin_y)};
  b = normalized_box(b);
  b.x1 = fminf(fmaxf(b.x1, 0.0f), m.frame_width);
  b.x2 = fminf(fmaxf(b.x2, 0.0f), m.frame_width);
  b.y1 = fminf(fmaxf(b.y1, 0.0f), m.frame_height);
  b.y2 = fminf(fmaxf(b.y2, 0.0f), m.frame_height);
  const float w = sub_rn(b.x2, b.x1), h = sub_rn(b.y2, b.y1);
  if (!(w > 0.0f) || !(h > 0.0f) || w < min_width || h < min_height) return false;
  out = b;
  return true;
}

// The DetectNet_v2 box of one class at grid cell (gx, gy): DeepStream's formula (detect_post.h).
FOVEA_HD Box detectnet_box(float o1, float o2, float o3, float o4, int gx, int gy, const DetectArgs& a) {
  const float cx = div_rn(add_rn(mul_rn(static_cast<float>(gx), a.stride_x), a.offset_x), a.norm_x);
  const float cy = div_rn(add_rn(mul_rn(static_cast<float>(gy), a.stride_y), a.offset_y), a.norm_y);
  return Box{mul_rn(sub_rn(o1, cx), -a.norm_x), mul_rn(sub_rn(o2, cy), -a.norm_y),
             mul_rn(add_rn(o3, cx), a.norm_x), mul_rn(add_rn(o4, cy), a.norm_y)};
}

// Step 1's box of candidate b of frame n, in network-input pixels.
template <typename T>
FOVEA_HD Box raw_box(const DetectArgs& a, const DetectTensors<T>& t, int n, int b) {
  const std::int64_t row = static_cast<std::int64_t>(n) * a.rows + b;
  switch (a.kind) {
    case DetectLayoutKind::kSsd: {
      const T* l = t.loc + row * 4;
      const float* p = t.priors + static_cast<std::int64_t>(b) * 4;
      return ssd_decode_box(load_float(l), load_float(l + 1), load_float(l + 2), load_float(l + 3),
                            Box{p[0], p[1], p[2], p[3]}, a.ssd);
    }
    case DetectLayoutKind::kYoloAnchorFree: {
      const std::int64_t plane = a.rows;
      const T* p = t.predictions + static_cast<std::int64_t>(n) * (4 + a.classes) * plane + b;
      return yolo_decode_box(load_float(p), load_float(p + plane), load_float(p + 2 * plane),
                             load_float(p + 3 * plane), a.yolo);
    }
    case DetectLayoutKind::kYoloAnchorBased: {
      const T* p = t.predictions + row * (5 + a.classes);
      return yolo_decode_box(load_float(p), load_float(p + 1), load_float(p + 2), load_float(p + 3), a.yolo);
    }
    case DetectLayoutKind::kDetectNet: {
      const int cells = a.grid_width * a.grid_height;
      const int c = b / cells, cell = b % cells;
      const std::int64_t plane = cells;
      const T* o = t.bbox + (static_cast<std::int64_t>(n) * 4 * a.classes + 4 * c) * plane + cell;
      return detectnet_box(load_float(o), load_float(o + plane), load_float(o + 2 * plane),
                           load_float(o + 3 * plane), cell % a.grid_width, cell / a.grid_width, a);
    }
    case DetectLayoutKind::kBoxes:
    case DetectLayoutKind::kNmsOutputs: {
      const T* p = t.boxes + row * 4;
      return Box{mul_rn(load_float(p), a.box_scale_x), mul_rn(load_float(p + 1), a.box_scale_y),
                 mul_rn(load_float(p + 2), a.box_scale_x), mul_rn(load_float(p + 3), a.box_scale_y)};
    }
  }
  return Box{};
}

// Step 1's score of class c for candidate b of frame n (SSD with softmax: ssd_probability instead).
// DetectNet: a candidate is one class's box, so the other classes score -inf.
template <typename T>
FOVEA_HD float raw_score(const DetectArgs& a, const DetectTensors<T>& t, int n, int b, int c) {
  const std::int64_t row = static_cast<std::int64_t>(n) * a.rows + b;
  switch (a.kind) {
    case DetectLayoutKind::kSsd: return load_float(t.logits + row * a.classes + c);
    case DetectLayoutKind::kYoloAnchorFree:
      return yolo_score(
          1.0f,
          load_float(t.predictions + (static_cast<std::int64_t>(n) * (4 + a.classes) + 4 + c) * a.rows + b),
          a.yolo);
    case DetectLayoutKind::kYoloAnchorBased: {
      const T* p = t.predictions + row * (5 + a.classes);
      return yolo_score(load_float(p + 4), load_float(p + 5 + c), a.yolo);
    }
    case DetectLayoutKind::kDetectNet: {
      const int cells = a.grid_width * a.grid_height;
      if (b / cells != c) return negative_infinity();
      const float coverage =
          load_float(t.coverage + (static_cast<std::int64_t>(n) * a.classes + c) * cells + b % cells);
      return a.coverage_sigmoid ? sigmoid(coverage) : coverage;
    }
    case DetectLayoutKind::kBoxes: return load_float(t.scores + row * a.model_columns + c);
    case DetectLayoutKind::kNmsOutputs: return load_float(t.scores + row);
  }
  return negative_infinity();
}

// kNmsOutputs: the class of row k of frame n, or -1 when the row does not count (k >= count, or the
// id is not an integer in [0, classes)).
template <typename T>
FOVEA_HD int nms_output_class(const DetectArgs& a, const DetectTensors<T>& t, int n, int k) {
  const float count = load_number(t.count, t.count_dtype, n);
  if (!(static_cast<float>(k) < count)) return -1;
  const float id = load_number(t.class_ids, t.class_ids_dtype, static_cast<std::int64_t>(n) * a.rows + k);
  if (!(id >= 0.0f) || !(id < static_cast<float>(a.classes)) || id != floorf(id)) return -1;
  return static_cast<int>(id);
}

// The softmax probability of a logit given the row's max and sum (detect_post.h step 1).
FOVEA_HD float ssd_probability(float logit, float max, float sum) {
  return div_rn(exp_rn(sub_rn(logit, max)), sum);
}

// Argmax's step: class c with score s replaces the best so far (ties keep the lower class, which
// callers visit first or break by index).
FOVEA_HD bool better_class(float s, int c, float best_score, int best) {
  return best < 0 || beats(s, best_score) || (!beats(best_score, s) && c < best);
}

// The best class for best_class_only, DetectNet: the highest coverage at the candidate's cell.
template <typename T>
FOVEA_HD int detectnet_best_class(const DetectArgs& a, const DetectTensors<T>& t, int n, int b) {
  const int cells = a.grid_width * a.grid_height;
  int best = -1;
  float best_score = 0.0f;
  for (int c = 0; c < a.classes; ++c) {
    if (c == a.background_class) continue;
    const float s =
        load_float(t.coverage + (static_cast<std::int64_t>(n) * a.classes + c) * cells + b % cells);
    if (better_class(s, c, best_score, best)) {
      best = c;
      best_score = s;
    }
  }
  return best;
}

// Step 3: the score NMS sees for class c (-inf: it does not count).
FOVEA_HD float counted_score(const DetectArgs& a, bool box_kept, int best, int c, float score) {
  if (!box_kept || (a.best_class_only && c != best)) return negative_infinity();
  return score > a.thresholds[c] ? score : negative_infinity();
}

}  // namespace fovea::post::detail
