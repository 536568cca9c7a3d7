// Segmentation and classification of image folders on the GPU against the same flows on the CPU
// (fp32, so the two differ only in the order of the preprocess's float operations): the class maps
// computed on the GPU and copied back (segment_ops.h, LabelMapOp) give the CPU's label images and
// target fractions, the logits copied back (frame_classify_ops.h) the CPU's classes, on images of
// odd sizes and aspect ratios, batch 1 and N, stretched and letterboxed.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/cuda_raii.h"
#include "image/tolerances.h"
#include "image_flow_fixture.h"
#include "pipeline/flow.h"
#include "pipeline/frame_record.h"

namespace fovea::pipeline {
namespace {

using namespace image_flow_test;
namespace fs = std::filesystem;

// Blocks of 4x4 pixels, each a color whose brightest channel leads by at least 50 levels: a
// resampled pixel blends at most four blocks, and only such blends can come near a tie.
io::HostImage color_blocks(int width, int height, unsigned seed) {
  io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
  std::mt19937 random(seed);
  for (int by = 0; by < height; by += 4) {
    for (int bx = 0; bx < width; bx += 4) {
      const auto winner = static_cast<unsigned>(random() % 3);
      std::uint8_t color[3];
      for (unsigned k = 0; k < 3; ++k)
        color[k] = static_cast<std::uint8_t>(k == winner ? 200 + random() % 56 : random() % 150);
      for (int y = by; y < std::min(by + 4, height); ++y) {
        for (int x = bx; x < std::min(bx + 4, width); ++x) std::copy(color, color + 3, image.row(y) + 3 * x);
      }
    }
  }
  return image;
}

Status write_model(const fs::path& path, runtime::GraphBuilder& builder) {
  FOVEA_ASSIGN_OR_RETURN(const std::string bytes,
                         runtime::serialize_onnx(std::move(builder).take_graph(), {}));
  std::ofstream(path, std::ios::binary) << bytes;
  return Status::ok();
}

class ImageTasksGpu : public ImageFlow {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    ImageFlow::SetUp();
    for (int i = 0; i < 11; ++i) {
      const int width = 13 + 7 * i, height = i % 2 ? 127 - 9 * i : 9 + 5 * i;
      write_png(fmt::format("{}/p{:02}.png", i % 2 ? "sub" : ".", i), color_blocks(width, height, i));
    }
    runtime::GraphBuilder segmenter(17);
    const runtime::ValueId input = segmenter.input("input", runtime::image_type(3));
    const runtime::ValueId weights =
        segmenter.constant("weights", runtime::float32_tensor({3, 3, 1, 1}, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
    segmenter.output(segmenter.node("Conv", {input, weights}, "scores"), runtime::image_type(3));
    ASSERT_TRUE(write_model(dir_ / "segmenter.onnx", segmenter).is_ok());
    runtime::GraphBuilder classifier(17);
    const runtime::ValueId pixels = classifier.input("input", runtime::image_type(3));
    const runtime::ValueId pooled = classifier.node("GlobalAveragePool", {pixels}, "pooled");
    classifier.output(classifier.node("Flatten", {pooled}, "logits"),
                      runtime::ValueType{DataType::kFloat32, runtime::Dims{runtime::Dim::unknown("N"),
                                                                           runtime::Dim::known_size(3)}});
    ASSERT_TRUE(write_model(dir_ / "classifier.onnx", classifier).is_ok());
  }

  PipelineConfig config(FlowKind flow, const std::string& model, int batch, bool letterbox) const {
    PipelineConfig c;
    c.images = ImagesConfig{.inputs = {(dir_ / "in").string()}, .recursive = true};
    c.flow = flow;
    ModelConfig m{.path = (dir_ / model).string(),
                  .precision = runtime::Precision::kFloat32,
                  .mean = {0.0f, 0.0f, 0.0f},
                  .std = {1.0f, 1.0f, 1.0f}};
    m.input_width = 24;
    m.input_height = 20;
    m.keep_aspect = letterbox;
    c.models = {m};
    c.mux.batch_size = batch;
    c.stats.progress = false;
    return c;
  }

  std::vector<ParsedFrameRecord> run(PipelineConfig c, DeviceChoice device, const std::string& name) const {
    c.sinks.metadata = MetadataSinkConfig{.path = (dir_ / (name + ".jsonl")).string()};
    if (c.sinks.images) c.sinks.images->output_dir = (dir_ / name).string();
    Result<FlowResult> result = run_flow(c, {.device = device, .progress = nullptr});
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    std::vector<ParsedFrameRecord> records;
    std::ifstream file(dir_ / (name + ".jsonl"));
    for (std::string line; std::getline(file, line);) records.push_back(parse_frame_record(line).value());
    return records;
  }
};

TEST_F(ImageTasksGpu, LabelImagesMatchTheCpuFlow) {
  for (const int batch : {1, 4}) {
    for (const bool letterbox : {false, true}) {
      SCOPED_TRACE(fmt::format("batch {}, {}", batch, letterbox ? "letterbox" : "stretch"));
      PipelineConfig c = config(FlowKind::kSegmentation, "segmenter.onnx", batch, letterbox);
      c.task.classes = {2};
      c.sinks.images = ImageSinkConfig{};
      const std::vector<ParsedFrameRecord> cpu = run(c, DeviceChoice::kCpu, "cpu");
      const std::vector<ParsedFrameRecord> gpu = run(c, DeviceChoice::kGpu, "gpu");
      ASSERT_EQ(cpu.size(), 11u);
      ASSERT_EQ(gpu.size(), cpu.size());
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        ASSERT_EQ(gpu[i].source, cpu[i].source);
        const fs::path name = fs::path(cpu[i].source).replace_extension(".png");
        const io::DecodedImage want = io::decode_image_file(dir_ / "cpu" / name).value();
        const io::DecodedImage got = io::decode_image_file(dir_ / "gpu" / name).value();
        const ImageView& a = want.image.view();
        const ImageView& b = got.image.view();
        ASSERT_EQ(a.width, b.width);
        ASSERT_EQ(a.height, b.height);
        // A class map pixel that blends blocks may sit within float rounding of a tie: the two runs
        // may choose differently there, and nowhere else.
        std::size_t differ = 0;
        for (int y = 0; y < a.height; ++y) {
          for (int x = 0; x < a.width * 3; ++x) differ += a.row(0, y)[x] != b.row(0, y)[x] ? 1 : 0;
        }
        const double pixels = static_cast<double>(a.width) * a.height * 3;
        EXPECT_LE(static_cast<double>(differ) / pixels, 0.01) << name;
        EXPECT_NEAR(*gpu[i].target_fraction, *cpu[i].target_fraction, 0.01) << name;
      }
      fs::remove_all(dir_ / "cpu");
      fs::remove_all(dir_ / "gpu");
    }
  }
}

TEST_F(ImageTasksGpu, ClassesMatchTheCpuFlow) {
  for (const int batch : {1, 4}) {
    PipelineConfig c = config(FlowKind::kClassification, "classifier.onnx", batch, batch > 1);
    c.classify_frames.top_k = 3;
    const std::vector<ParsedFrameRecord> cpu = run(c, DeviceChoice::kCpu, "cpu");
    const std::vector<ParsedFrameRecord> gpu = run(c, DeviceChoice::kGpu, "gpu");
    ASSERT_EQ(cpu.size(), 11u);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      ASSERT_EQ(gpu[i].classes->size(), 3u) << cpu[i].source;
      EXPECT_EQ(gpu[i].classes->front().class_id, cpu[i].classes->front().class_id) << cpu[i].source;
      for (std::size_t k = 0; k < 3; ++k) {
        const ClassLabel& want = (*cpu[i].classes)[k];
        const auto found = std::find_if(gpu[i].classes->begin(), gpu[i].classes->end(),
                                        [&](const ClassLabel& l) { return l.class_id == want.class_id; });
        ASSERT_NE(found, gpu[i].classes->end());
        EXPECT_NEAR(found->score, want.score, image::testing::kF32Tolerance) << cpu[i].source;
      }
    }
  }
}

}  // namespace
}  // namespace fovea::pipeline
