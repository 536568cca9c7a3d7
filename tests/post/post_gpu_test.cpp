// CUDA vs CPU reference for every src/post op on random inputs: NMS must match exactly (same
// detections, order and bits), argmax and masks exactly, decoders and softmax within the tolerance
// table.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/check.h"
#include "core/cuda_raii.h"
#include "core/cuda_stream.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"
#include "post/box_decode.h"
#include "post/class_map.h"
#include "post/class_mask.h"
#include "post/classify.h"
#include "post/nms.h"
#include "runtime/tensor.h"

namespace fovea::post {
namespace {

using image::testing::DeviceImage;
using image::testing::HostImage;

// Device memory for the test's lifetime; run_* calls use the legacy default stream (nullptr).
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    void* data = nullptr;
    FOVEA_CHECK(cudaMalloc(&data, std::max<std::size_t>(count, 1) * sizeof(T)) == cudaSuccess);
    data_ = static_cast<T*>(data);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    FOVEA_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) ==
                cudaSuccess);
    // The copy may return before its DMA lands; the ops run on streams not ordered after it.
    FOVEA_CHECK(cudaDeviceSynchronize() == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return data_; }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    FOVEA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

void sync() {
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

std::uint32_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Boxes clustered around a few objects (many overlaps near any IoU), exact duplicates, zero-area
// and swapped boxes; scores quantized to 1/32 so ties are common; some NaN and infinities.
struct NmsInput {
  std::vector<float> boxes, scores;
};
NmsInput random_nms_input(const NmsShape& shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  NmsInput in;
  for (int n = 0; n < shape.batch; ++n) {
    std::vector<Box> objects(12);
    for (Box& o : objects) {
      const float x = unit(rng) * 500, y = unit(rng) * 500;
      o = Box{x, y, x + 20 + unit(rng) * 100, y + 20 + unit(rng) * 100};
    }
    for (int b = 0; b < shape.boxes; ++b) {
      const Box& o = objects[rng() % objects.size()];
      const float j = 8.0f;
      Box box{o.x1 + (unit(rng) - 0.5f) * j, o.y1 + (unit(rng) - 0.5f) * j, o.x2 + (unit(rng) - 0.5f) * j,
              o.y2 + (unit(rng) - 0.5f) * j};
      const auto kind = static_cast<unsigned>(rng() % 50);
      if (kind == 0 && b > 0) {
        std::copy_n(in.boxes.end() - 4, 4, reinterpret_cast<float*>(&box));  // duplicate the previous box
      } else if (kind == 1) {
        box.x2 = box.x1;  // zero width
      } else if (kind == 2) {
        std::swap(box.x1, box.x2);
      }
      in.boxes.insert(in.boxes.end(), {box.x1, box.y1, box.x2, box.y2});
      for (int c = 0; c < shape.classes; ++c) {
        float s = std::floor(unit(rng) * unit(rng) * 32.0f) / 32.0f;
        const auto special = static_cast<unsigned>(rng() % 400);
        if (special == 0) s = std::nanf("");
        if (special == 1) s = std::numeric_limits<float>::infinity();
        if (special == 2) s = -std::numeric_limits<float>::infinity();
        in.scores.push_back(s);
      }
    }
  }
  return in;
}

// `in_graph`: the run is captured into a CUDA graph and replayed, which fails if it reads device
// memory on the host or synchronizes (no host round trip).
void expect_same_nms(const NmsShape& shape, const NmsParams& params, std::uint32_t seed,
                     bool in_graph = false) {
  const NmsInput in = random_nms_input(shape, seed);
  const std::size_t capacity = static_cast<std::size_t>(shape.batch) * params.top_k;
  std::vector<Detection> cpu(capacity);
  std::vector<std::int32_t> cpu_counts(static_cast<std::size_t>(shape.batch));
  ASSERT_TRUE(
      run_nms_cpu(shape, params, in.boxes.data(), in.scores.data(), {cpu.data(), cpu_counts.data()}).is_ok());

  auto plan = plan_nms(shape, params);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  DeviceBuffer<float> d_boxes(in.boxes), d_scores(in.scores);
  DeviceBuffer<std::uint8_t> workspace(plan->workspace_bytes);
  DeviceBuffer<Detection> d_detections(capacity);
  DeviceBuffer<std::int32_t> d_counts(static_cast<std::size_t>(shape.batch));
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const auto run = [&] {
    return run_nms_cuda(stream->get(), shape, params, d_boxes.get(), d_scores.get(), workspace.get(),
                        plan->workspace_bytes, {d_detections.get(), d_counts.get()});
  };
  if (in_graph) {
    auto graph = CudaGraph::capture(stream->get(), run);
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    ASSERT_TRUE(graph->launch(stream->get()).is_ok());
  } else {
    const Status status = run();
    ASSERT_TRUE(status.is_ok()) << status.to_string();
  }
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  std::vector<Detection> gpu(capacity);
  std::vector<std::int32_t> gpu_counts(static_cast<std::size_t>(shape.batch));
  ASSERT_TRUE(copy_detections_to_host(nullptr, shape, params, {d_detections.get(), d_counts.get()},
                                      {gpu.data(), gpu_counts.data()})
                  .is_ok());
  sync();
  ASSERT_EQ(gpu_counts, cpu_counts);
  for (int n = 0; n < shape.batch; ++n) {
    for (int i = 0; i < cpu_counts[static_cast<std::size_t>(n)]; ++i) {
      const auto k = static_cast<std::size_t>(n * params.top_k + i);
      const Detection &a = cpu[k], &b = gpu[k];
      ASSERT_EQ(a.image, b.image) << "image " << n << " rank " << i;
      ASSERT_EQ(a.class_id, b.class_id) << "image " << n << " rank " << i;
      ASSERT_EQ(a.box_index, b.box_index) << "image " << n << " rank " << i;
      ASSERT_EQ(float_bits(a.score), float_bits(b.score));
      ASSERT_EQ(std::memcmp(&a.box, &b.box, sizeof(Box)), 0);
    }
  }
}

TEST(NmsGpu, MatchesReferenceBatch1) {
  FOVEA_REQUIRE_GPU();
  expect_same_nms({1, 777, 5}, NmsParams{}, 1);
}

TEST(NmsGpu, MatchesReferenceBatchWithBackgroundAndSmallTopK) {
  FOVEA_REQUIRE_GPU();
  NmsParams params;
  params.background_class = 0;
  params.top_k = 37;
  params.iou_threshold = 0.45f;
  expect_same_nms({4, 1301, 9}, params, 2);
}

TEST(NmsGpu, MatchesReferenceWhenTheCandidateCapBinds) {
  FOVEA_REQUIRE_GPU();
  NmsParams params;
  params.max_candidates_per_class = 70;  // not a multiple of 64: a partial last mask word
  params.score_threshold = 0.0f;
  expect_same_nms({3, 500, 4}, params, 3);
}

TEST(NmsGpu, MatchesReferenceAtTheSsd300Shape) {
  FOVEA_REQUIRE_GPU();
  NmsParams params;
  params.background_class = 0;
  expect_same_nms({16, 8732, 81}, params, 4);
}

// 16 x 81 segments: CUB's DeviceSegmentedSort would copy its partition sizes to the host here.
TEST(NmsGpu, RunsInACudaGraphWithNoHostRoundTrip) {
  FOVEA_REQUIRE_GPU();
  NmsParams params;
  params.background_class = 0;
  expect_same_nms({16, 2000, 81}, params, 6, true);
}

TEST(NmsGpu, MatchesReferenceWithManyCandidatesPerClass) {
  FOVEA_REQUIRE_GPU();
  NmsParams params;
  params.score_threshold = -1.0f;  // every finite score passes: segments of 3000 (large sort path)
  params.max_candidates_per_class = 3000;
  params.top_k = 500;
  expect_same_nms({2, 3000, 2}, params, 5);
}

template <typename T>
std::vector<T> random_values(std::size_t count, std::uint32_t seed, float lo, float hi);
template <>
std::vector<float> random_values<float>(std::size_t count, std::uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}
template <>
std::vector<runtime::Half> random_values<runtime::Half>(std::size_t count, std::uint32_t seed, float lo,
                                                        float hi) {
  std::vector<runtime::Half> v;
  for (float x : random_values<float>(count, seed, lo, hi)) v.push_back(runtime::float_to_half(x));
  return v;
}

template <typename T>
constexpr DataType dtype_of = std::is_same_v<T, float> ? DataType::kFloat32 : DataType::kFloat16;

template <typename T>
void expect_same_ssd_decode(PriorForm form) {
  const int batch = 3, boxes = 1001;
  const auto loc = random_values<T>(batch * boxes * 4, 11, -2.0f, 2.0f);
  auto priors = random_values<float>(boxes * 4, 12, 0.1f, 0.6f);
  SsdDecodeParams params;
  params.prior_form = form;
  params.image_width = 640;
  params.image_height = 480;
  std::vector<float> cpu(loc.size());
  auto view = [](const void* p, DataType d, MemoryKind m, std::initializer_list<std::int64_t> s) {
    return contiguous_tensor(const_cast<void*>(p), d, m, s);
  };
  ASSERT_TRUE(run_ssd_decode_cpu(view(loc.data(), dtype_of<T>, MemoryKind::kHost, {batch, boxes, 4}),
                                 view(priors.data(), DataType::kFloat32, MemoryKind::kHost, {boxes, 4}),
                                 params,
                                 view(cpu.data(), DataType::kFloat32, MemoryKind::kHost, {batch, boxes, 4}))
                  .is_ok());
  DeviceBuffer<T> d_loc(loc);
  DeviceBuffer<float> d_priors(priors), d_out(cpu.size());
  ASSERT_TRUE(
      run_ssd_decode_cuda(nullptr, view(d_loc.get(), dtype_of<T>, MemoryKind::kDevice, {batch, boxes, 4}),
                          view(d_priors.get(), DataType::kFloat32, MemoryKind::kDevice, {boxes, 4}), params,
                          view(d_out.get(), DataType::kFloat32, MemoryKind::kDevice, {batch, boxes, 4}))
          .is_ok());
  const std::vector<float> gpu = d_out.download();
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_NEAR(gpu[i], cpu[i], image::testing::kBoxTolerance) << i;
  }
}

TEST(BoxDecodeGpu, SsdMatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same_ssd_decode<float>(PriorForm::kCenter);
  expect_same_ssd_decode<runtime::Half>(PriorForm::kCorner);
}

template <typename T>
void expect_same_yolo_decode(bool objectness, bool sigmoid) {
  const int batch = 2, boxes = 1313, classes = 7, columns = (objectness ? 5 : 4) + classes;
  // Stored as YOLOv8's [N, columns, B] and read transposed.
  const auto raw = random_values<T>(static_cast<std::size_t>(batch * boxes * columns), 21, -3.0f, 3.0f);
  YoloDecodeParams params;
  params.has_objectness = objectness;
  params.apply_sigmoid = sigmoid;
  params.scale_x = 640;
  params.scale_y = 384;
  auto pred_view = [&](const void* p, MemoryKind m) {
    TensorView v = contiguous_tensor(const_cast<void*>(p), dtype_of<T>, m, {batch, boxes, columns});
    v.strides = {static_cast<std::int64_t>(columns) * boxes, 1, boxes};
    return v;
  };
  std::vector<float> cpu_boxes(static_cast<std::size_t>(batch * boxes * 4)),
      cpu_scores(static_cast<std::size_t>(batch * boxes * classes));
  ASSERT_TRUE(run_yolo_decode_cpu(pred_view(raw.data(), MemoryKind::kHost), params,
                                  contiguous_tensor(cpu_boxes.data(), DataType::kFloat32, MemoryKind::kHost,
                                                    {batch, boxes, 4}),
                                  contiguous_tensor(cpu_scores.data(), DataType::kFloat32, MemoryKind::kHost,
                                                    {batch, boxes, classes}))
                  .is_ok());
  DeviceBuffer<T> d_raw(raw);
  DeviceBuffer<float> d_boxes(cpu_boxes.size()), d_scores(cpu_scores.size());
  ASSERT_TRUE(
      run_yolo_decode_cuda(
          nullptr, pred_view(d_raw.get(), MemoryKind::kDevice), params,
          contiguous_tensor(d_boxes.get(), DataType::kFloat32, MemoryKind::kDevice, {batch, boxes, 4}),
          contiguous_tensor(d_scores.get(), DataType::kFloat32, MemoryKind::kDevice, {batch, boxes, classes}))
          .is_ok());
  const auto gpu_boxes = d_boxes.download();
  const auto gpu_scores = d_scores.download();
  for (std::size_t i = 0; i < cpu_boxes.size(); ++i)
    ASSERT_NEAR(gpu_boxes[i], cpu_boxes[i], image::testing::kBoxTolerance);
  for (std::size_t i = 0; i < cpu_scores.size(); ++i)
    ASSERT_NEAR(gpu_scores[i], cpu_scores[i], image::testing::kF32Tolerance);
}

TEST(BoxDecodeGpu, YoloMatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same_yolo_decode<float>(true, false);
  expect_same_yolo_decode<float>(false, true);
  expect_same_yolo_decode<runtime::Half>(true, true);
}

template <typename T>
void expect_same_classify(int batch, int classes, int top_k) {
  const auto logits = random_values<T>(static_cast<std::size_t>(batch * classes), 31, -8.0f, 8.0f);
  auto run = [&](bool gpu) {
    const MemoryKind m = gpu ? MemoryKind::kDevice : MemoryKind::kHost;
    std::vector<float> probs(static_cast<std::size_t>(batch * classes)),
        top_probs(static_cast<std::size_t>(batch * top_k));
    std::vector<std::int32_t> indices(static_cast<std::size_t>(batch * top_k));
    DeviceBuffer<T> d_logits(logits);
    DeviceBuffer<float> d_probs(probs.size()), d_top_probs(top_probs.size());
    DeviceBuffer<std::int32_t> d_indices(indices.size());
    const ClassifyOutputs out{
        contiguous_tensor(gpu ? d_probs.get() : probs.data(), DataType::kFloat32, m, {batch, classes}),
        contiguous_tensor(gpu ? d_indices.get() : indices.data(), DataType::kInt32, m, {batch, top_k}),
        contiguous_tensor(gpu ? d_top_probs.get() : top_probs.data(), DataType::kFloat32, m, {batch, top_k})};
    const TensorView in =
        contiguous_tensor(gpu ? static_cast<void*>(d_logits.get()) : const_cast<T*>(logits.data()),
                          dtype_of<T>, m, {batch, classes});
    const Status status = gpu ? run_classify_cuda(nullptr, in, ClassifyParams{top_k}, out)
                              : run_classify_cpu(in, ClassifyParams{top_k}, out);
    EXPECT_TRUE(status.is_ok()) << status.to_string();
    if (gpu) {
      probs = d_probs.download();
      top_probs = d_top_probs.download();
      indices = d_indices.download();
    }
    return std::make_tuple(probs, indices, top_probs);
  };
  const auto [cpu_probs, cpu_indices, cpu_top] = run(false);
  const auto [gpu_probs, gpu_indices, gpu_top] = run(true);
  EXPECT_EQ(gpu_indices, cpu_indices);
  for (std::size_t i = 0; i < cpu_probs.size(); ++i)
    ASSERT_NEAR(gpu_probs[i], cpu_probs[i], image::testing::kF32Tolerance);
  for (std::size_t i = 0; i < cpu_top.size(); ++i)
    ASSERT_NEAR(gpu_top[i], cpu_top[i], image::testing::kF32Tolerance);
}

TEST(ClassifyGpu, MatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same_classify<float>(1, 1000, 5);
  expect_same_classify<float>(7, 13, 13);
  expect_same_classify<runtime::Half>(5, 1001, 10);  // float16: many equal logits, ties by index
}

template <typename T>
void expect_same_class_map(ChannelLayout layout) {
  const int batch = 3, classes = 21, height = 13, width = 127;
  // Quantized scores: equal maxima are common.
  auto scores =
      random_values<float>(static_cast<std::size_t>(batch * classes * height * width), 41, 0.0f, 8.0f);
  std::vector<T> typed;
  for (float& s : scores) {
    s = std::floor(s);
    if constexpr (std::is_same_v<T, float>) {
      typed.push_back(s);
    } else {
      typed.push_back(runtime::float_to_half(s));
    }
  }
  const bool nchw = layout == ChannelLayout::kNCHW;
  // A view per layout (an initializer_list chosen by ?: would dangle: its array dies with the
  // full expression).
  auto scores_view = [&](void* data, MemoryKind memory) {
    return nchw ? contiguous_tensor(data, dtype_of<T>, memory, {batch, classes, height, width})
                : contiguous_tensor(data, dtype_of<T>, memory, {batch, height, width, classes});
  };
  std::deque<HostImage> cpu_maps;
  std::deque<DeviceImage> gpu_maps;
  image::ImageBatch cpu_batch, gpu_batch;
  for (int n = 0; n < batch; ++n) {
    cpu_maps.emplace_back(PixelFormat::kGRAY8, width, height, 3, 7);
    gpu_maps.emplace_back(PixelFormat::kGRAY8, width, height);
  }
  for (int n = 0; n < batch; ++n) {
    cpu_batch.images.push_back(cpu_maps[static_cast<std::size_t>(n)].view());
    gpu_batch.images.push_back(gpu_maps[static_cast<std::size_t>(n)].view());
  }
  ASSERT_TRUE(
      run_class_map_cpu(scores_view(typed.data(), MemoryKind::kHost), ClassMapParams{layout}, cpu_batch)
          .is_ok());
  DeviceBuffer<T> d_scores(typed);
  ASSERT_TRUE(run_class_map_cuda(nullptr, scores_view(d_scores.get(), MemoryKind::kDevice),
                                 ClassMapParams{layout}, gpu_batch)
                  .is_ok());
  sync();
  for (int n = 0; n < batch; ++n) {
    EXPECT_EQ(image::testing::max_abs_difference(cpu_maps[static_cast<std::size_t>(n)].view(),
                                                 gpu_maps[static_cast<std::size_t>(n)].download().view()),
              0.0);
  }
}

TEST(ClassMapGpu, MatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same_class_map<float>(ChannelLayout::kNCHW);
  expect_same_class_map<runtime::Half>(ChannelLayout::kNHWC);
}

void expect_same_class_mask(MaskInterpolation interpolation) {
  // Maps of different sizes, masks of different (odd) sizes, one stretched, one letterboxed, one cropped.
  const std::vector<std::array<int, 4>> sizes = {{13, 9, 127, 13}, {40, 30, 641, 359}, {33, 33, 96, 54}};
  std::deque<HostImage> maps, cpu_masks;
  std::deque<DeviceImage> d_maps, d_masks;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [mw, mh, fw, fh] = sizes[i];
    maps.emplace_back(PixelFormat::kGRAY8, mw, mh, 3, 5);
    maps.back().fill_random(static_cast<std::uint32_t>(51 + i));
    for (int y = 0; y < mh; ++y) {
      for (int x = 0; x < mw; ++x) maps.back().view().row(0, y)[x] %= 4;  // 4 classes: large regions
    }
    cpu_masks.emplace_back(PixelFormat::kGRAY8, fw, fh, 3, 3);
    d_maps.emplace_back(PixelFormat::kGRAY8, mw, mh);
    d_maps.back().upload(maps.back());
    d_masks.emplace_back(PixelFormat::kGRAY8, fw, fh);
  }
  image::ImageBatch map_batch, mask_batch, d_map_batch, d_mask_batch;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    map_batch.images.push_back(maps[i].view());
    mask_batch.images.push_back(cpu_masks[i].view());
    d_map_batch.images.push_back(d_maps[i].view());
    d_mask_batch.images.push_back(d_masks[i].view());
  }
  ClassMaskParams params;
  params.classes = {1, 3};
  params.interpolation = interpolation;
  params.mappings = {stretch_mask_mapping(127, 13, 13, 9),
                     preprocess_mask_mapping({0, 0, 641, 359}, 0.5f, 0.5f, 0.0f, 20.0f, 320, 320, 40, 30),
                     preprocess_mask_mapping({10, 5, 60, 40}, 1.5f, 2.0f, 3.0f, 1.0f, 99, 99, 33, 33)};
  ASSERT_TRUE(run_class_mask_cpu(map_batch, params, mask_batch).is_ok());
  ASSERT_TRUE(run_class_mask_cuda(nullptr, d_map_batch, params, d_mask_batch).is_ok());
  sync();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(image::testing::max_abs_difference(cpu_masks[i].view(), d_masks[i].download().view()), 0.0)
        << i;
  }
}

TEST(ClassMaskGpu, MatchesReference) {
  FOVEA_REQUIRE_GPU();
  expect_same_class_mask(MaskInterpolation::kNearest);
  expect_same_class_mask(MaskInterpolation::kBilinear);
}

}  // namespace
}  // namespace fovea::post
