// The demo detection model: fovea writes it, loads and plans it like any model, and on rendered
// synthetic frames the `boxes` parser's detections (fovea's CPU postprocess) are the clip's objects,
// each with its class and its box.
#include "runtime/demo_detector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "core/box.h"
#include "image/color_convert.h"
#include "image/resize.h"
#include "io/decoder.h"
#include "io/demuxer.h"
#include "io/synthetic_clip.h"
#include "post/detect_post.h"
#include "runtime/cpu_executor.h"
#include "runtime/onnx_loader.h"
#include "runtime/planner.h"
#include "support/test_media.h"

namespace fovea::runtime {
namespace {

// The clip and the model are two halves of one contract (see both headers).
static_assert(io::kSyntheticSubjectMinHueMargin == kDemoDetectorMinHueMargin);
static_assert(io::kSyntheticBackgroundMaxColorfulness == kDemoDetectorBackgroundMaxHueMargin);
static_assert(io::kSyntheticRedClass == kDemoDetectorRedClass);
static_assert(io::kSyntheticGreenClass == kDemoDetectorGreenClass);
static_assert(io::kSyntheticBlueClass == kDemoDetectorBlueClass);

constexpr std::uint32_t kSeed = 11;
// A detection matches its object at IoU >= 0.9: unlike a pixel distance, this holds the same in
// network-input and frame pixels (the resized test maps boxes back to the 1080p frame), and on the
// smallest object (54 pixels at 480x272) it fails a box with one side 6 pixels off or every side 2
// pixels off (IoU 0.86), while the header's expected error, one pixel on a side, gives 0.98.
constexpr float kMinIou = 0.9f;
// The boxes parser's own default (default_detect_params(kBoxes)): a cell inside an object scores
// 1, and a false speck would need a quarter of a cell (64 of its 256 pixels) to count.
constexpr float kScoreThreshold = 0.25f;

// Frames 0, 51, 82 and 45 have overlapping shapes at both sizes (a later shape covers part of an
// earlier one); 29 and 74 have them apart.
constexpr int kFrames[] = {0, 29, 51, 74, 82, 45};

// kRGB8 frames as the model's input: [N, 3, H, W], RGB scaled to [0, 1] (mean 0, std 1).
Tensor input_tensor(const std::vector<Frame>& frames) {
  const int w = frames[0].image.width;
  const int h = frames[0].image.height;
  const auto n = static_cast<std::int64_t>(frames.size());
  Tensor tensor = Tensor::allocate(DataType::kFloat32, {n, 3, h, w});
  float* out = tensor.data<float>();
  const std::size_t plane = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* row = frames[i].image.row(0, y);
      for (int x = 0; x < w; ++x) {
        for (int c = 0; c < 3; ++c) {
          out[(3 * i + static_cast<std::size_t>(c)) * plane + static_cast<std::size_t>(y) * w + x] =
              (row[3 * x + c] / 255.0f - kDemoDetectorMean[c]) / kDemoDetectorStd[c];
        }
      }
    }
  }
  return tensor;
}

// An empty kRGB8 host frame, for conversions to write into.
Frame rgb_frame(int width, int height) {
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kRGB8, width, height);
  EXPECT_TRUE(allocation.is_ok());
  auto storage = std::make_shared<std::vector<std::uint8_t>>(allocation->total_bytes);
  Frame frame;
  frame.image =
      image_view_in(storage->data(), *allocation, PixelFormat::kRGB8, width, height, MemoryKind::kHost);
  frame.owner = storage;
  return frame;
}

Result<std::unique_ptr<CpuExecutor>> make_executor(int batch, int width, int height,
                                                   Precision precision = Precision::kFloat32) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, demo_detection_model());
  FOVEA_ASSIGN_OR_RETURN(Model model, parse_onnx(bytes, "demo_detector.onnx", {}));
  FOVEA_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_graph(model.graph, {{"input", {batch, 3, height, width}}},
                                                        PlanOptions{.precision = precision}));
  return std::make_unique<CpuExecutor>(std::move(plan));
}

post::OutputInfo output_info(const std::string& name, const Tensor& tensor) {
  return post::OutputInfo{name, std::vector<std::int64_t>(tensor.shape().begin(), tensor.shape().end()),
                          DataType::kFloat32};
}

TensorView host_view(const Tensor& tensor) {
  return contiguous_tensor(const_cast<void*>(tensor.raw()), DataType::kFloat32, MemoryKind::kHost,
                           {tensor.dim(0), tensor.dim(1), tensor.dim(2)});
}

// The model's outputs through fovea's CPU detection postprocess (`boxes` parser, NMS IoU 0.5),
// each frame's boxes mapped by `mapping`; per frame, its detections.
Result<std::vector<std::vector<post::Detection>>> detect(const std::vector<Tensor>& outputs, int input_width,
                                                         int input_height,
                                                         const post::FrameMapping& mapping) {
  post::DetectPostConfig config;
  config.parser = post::DetectParser::kBoxes;
  config.options.input_width = input_width;
  config.options.input_height = input_height;
  config.params = post::default_detect_params(post::DetectParser::kBoxes);
  config.params.score_threshold = kScoreThreshold;
  config.params.iou_threshold = 0.5f;
  const std::vector<post::OutputInfo> infos = {output_info("boxes", outputs[0]),
                                               output_info("scores", outputs[1])};
  FOVEA_ASSIGN_OR_RETURN(post::DetectPostPlan plan,
                         post::plan_detect_post(config, infos, post::DetectDevice::kCpu));
  const auto batch = static_cast<std::size_t>(outputs[0].dim(0));
  const std::vector<TensorView> views = {host_view(outputs[0]), host_view(outputs[1])};
  const std::vector<post::FrameMapping> mappings(batch, mapping);
  std::vector<post::Detection> detections(batch * static_cast<std::size_t>(plan.detections_per_image));
  std::vector<std::int32_t> counts(batch);
  FOVEA_TRY(post::run_detect_post_cpu(plan, {views, {}, mappings}, {detections.data(), counts.data()}));
  std::vector<std::vector<post::Detection>> per_frame(batch);
  for (std::size_t n = 0; n < batch; ++n) {
    const auto first = detections.begin() + static_cast<std::ptrdiff_t>(n) * plan.detections_per_image;
    per_frame[n].assign(first, first + counts[n]);
  }
  return per_frame;
}

// Every object found once with its class at IoU >= kMinIou, and nothing else; returns the lowest
// IoU.
float expect_objects(const std::vector<post::Detection>& detections,
                     const std::vector<io::SyntheticObject>& objects, const std::string& where) {
  EXPECT_EQ(detections.size(), objects.size()) << where;
  float lowest = 1.0f;
  for (const io::SyntheticObject& object : objects) {
    float best = 0.0f;
    for (const post::Detection& d : detections) {
      if (d.class_id == object.class_id) best = std::max(best, box_iou(d.box, object.box));
    }
    EXPECT_GE(best, kMinIou) << where << ": class " << object.class_id;
    lowest = std::min(lowest, best);
  }
  for (const post::Detection& d : detections) {
    bool matches = false;
    for (const io::SyntheticObject& object : objects) {
      matches = matches || (d.class_id == object.class_id && box_iou(d.box, object.box) >= kMinIou);
    }
    EXPECT_TRUE(matches) << where << ": false positive of class " << d.class_id << " at " << d.box.x1 << ","
                         << d.box.y1 << " " << d.box.x2 << "," << d.box.y2 << " score " << d.score;
  }
  return lowest;
}

TEST(DemoDetector, LoadsWithSymbolicDimsAndPlans) {
  const std::filesystem::path path =
      std::filesystem::path(fovea::testing::test_temp_dir()) / "demo_detector.onnx";
  ASSERT_TRUE(write_demo_detection_model(path).is_ok());
  Result<Model> model = load_onnx(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Graph& graph = model->graph;
  ASSERT_EQ(graph.inputs.size(), 1u);
  ASSERT_EQ(graph.outputs.size(), 2u);
  EXPECT_EQ(graph.value(graph.inputs[0]).name, "input");
  EXPECT_EQ(dims_string(*graph.value(graph.inputs[0]).type.dims), "[N, 3, H, W]");
  EXPECT_EQ(graph.value(graph.outputs[0]).name, "boxes");
  EXPECT_EQ(graph.value(graph.outputs[1]).name, "scores");
  for (ValueId out : graph.outputs) EXPECT_EQ(dims_string(*graph.value(out).type.dims), "[N, A, 4]");
  for (const auto& [height, width] : {std::pair{272, 480}, std::pair{37, 61}}) {
    Result<ExecutionPlan> plan = plan_graph(graph, {{"input", {2, 3, height, width}}});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    // 3 classes x ceil(H / s) x ceil(W / s) cells.
    const std::int64_t s = DemoDetectorOptions{}.cell_stride;
    const std::int64_t rows = 3 * ((height + s - 1) / s) * ((width + s - 1) / s);
    for (ValueId out : plan->graph.outputs) {
      EXPECT_EQ(shape_of(*plan->graph.value(out).type.dims), (Shape{2, rows, 4})) << height << "x" << width;
    }
  }
}

// At two network sizes, rendered at that size, two frames per batch.
TEST(DemoDetector, FindsEveryObjectOfTheSyntheticClip) {
  for (const auto& [width, height] : {std::pair{480, 272}, std::pair{640, 360}}) {
    Result<std::unique_ptr<CpuExecutor>> executor = make_executor(2, width, height);
    ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
    for (std::size_t i = 0; i + 1 < std::size(kFrames); i += 2) {
      const std::vector<int> indices = {kFrames[i], kFrames[i + 1]};
      std::vector<Frame> frames;
      for (int index : indices) frames.push_back(io::render_synthetic_rgb(index, width, height, kSeed));
      Result<std::vector<Tensor>> outputs = (*executor)->run({input_tensor(frames)});
      ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
      auto detections = detect(*outputs, width, height, post::stretch_mapping(width, height, width, height));
      ASSERT_TRUE(detections.is_ok()) << detections.status().to_string();
      for (std::size_t n = 0; n < indices.size(); ++n) {
        const std::string where =
            std::to_string(width) + "x" + std::to_string(height) + " frame " + std::to_string(indices[n]);
        const float iou =
            expect_objects((*detections)[n], io::ground_truth_boxes(indices[n], width, height), where);
        std::cout << where << ": lowest IoU " << iou << "\n";
      }
    }
  }
}

// The CUDA flow plans in float16 by default: the same frames through a float16 plan (weights and
// intermediates in float16; the coordinates up to kFar = 2048 are integers float16 holds exactly).
TEST(DemoDetector, FindsEveryObjectInFloat16) {
  constexpr int kWidth = kDemoDetectorInputWidth;
  constexpr int kHeight = kDemoDetectorInputHeight;
  Result<std::unique_ptr<CpuExecutor>> executor = make_executor(1, kWidth, kHeight, Precision::kFloat16);
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  for (int index : kFrames) {
    Result<std::vector<Tensor>> outputs =
        (*executor)->run({input_tensor({io::render_synthetic_rgb(index, kWidth, kHeight, kSeed)})});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    auto detections =
        detect(*outputs, kWidth, kHeight, post::stretch_mapping(kWidth, kHeight, kWidth, kHeight));
    ASSERT_TRUE(detections.is_ok()) << detections.status().to_string();
    const std::string where = "float16 frame " + std::to_string(index);
    const float iou = expect_objects((*detections)[0], io::ground_truth_boxes(index, kWidth, kHeight), where);
    std::cout << where << ": lowest IoU " << iou << "\n";
  }
}

// The demo's geometry: a 1080p frame resized to the 480x272 input as the flow's preprocess does it
// (bilinear, OpenCV's sampling, stretched), the boxes mapped back to the frame and scored against
// its own ground truth.
TEST(DemoDetector, FindsTheObjectsOfAResized1080pFrame) {
  constexpr int kFrameWidth = 1920;
  constexpr int kFrameHeight = 1080;
  constexpr int kInputWidth = kDemoDetectorInputWidth;
  constexpr int kInputHeight = kDemoDetectorInputHeight;
  Result<std::unique_ptr<CpuExecutor>> executor = make_executor(1, kInputWidth, kInputHeight);
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  for (int index : {51, 74}) {
    const Frame frame = io::render_synthetic_rgb(index, kFrameWidth, kFrameHeight, kSeed);
    const Frame input = rgb_frame(kInputWidth, kInputHeight);
    const Status resized =
        image::run_resize_cpu(image::ImageBatch{{frame.image}, {}}, image::ImageBatch{{input.image}, {}}, {});
    ASSERT_TRUE(resized.is_ok()) << resized.to_string();
    Result<std::vector<Tensor>> outputs = (*executor)->run({input_tensor({input})});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    auto detections = detect(*outputs, kInputWidth, kInputHeight,
                             post::stretch_mapping(kInputWidth, kInputHeight, kFrameWidth, kFrameHeight));
    ASSERT_TRUE(detections.is_ok()) << detections.status().to_string();
    const std::string where = "resized 1080p frame " + std::to_string(index);
    const float iou =
        expect_objects((*detections)[0], io::ground_truth_boxes(index, kFrameWidth, kFrameHeight), where);
    // `fovea demo detect` scores itself by corners (io::match_ground_truth, 8 frame pixels: two
    // input pixels at this scale).
    std::vector<io::SyntheticObject> found;
    for (const post::Detection& d : (*detections)[0]) found.push_back({d.class_id, d.box});
    const io::SyntheticMatch match = io::match_ground_truth(index, kFrameWidth, kFrameHeight, found);
    EXPECT_EQ(match.matched, match.objects) << where;
    std::cout << where << ": lowest IoU " << iou << ", corners within " << match.worst_corner_error
              << " frame pixels\n";
  }
}

// The demo clip itself: encoded by fovea's encoder (H.264, 4:2:0, crf 18), decoded by the CPU
// decoder and converted to RGB by fovea's color conversion (BT.601 limited range, nearest chroma),
// so that chroma is subsampled and compressed as in `fovea demo`.
Result<std::vector<Frame>> decoded_demo_clip(int width, int height, int frames) {
  io::SyntheticClipOptions clip;
  clip.width = width;
  clip.height = height;
  clip.frames = frames;
  clip.seed = kSeed;
  const std::string path = fovea::testing::test_temp_dir() + "/demo_detector_clip.mp4";
  FOVEA_TRY(io::write_synthetic_clip(path, clip));
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Demuxer> demuxer, io::Demuxer::open(path));
  io::DecoderOptions options;
  options.backend = io::DecoderBackend::kCpu;
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Decoder> decoder,
                         io::open_cpu_decoder(demuxer->info(), options));
  std::vector<Frame> rgb;
  Status converted = Status::ok();
  const auto to_rgb = [&](Frame&& yuv) {
    Frame out = rgb_frame(width, height);
    const Status status = image::run_color_convert_cpu(image::ImageBatch{{yuv.image}, {}},
                                                       image::ImageBatch{{out.image}, {}}, {});
    if (converted.is_ok()) converted = status;
    rgb.push_back(std::move(out));
  };
  io::Packet packet;
  for (;;) {
    FOVEA_ASSIGN_OR_RETURN(bool more, demuxer->read(packet));
    if (!more) break;
    FOVEA_TRY(io::send_and_receive(*decoder, packet, to_rgb));
  }
  FOVEA_TRY(io::finish_and_receive(*decoder, to_rgb));
  FOVEA_TRY(converted);
  return rgb;
}

// Every frame of a 30-frame clip: 0..5 have overlapping shapes, 6..29 have them apart.
TEST(DemoDetector, FindsTheObjectsOfTheEncodedClip) {
  constexpr int kWidth = kDemoDetectorInputWidth;
  constexpr int kHeight = kDemoDetectorInputHeight;
  constexpr int kClipFrames = 30;
  Result<std::vector<Frame>> frames = decoded_demo_clip(kWidth, kHeight, kClipFrames);
  ASSERT_TRUE(frames.is_ok()) << frames.status().to_string();
  ASSERT_EQ(frames->size(), static_cast<std::size_t>(kClipFrames));
  Result<std::unique_ptr<CpuExecutor>> executor = make_executor(1, kWidth, kHeight);
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  float lowest = 1.0f;
  for (int index = 0; index < kClipFrames; ++index) {
    Result<std::vector<Tensor>> outputs =
        (*executor)->run({input_tensor({(*frames)[static_cast<std::size_t>(index)]})});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    auto detections =
        detect(*outputs, kWidth, kHeight, post::stretch_mapping(kWidth, kHeight, kWidth, kHeight));
    ASSERT_TRUE(detections.is_ok()) << detections.status().to_string();
    const std::string where = "decoded frame " + std::to_string(index);
    lowest = std::min(
        lowest, expect_objects((*detections)[0], io::ground_truth_boxes(index, kWidth, kHeight), where));
  }
  std::cout << "decoded clip: lowest IoU " << lowest << "\n";
}

// Nothing on a frame of background alone: the same texture with the shapes painted gray.
TEST(DemoDetector, FindsNothingOnTheBackground) {
  constexpr int kWidth = 480;
  constexpr int kHeight = 272;
  Result<std::unique_ptr<CpuExecutor>> executor = make_executor(1, kWidth, kHeight);
  ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
  Frame frame = io::render_synthetic_rgb(29, kWidth, kHeight, kSeed);
  const std::vector<std::uint8_t> mask = io::ground_truth_mask(29, kWidth, kHeight);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      if (mask[static_cast<std::size_t>(y) * kWidth + x] == 0) continue;
      std::uint8_t* rgb = frame.image.row(0, y) + 3 * x;
      const auto gray = static_cast<std::uint8_t>((rgb[0] + rgb[1] + rgb[2]) / 3);
      rgb[0] = rgb[1] = rgb[2] = gray;
    }
  }
  Result<std::vector<Tensor>> outputs = (*executor)->run({input_tensor({frame})});
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  auto detections =
      detect(*outputs, kWidth, kHeight, post::stretch_mapping(kWidth, kHeight, kWidth, kHeight));
  ASSERT_TRUE(detections.is_ok()) << detections.status().to_string();
  EXPECT_TRUE((*detections)[0].empty()) << (*detections)[0].size() << " detections on the background";
  // Every row proposes an empty box at the origin with score 0: no score column is above 0.
  const float* scores = (*outputs)[1].data<float>();
  for (std::int64_t i = 0; i < (*outputs)[1].numel(); ++i) ASSERT_EQ(scores[i], 0.0f) << i;
  const float* boxes = (*outputs)[0].data<float>();
  for (std::int64_t i = 0; i < (*outputs)[0].numel(); ++i) ASSERT_EQ(boxes[i], 0.0f) << i;
}

TEST(DemoDetector, RejectsBadOptions) {
  DemoDetectorOptions even;
  even.smoothing_kernel = 4;
  Result<std::string> bytes = demo_detection_model(even);
  ASSERT_FALSE(bytes.is_ok());
  EXPECT_NE(bytes.status().message().find("smoothing_kernel 4"), std::string::npos)
      << bytes.status().to_string();
  DemoDetectorOptions threshold;
  threshold.hue_threshold = 1.0f;
  EXPECT_NE(demo_detection_model(threshold).status().message().find("hue_threshold"), std::string::npos);
  DemoDetectorOptions stride;
  stride.cell_stride = 0;
  EXPECT_NE(demo_detection_model(stride).status().message().find("cell_stride 0"), std::string::npos);
  DemoDetectorOptions side;
  side.max_object_side = kDemoDetectorMaxInputSide + 1;
  EXPECT_NE(demo_detection_model(side).status().message().find("max_object_side 2049"), std::string::npos);
  // A folder that cannot be created: its parent is a file.
  const std::filesystem::path file = std::filesystem::path(fovea::testing::test_temp_dir()) / "not_a_folder";
  ASSERT_TRUE(write_demo_detection_model(file).is_ok());
  EXPECT_EQ(write_demo_detection_model(file / "demo_detector.onnx").code(), StatusCode::kIoError);
}

// Times one frame on the CPU executor at the demo's input size and at 640x360, for the record
// (printed, not asserted; the header quotes it).
TEST(DemoDetector, TimesAFrameOnTheCpu) {
  for (const auto& [width, height] :
       {std::pair{kDemoDetectorInputWidth, kDemoDetectorInputHeight}, std::pair{640, 360}}) {
    Result<std::unique_ptr<CpuExecutor>> executor = make_executor(1, width, height);
    ASSERT_TRUE(executor.is_ok()) << executor.status().to_string();
    const Tensor input = input_tensor({io::render_synthetic_rgb(40, width, height, kSeed)});
    ASSERT_TRUE((*executor)->run({input}).is_ok());  // warm-up: first-touch of the arena
    constexpr int kRuns = 5;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRuns; ++i) ASSERT_TRUE((*executor)->run({input}).is_ok());
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    std::cout << width << "x" << height << " CPU run: " << elapsed.count() / kRuns << " ms per frame\n";
    RecordProperty("cpu_ms_" + std::to_string(width) + "x" + std::to_string(height),
                   static_cast<int>(elapsed.count() / kRuns));
  }
}

}  // namespace
}  // namespace fovea::runtime
