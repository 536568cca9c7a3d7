// The detection postprocess at torchvision SSD300-VGG16's shape: 16 frames x 8,732 anchors x 91
// classes (COCO with background), torchvision's settings (softmax, score > 0.01, 400 candidates per
// class, IoU 0.45, 200 per frame), 1080p frames stretched from 300 x 300. Timed with CUDA events:
// the whole run_detect_post_cuda (decode + softmax + thresholds + frame mapping + NMS + top-k), and
// post::nms alone on the decoded scores, so decode = whole - nms. Issue 19's target: whole <= 1 ms
// per batch on an H100/H200.
//
//   detect_post_bench [--fp16]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/half.h"
#include "post/detect_post.h"
#include "post/detect_post_math.h"
#include "post/ssd_priors.h"

namespace {

using namespace fovea;

constexpr int kBatch = 16, kAnchors = 8732, kClasses = 91;
constexpr int kWarmup = 20, kIterations = 200;

// SSD-like head outputs: deltas N(0, 0.5); logits N(0, 1) with the background +4 (most class
// probabilities below 0.01 as in a trained SSD) and, on 10% of the anchors, one of 20 object classes
// per frame +2..8.
void make_outputs(std::vector<float>& loc, std::vector<float>& logits) {
  std::mt19937 rng(19);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  loc.resize(static_cast<std::size_t>(kBatch) * kAnchors * 4);
  logits.resize(static_cast<std::size_t>(kBatch) * kAnchors * kClasses);
  for (float& v : loc) v = 0.5f * noise(rng);
  for (std::size_t i = 0; i < static_cast<std::size_t>(kBatch) * kAnchors; ++i) {
    float* row = logits.data() + i * kClasses;
    for (int c = 0; c < kClasses; ++c) row[c] = noise(rng);
    row[0] += 4.0f;
    if (unit(rng) < 0.1f) row[1 + rng() % 20] += 2.0f + 6.0f * unit(rng);
  }
}

template <typename T>
T* device_copy(const void* host, std::size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<std::size_t>(bytes, 1)) != cudaSuccess) return nullptr;
  if (host != nullptr && cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
  return static_cast<T*>(p);
}

Status run(bool fp16) {
  std::vector<float> loc, logits;
  make_outputs(loc, logits);
  FOVEA_ASSIGN_OR_RETURN(std::vector<float> priors,
                         post::default_boxes(post::ssd300_vgg16_default_boxes(), 300, 300));
  const DataType dtype = fp16 ? DataType::kFloat16 : DataType::kFloat32;
  auto to_device = [&](const std::vector<float>& v) -> void* {
    if (!fp16) return device_copy<void>(v.data(), v.size() * sizeof(float));
    std::vector<std::uint16_t> h;
    for (float x : v) h.push_back(float_to_half(x).bits);
    return device_copy<void>(h.data(), h.size() * 2);
  };
  void* d_loc = to_device(loc);
  void* d_logits = to_device(logits);
  auto* d_priors = device_copy<float>(priors.data(), priors.size() * sizeof(float));

  post::DetectPostConfig config;
  config.parser = post::DetectParser::kSsd;
  config.params = post::default_detect_params(post::DetectParser::kSsd);
  config.options.input_width = 300;
  config.options.input_height = 300;
  const std::vector<post::OutputInfo> outputs = {{"bbox_regression", {kBatch, kAnchors, 4}, dtype},
                                                 {"cls_logits", {kBatch, kAnchors, kClasses}, dtype}};
  FOVEA_ASSIGN_OR_RETURN(const post::DetectPostPlan plan,
                         post::plan_detect_post(config, outputs, post::DetectDevice::kCuda));
  auto* d_workspace = device_copy<char>(nullptr, plan.workspace_bytes);
  const std::size_t capacity = static_cast<std::size_t>(kBatch) * plan.detections_per_image;
  auto* d_detections = device_copy<post::Detection>(nullptr, capacity * sizeof(post::Detection));
  auto* d_counts = device_copy<std::int32_t>(nullptr, kBatch * sizeof(std::int32_t));
  if (!d_loc || !d_logits || !d_priors || !d_workspace || !d_detections || !d_counts) {
    return make_error(StatusCode::kResourceExhausted, "cudaMalloc failed");
  }
  const std::vector<TensorView> views = {
      contiguous_tensor(d_loc, dtype, MemoryKind::kDevice, {kBatch, kAnchors, 4}),
      contiguous_tensor(d_logits, dtype, MemoryKind::kDevice, {kBatch, kAnchors, kClasses})};
  const std::vector<post::FrameMapping> mappings(kBatch, post::stretch_mapping(300, 300, 1920, 1080));
  const post::DetectInputs inputs{
      views, contiguous_tensor(d_priors, DataType::kFloat32, MemoryKind::kDevice, {kAnchors, 4}), mappings};
  const post::DetectionList output{d_detections, d_counts};

  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  FOVEA_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create(true));
  auto whole = [&] {
    return post::run_detect_post_cuda(stream.get(), plan, inputs, d_workspace, plan.workspace_bytes, output);
  };
  FOVEA_ASSIGN_OR_RETURN(const post::NmsPlan nms_plan, post::plan_nms(plan.nms_shape, plan.nms_params));
  const post::detail::DetectWorkspace w =
      post::detail::detect_workspace_layout(plan.nms_shape, nms_plan.workspace_bytes);
  auto nms_only = [&] {
    return post::run_nms_cuda(
        stream.get(), plan.nms_shape, plan.nms_params, reinterpret_cast<const float*>(d_workspace + w.boxes),
        reinterpret_cast<const float*>(d_workspace + w.scores), d_workspace + w.nms, w.nms_bytes, output);
  };
  auto time = [&](auto&& once) -> Result<float> {
    for (int i = 0; i < kWarmup; ++i) FOVEA_TRY(once());
    FOVEA_TRY(start.record(stream.get()));
    for (int i = 0; i < kIterations; ++i) FOVEA_TRY(once());
    FOVEA_TRY(stop.record(stream.get()));
    FOVEA_TRY(stop.synchronize());
    FOVEA_ASSIGN_OR_RETURN(const float ms, stop.elapsed_ms_since(start));
    return ms / kIterations;
  };
  FOVEA_ASSIGN_OR_RETURN(const float whole_ms, time(whole));
  FOVEA_ASSIGN_OR_RETURN(const float nms_ms, time(nms_only));  // the workspace holds the last decode

  std::vector<std::int32_t> counts(kBatch);
  FOVEA_CUDA_TRY(
      cudaMemcpy(counts.data(), d_counts, counts.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
  int total = 0;
  for (int c : counts) total += c;
  std::printf(
      "detect_post_bench: SSD300 %s, batch %d x %d anchors x %d classes, score > %.2f, %d per class, "
      "IoU %.2f, top-%d\n",
      fp16 ? "fp16" : "fp32", kBatch, kAnchors, kClasses, static_cast<double>(config.params.score_threshold),
      config.params.max_candidates_per_class, static_cast<double>(config.params.iou_threshold),
      config.params.top_k);
  std::printf("workspace %.1f MiB; detections %d (%.1f per frame)\n",
              static_cast<double>(plan.workspace_bytes) / (1 << 20), total,
              static_cast<double>(total) / kBatch);
  std::printf(
      "decode + NMS: %.4f ms per batch (mean of %d, CUDA events); NMS alone %.4f ms, decode %.4f ms\n",
      static_cast<double>(whole_ms), kIterations, static_cast<double>(nms_ms),
      static_cast<double>(whole_ms - nms_ms));
  std::printf("target (issue 19): <= 1 ms per batch: %s\n", whole_ms <= 1.0f ? "met" : "MISSED");
  for (void* p : {d_loc, d_logits, static_cast<void*>(d_priors), static_cast<void*>(d_workspace),
                  static_cast<void*>(d_detections), static_cast<void*>(d_counts)}) {
    cudaFree(p);
  }
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  const bool fp16 = argc > 1 && std::strcmp(argv[1], "--fp16") == 0;
  const Status status = run(fp16);
  if (!status.is_ok()) {
    std::fprintf(stderr, "detect_post_bench: %s\n", status.to_string().c_str());
    return 1;
  }
  return 0;
}
