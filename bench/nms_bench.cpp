// Batched NMS at the SSD300 shape (16 images x 8,732 boxes x 81 classes, class 0 background; score
// threshold 0.05, IoU 0.5, top-200), timed with CUDA events over the whole run_nms_cuda path
// (threshold → per-class NMS → top-k). bench/nms_torch.py is the torchvision peer: it loads the
// same input from the .npy files this program writes and compares its detections with fovea's.
//
//   nms_bench [DIR]   # writes DIR/nms_boxes.npy, nms_scores.npy, nms_fovea.npy (default DIR: .)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "post/nms.h"
#include "runtime/npy.h"

namespace {

using namespace fovea;

constexpr post::NmsShape kShape{16, 8732, 81};
constexpr int kWarmup = 20;
constexpr int kIterations = 200;

// SSD-like input: per image 5-40 objects with a class; 70% of the boxes jitter around an object,
// the rest lie anywhere. Scores are a softmax over 81 logits: noise N(0, 1), background +4 (so most
// class probabilities stay below 0.05, as in a trained SSD), and the object's class +2..8 on boxes
// near it, more the closer the box.
struct Input {
  std::vector<float> boxes, scores;
};

Input make_input(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  Input in;
  std::vector<float> logits(kShape.classes);
  for (int n = 0; n < kShape.batch; ++n) {
    struct Object {
      float x1, y1, x2, y2;
      int cls;
    };
    std::vector<Object> objects(5 + rng() % 36);
    for (Object& o : objects) {
      const float w = 0.05f + unit(rng) * 0.5f, h = 0.05f + unit(rng) * 0.5f;
      const float x = unit(rng) * (1 - w), y = unit(rng) * (1 - h);
      o = Object{x, y, x + w, y + h, 1 + static_cast<int>(rng() % 80)};
    }
    for (int b = 0; b < kShape.boxes; ++b) {
      const bool near_object = unit(rng) < 0.7f;
      const Object& o = objects[rng() % objects.size()];
      float x1, y1, x2, y2, closeness = 0.0f;
      if (near_object) {
        const float jitter = 0.3f * unit(rng), w = o.x2 - o.x1, h = o.y2 - o.y1;
        x1 = o.x1 + (unit(rng) - 0.5f) * jitter * w;
        y1 = o.y1 + (unit(rng) - 0.5f) * jitter * h;
        x2 = o.x2 + (unit(rng) - 0.5f) * jitter * w;
        y2 = o.y2 + (unit(rng) - 0.5f) * jitter * h;
        closeness = 1.0f - jitter / 0.3f;
      } else {
        const float w = 0.02f + unit(rng) * 0.6f, h = 0.02f + unit(rng) * 0.6f;
        x1 = unit(rng) * (1 - w);
        y1 = unit(rng) * (1 - h);
        x2 = x1 + w;
        y2 = y1 + h;
      }
      // Pixels of a 300x300 input, as SSD300's decoded boxes.
      in.boxes.insert(in.boxes.end(), {x1 * 300, y1 * 300, x2 * 300, y2 * 300});
      for (float& l : logits) l = noise(rng);
      logits[0] += 4.0f;
      if (near_object) logits[static_cast<std::size_t>(o.cls)] += 2.0f + 6.0f * closeness;
      const float max = *std::max_element(logits.begin(), logits.end());
      float sum = 0.0f;
      for (float& l : logits) sum += (l = std::exp(l - max));
      for (float l : logits) in.scores.push_back(l / sum);
    }
  }
  return in;
}

Status save(const std::filesystem::path& path, std::vector<float>& data, runtime::Shape shape) {
  return runtime::write_npy(path, runtime::Tensor::borrow(DataType::kFloat32, std::move(shape), data.data()));
}

template <typename T>
T* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  return cudaMalloc(&p, bytes) == cudaSuccess ? static_cast<T*>(p) : nullptr;
}

Status run(const std::filesystem::path& dir) {
  post::NmsParams params;
  params.score_threshold = 0.05f;
  params.iou_threshold = 0.5f;
  params.top_k = 200;
  params.background_class = 0;
  // torchvision's batched_nms, the peer, keeps every candidate; a cap above the busiest class of
  // this input (about 2,200) makes both compute the same NMS.
  params.max_candidates_per_class = 4096;
  Input in = make_input(2024);

  // How many candidates a class gets, to show whether max_candidates_per_class changed anything.
  int max_per_class = 0;
  long total_candidates = 0;
  for (int n = 0; n < kShape.batch; ++n) {
    for (int c = 1; c < kShape.classes; ++c) {
      int count = 0;
      for (int b = 0; b < kShape.boxes; ++b) {
        count += in.scores[(static_cast<std::size_t>(n) * kShape.boxes + b) * kShape.classes + c] >
                 params.score_threshold;
      }
      max_per_class = std::max(max_per_class, count);
      total_candidates += count;
    }
  }

  FOVEA_ASSIGN_OR_RETURN(const post::NmsPlan plan, post::plan_nms(kShape, params));
  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  FOVEA_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create(true));
  auto* d_boxes = device_alloc<float>(in.boxes.size() * sizeof(float));
  auto* d_scores = device_alloc<float>(in.scores.size() * sizeof(float));
  auto* d_workspace = device_alloc<void>(plan.workspace_bytes);
  const std::size_t capacity = static_cast<std::size_t>(kShape.batch) * params.top_k;
  auto* d_detections = device_alloc<post::Detection>(capacity * sizeof(post::Detection));
  auto* d_counts = device_alloc<std::int32_t>(kShape.batch * sizeof(std::int32_t));
  if (!d_boxes || !d_scores || !d_workspace || !d_detections || !d_counts) {
    return make_error(StatusCode::kResourceExhausted, "cudaMalloc failed");
  }
  FOVEA_CUDA_TRY(
      cudaMemcpy(d_boxes, in.boxes.data(), in.boxes.size() * sizeof(float), cudaMemcpyHostToDevice));
  FOVEA_CUDA_TRY(
      cudaMemcpy(d_scores, in.scores.data(), in.scores.size() * sizeof(float), cudaMemcpyHostToDevice));
  const post::DetectionList output{d_detections, d_counts};
  auto once = [&] {
    return post::run_nms_cuda(stream.get(), kShape, params, d_boxes, d_scores, d_workspace,
                              plan.workspace_bytes, output);
  };
  for (int i = 0; i < kWarmup; ++i) FOVEA_TRY(once());
  FOVEA_TRY(start.record(stream.get()));
  for (int i = 0; i < kIterations; ++i) FOVEA_TRY(once());
  FOVEA_TRY(stop.record(stream.get()));
  FOVEA_TRY(stop.synchronize());
  FOVEA_ASSIGN_OR_RETURN(const float total_ms, stop.elapsed_ms_since(start));

  std::vector<post::Detection> detections(capacity);
  std::vector<std::int32_t> counts(kShape.batch);
  FOVEA_CUDA_TRY(cudaMemcpy(detections.data(), d_detections, capacity * sizeof(post::Detection),
                            cudaMemcpyDeviceToHost));
  FOVEA_CUDA_TRY(
      cudaMemcpy(counts.data(), d_counts, counts.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
  std::vector<float> kept;  // rows: image, class, box index, score, x1, y1, x2, y2
  for (int n = 0; n < kShape.batch; ++n) {
    for (int i = 0; i < counts[static_cast<std::size_t>(n)]; ++i) {
      const post::Detection& d = detections[static_cast<std::size_t>(n) * params.top_k + i];
      kept.insert(kept.end(),
                  {static_cast<float>(d.image), static_cast<float>(d.class_id),
                   static_cast<float>(d.box_index), d.score, d.box.x1, d.box.y1, d.box.x2, d.box.y2});
    }
  }
  FOVEA_TRY(save(dir / "nms_boxes.npy", in.boxes, {kShape.batch, kShape.boxes, 4}));
  FOVEA_TRY(save(dir / "nms_scores.npy", in.scores, {kShape.batch, kShape.boxes, kShape.classes}));
  FOVEA_TRY(save(dir / "nms_fovea.npy", kept, {static_cast<std::int64_t>(kept.size() / 8), 8}));
  cudaFree(d_boxes);
  cudaFree(d_scores);
  cudaFree(d_workspace);
  cudaFree(d_detections);
  cudaFree(d_counts);

  std::printf(
      "nms_bench: batch %d x %d boxes x %d classes (background 0), threshold %.2f, IoU %.2f, top-%d\n",
      kShape.batch, kShape.boxes, kShape.classes, static_cast<double>(params.score_threshold),
      static_cast<double>(params.iou_threshold), params.top_k);
  std::printf("candidates: %ld in all, at most %d per (image, class); cap %d (%s)\n", total_candidates,
              max_per_class, params.max_candidates_per_class,
              max_per_class > params.max_candidates_per_class ? "BINDS: results differ from uncapped NMS"
                                                              : "does not bind");
  std::printf("workspace: %.1f MiB; detections: %zu\n", static_cast<double>(plan.workspace_bytes) / (1 << 20),
              kept.size() / 8);
  std::printf("fovea nms: %.4f ms per batch (mean of %d, CUDA events)\n",
              static_cast<double>(total_ms) / kIterations, kIterations);
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : ".";
  const Status status = run(dir);
  if (!status.is_ok()) {
    std::fprintf(stderr, "nms_bench: %s\n", status.to_string().c_str());
    return 1;
  }
  return 0;
}
