// Host-side model outputs for the detection postprocess tests: named float/int tensors with their
// OutputInfo, a CPU run helper, and random outputs per layout (for the CUDA-vs-CPU tests).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.h"
#include "post/detect_post.h"

namespace fovea::post::testing {

// One model output: float32 values (stored as float16 bits when the output is float16), or int32.
struct HostOutput {
  OutputInfo info;
  std::vector<float> f32;
  std::vector<std::uint16_t> f16;
  std::vector<std::int32_t> i32;

  void* data() {
    if (info.dtype == DataType::kFloat16) return f16.data();
    if (info.dtype == DataType::kInt32) return i32.data();
    return f32.data();
  }
  std::size_t bytes() const {
    if (info.dtype == DataType::kFloat16) return f16.size() * 2;
    if (info.dtype == DataType::kInt32) return i32.size() * 4;
    return f32.size() * 4;
  }
};

inline std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

inline TensorView view_of(void* data, const OutputInfo& info, MemoryKind memory) {
  TensorView v;
  v.data = data;
  v.dtype = info.dtype;
  v.memory = memory;
  v.rank = static_cast<int>(info.shape.size());
  std::int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.shape[static_cast<std::size_t>(i)] = info.shape[static_cast<std::size_t>(i)];
    v.strides[static_cast<std::size_t>(i)] = stride;
    stride *= info.shape[static_cast<std::size_t>(i)];
  }
  return v;
}

struct HostModel {
  std::vector<HostOutput> outputs;
  std::vector<float> priors;  // [A, 4] when given to the run rather than as an output

  HostOutput& add(std::string name, std::vector<std::int64_t> shape, std::vector<float> values,
                  DataType dtype = DataType::kFloat32) {
    HostOutput o;
    o.info = OutputInfo{std::move(name), std::move(shape), dtype};
    EXPECT_EQ(static_cast<std::int64_t>(values.size()), element_count(o.info.shape)) << o.info.name;
    if (dtype == DataType::kFloat16) {
      for (float v : values) o.f16.push_back(float_to_half(v).bits);
    } else if (dtype == DataType::kInt32) {
      for (float v : values) o.i32.push_back(static_cast<std::int32_t>(v));
    } else {
      o.f32 = std::move(values);
    }
    outputs.push_back(std::move(o));
    return outputs.back();
  }
  std::vector<OutputInfo> infos() const {
    std::vector<OutputInfo> v;
    for (const HostOutput& o : outputs) v.push_back(o.info);
    return v;
  }
  std::vector<TensorView> views() {
    std::vector<TensorView> v;
    for (HostOutput& o : outputs) v.push_back(view_of(o.data(), o.info, MemoryKind::kHost));
    return v;
  }
};

struct DetectResult {
  std::vector<Detection> detections;
  std::vector<std::int32_t> counts;
  int top_k = 0;
  const Detection& at(int n, int i) const { return detections[static_cast<std::size_t>(n * top_k + i)]; }
  int count(int n) const { return counts[static_cast<std::size_t>(n)]; }
};

inline DetectResult run_cpu(HostModel& model, const DetectPostConfig& config,
                            const std::vector<FrameMapping>& mappings) {
  DetectResult r;
  auto plan = plan_detect_post(config, model.infos(), DetectDevice::kCpu);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan.is_ok()) return r;
  r.top_k = plan->detections_per_image;
  r.detections.resize(static_cast<std::size_t>(plan->layout.batch * r.top_k));
  r.counts.resize(static_cast<std::size_t>(plan->layout.batch));
  const std::vector<TensorView> views = model.views();
  DetectInputs inputs{views, {}, mappings};
  if (!model.priors.empty()) {
    inputs.priors = contiguous_tensor(model.priors.data(), DataType::kFloat32, MemoryKind::kHost,
                                      {static_cast<std::int64_t>(model.priors.size() / 4), 4});
  }
  const Status status = run_detect_post_cpu(*plan, inputs, {r.detections.data(), r.counts.data()});
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return r;
}

// Random outputs of every layout, sized oddly, with detector-like values: most scores low, some
// high; boxes near a few objects so NMS has work; a sprinkle of NaN and infinities.
struct RandomModel {
  HostModel model;
  DetectPostConfig config;
};

inline std::vector<float> random_floats(std::mt19937& rng, std::int64_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

inline void sprinkle_specials(std::mt19937& rng, std::vector<float>& v) {
  for (float& x : v) {
    const auto r = static_cast<unsigned>(rng() % 1000);
    if (r == 0) x = std::nanf("");
    if (r == 1) x = INFINITY;
    if (r == 2) x = -INFINITY;
  }
}

inline RandomModel random_model(DetectLayoutKind kind, int batch, std::uint32_t seed,
                                DataType dtype = DataType::kFloat32) {
  std::mt19937 rng(seed);
  RandomModel r;
  DetectParserOptions& o = r.config.options;
  o.input_width = 333;
  o.input_height = 211;
  const std::int64_t n = batch;
  switch (kind) {
    case DetectLayoutKind::kSsd: {
      const std::int64_t anchors = 1001, classes = 13;
      r.config.parser = DetectParser::kSsd;
      auto loc = random_floats(rng, n * anchors * 4, -3.0f, 3.0f);
      auto logits = random_floats(rng, n * anchors * classes, -4.0f, 6.0f);
      sprinkle_specials(rng, logits);
      loc[5] = 200.0f;  // beyond the dw clamp
      for (std::int64_t a = 0; a < anchors; ++a) {
        const float x = std::uniform_real_distribution<float>(0, 300)(rng);
        const float y = std::uniform_real_distribution<float>(0, 200)(rng);
        const float w = std::uniform_real_distribution<float>(5, 120)(rng);
        const float h = std::uniform_real_distribution<float>(5, 120)(rng);
        r.model.priors.insert(r.model.priors.end(), {x, y, x + w, y + h});
      }
      r.model.add("bbox_regression", {n, anchors, 4}, loc, dtype);
      r.model.add("cls_logits", {n, anchors, classes}, logits, dtype);
      r.config.params = default_detect_params(DetectParser::kSsd);
      r.config.params.score_threshold = 0.3f;
      break;
    }
    case DetectLayoutKind::kYoloAnchorFree:
    case DetectLayoutKind::kYoloAnchorBased: {
      const bool free = kind == DetectLayoutKind::kYoloAnchorFree;
      const std::int64_t anchors = 1313, classes = 7, columns = (free ? 4 : 5) + classes;
      r.config.parser = DetectParser::kYolo;
      std::vector<float> values(static_cast<std::size_t>(n * anchors * columns));
      std::uniform_real_distribution<float> unit(0.0f, 1.0f);
      for (std::int64_t i = 0; i < n * anchors; ++i) {
        const std::int64_t img = i / anchors, a = i % anchors;
        for (std::int64_t j = 0; j < columns; ++j) {
          float v = j == 0   ? unit(rng) * 333
                    : j == 1 ? unit(rng) * 211
                    : j < 4  ? 5 + unit(rng) * 90
                             : unit(rng) * unit(rng);
          const std::int64_t at = free ? (img * columns + j) * anchors + a : i * columns + j;
          values[static_cast<std::size_t>(at)] = v;
        }
      }
      sprinkle_specials(rng, values);
      r.model.add("output0",
                  free ? std::vector<std::int64_t>{n, columns, anchors}
                       : std::vector<std::int64_t>{n, anchors, columns},
                  values, dtype);
      r.config.params = default_detect_params(DetectParser::kYolo);
      r.config.params.score_threshold = 0.2f;
      r.config.params.iou_threshold = 0.5f;
      break;
    }
    case DetectLayoutKind::kDetectNet: {
      const std::int64_t classes = 3, h = 13, w = 21;  // stride ceil(333 / 21) = 16, ceil(211 / 13) = 17
      r.config.parser = DetectParser::kDetectNet;
      auto cov = random_floats(rng, n * classes * h * w, 0.0f, 1.0f);
      sprinkle_specials(rng, cov);
      auto bbox = random_floats(rng, n * 4 * classes * h * w, -1.5f, 1.5f);
      r.model.add("output_cov/Sigmoid", {n, classes, h, w}, cov, dtype);
      r.model.add("output_bbox/BiasAdd", {n, 4 * classes, h, w}, bbox, dtype);
      r.config.params = default_detect_params(DetectParser::kDetectNet);
      break;
    }
    case DetectLayoutKind::kBoxes: {
      const std::int64_t rows = 777, classes = 5;
      r.config.parser = DetectParser::kBoxes;
      std::vector<float> boxes;
      for (std::int64_t i = 0; i < n * rows; ++i) {
        const float x = std::uniform_real_distribution<float>(-0.1f, 1.0f)(rng);
        const float y = std::uniform_real_distribution<float>(-0.1f, 1.0f)(rng);
        boxes.insert(boxes.end(), {x, y, x + 0.2f, y + 0.15f});
      }
      sprinkle_specials(rng, boxes);
      auto scores = random_floats(rng, n * rows * classes, 0.0f, 1.0f);
      sprinkle_specials(rng, scores);
      r.model.add("scores", {n, rows, classes}, scores, dtype);
      r.model.add("boxes", {n, rows, 4}, boxes, dtype);
      r.config.options.normalized_boxes = true;
      r.config.params = default_detect_params(DetectParser::kBoxes);
      break;
    }
    case DetectLayoutKind::kNmsOutputs: {
      const std::int64_t k = 101;
      r.config.parser = DetectParser::kBoxes;
      std::vector<float> counts, boxes, ids;
      for (std::int64_t i = 0; i < n; ++i) counts.push_back(static_cast<float>(rng() % (k + 1)));
      for (std::int64_t i = 0; i < n * k; ++i) {
        const float x = std::uniform_real_distribution<float>(-20.0f, 320.0f)(rng);
        const float y = std::uniform_real_distribution<float>(-20.0f, 200.0f)(rng);
        boxes.insert(boxes.end(), {x, y, x + 40.0f, y + 30.0f});
        ids.push_back(static_cast<float>(static_cast<int>(rng() % 12) - 1));  // -1 and 10 are out of range
      }
      r.model.add("num_detections", {n, 1}, counts, DataType::kInt32);
      r.model.add("detection_boxes", {n, k, 4}, boxes, dtype);
      r.model.add("detection_scores", {n, k}, random_floats(rng, n * k, 0.0f, 1.0f), dtype);
      r.model.add("detection_classes", {n, k}, ids, DataType::kInt32);
      r.config.options.classes = 10;
      r.config.params = default_detect_params(DetectParser::kBoxes);
      break;
    }
  }
  r.config.params.class_thresholds = {{1, 0.6f}};
  r.config.params.min_width = 3.0f;
  return r;
}

// Mappings for a batch: stretch, letterbox and a cropped placement, cycling, onto odd frame sizes.
inline std::vector<FrameMapping> random_mappings(int batch, int input_width, int input_height) {
  std::vector<FrameMapping> m;
  for (int i = 0; i < batch; ++i) {
    const int fw = 641 + 2 * i, fh = 359 + i;
    if (i % 3 == 0) {
      m.push_back(stretch_mapping(input_width, input_height, fw, fh));
    } else if (i % 3 == 1) {
      m.push_back(letterbox_mapping(input_width, input_height, fw, fh));
    } else {
      const image::Roi roi{10, 5, 301, 177};
      m.push_back(placement_mapping(image::fit_placement(image::ResizeFit::kKeepAspectTopLeft, roi.width,
                                                         roi.height, input_width, input_height),
                                    roi, fw, fh));
    }
  }
  return m;
}

}  // namespace fovea::post::testing
