// The image flow end to end on the CPU path (pipeline/image_source.h, image_ops.h, image_sink.h):
// files of different sizes and formats in, pictures (image2image), label images (segmentation),
// boxes (detection) or classes (classification) out, bad files skipped by name, outputs that would
// overwrite inputs and models of the wrong shape refused before anything runs.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "image_flow_fixture.h"
#include "io/image_codec.h"
#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "pipeline/flow.h"
#include "pipeline/frame_record.h"
#include "pipeline/image_source.h"
#include "runtime/demo_detector.h"
#include "runtime/graph_builder.h"
#include "runtime/onnx_writer.h"

namespace fovea::pipeline {
namespace {

using namespace image_flow_test;
namespace fs = std::filesystem;

// A model whose outputs are NaN runs to the end (its pictures black, as the tensor-to-image op maps
// NaN), and the inference stage counts every non-finite value of the inferred items; a finite model
// counts none.
TEST_F(ImageFlow, NonFiniteModelOutputsAreCounted) {
  ASSERT_TRUE(write_nan_model(dir_ / "nan.onnx").is_ok());
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  for (int i = 0; i < 4; ++i)
    write_png(fmt::format("pair{}.png", i), random_image(16, 8, static_cast<unsigned>(i)));
  PipelineConfig config = image2image_config();
  config.models[0].path = (dir_ / "nan.onnx").string();
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->stats.total_frames(), 4u);
  EXPECT_EQ(stage_count(result->stats, "inference", "non-finite output values"), 4u * 3 * 8 * 8);
  fs::remove_all(dir_ / "out");
  config = image2image_config();
  result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(stage_count(result->stats, "inference", "non-finite output values"), 0u);
}

TEST_F(ImageFlow, Image2ImageWritesEachPictureAtItsMirroredPathAndSkipsBadFiles) {
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  // AB pairs: 16x8, whose A half is the model's 8x8 input exactly.
  std::vector<io::HostImage> pairs;
  for (int i = 0; i < 7; ++i) pairs.push_back(random_image(16, 8, static_cast<unsigned>(i)));
  for (int i = 0; i < 7; ++i) write_png(fmt::format("{}pair{}.png", i % 2 ? "sub/" : "", i), pairs[i]);
  // A larger pair: resized into the input, still one picture out.
  write_png("big.png", random_image(40, 12, 99));
  // Bad files: empty, not an image, a truncated PNG.
  std::ofstream(dir_ / "in" / "empty.png").close();
  std::ofstream(dir_ / "in" / "text.png") << "not a picture";
  {
    const std::string bytes =
        io::encode_image(pairs[0].view(), {.format = io::ImageFileFormat::kPng}).value();
    std::ofstream(dir_ / "in" / "cut.png", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }

  Result<FlowResult> result = run_flow(image2image_config(), {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->partial());
  EXPECT_EQ(result->stats.failed_items(), 3u);
  EXPECT_EQ(result->stats.total_frames(), 8u);
  ASSERT_EQ(result->stats.sources.size(), 1u);
  std::vector<std::string> skipped;
  for (const SkippedItem& item : result->stats.sources[0].failed_items)
    skipped.push_back(fs::path(item.path).filename());
  std::sort(skipped.begin(), skipped.end());
  EXPECT_EQ(skipped, (std::vector<std::string>{"cut.png", "empty.png", "text.png"}));
  // Where the decode threads' time went (PNGs: read and decoded on the CPU), each kind at most all
  // of the threads' time; the summary and the JSON report carry it.
  const SourceStats& images = result->stats.sources[0];
  EXPECT_GE(images.threads, 1);
  std::map<std::string, double> work;
  for (const SourceWork& kind : images.work) work[kind.what] = kind.seconds;
  EXPECT_EQ(work.count("gpu decode"), 0u);
  ASSERT_EQ(work.count("read"), 1u);
  ASSERT_EQ(work.count("cpu decode"), 1u);
  // The threads ran within the run, and their work (waits included) fits in their running time.
  EXPECT_GT(images.threads_span_s, 0.0);
  EXPECT_LE(images.threads_span_s, result->stats.elapsed_s);
  double total = 0.0;
  for (const auto& [what, seconds] : work) {
    EXPECT_GT(seconds, 0.0) << what;
    total += seconds;
  }
  EXPECT_LE(total, images.threads * images.threads_span_s * 1.001);
  EXPECT_NE(format_table(result->stats).find("decode thread"), std::string::npos)
      << format_table(result->stats);
  EXPECT_GT(to_json(result->stats)["sources"][0]["work_seconds"]["read"].get<double>(), 0.0);
  EXPECT_GT(to_json(result->stats)["sources"][0]["threads_span_s"].get<double>(), 0.0);

  for (int i = 0; i < 7; ++i) {
    const fs::path out = dir_ / "out" / fmt::format("{}pair{}.png", i % 2 ? "sub/" : "", i);
    Result<io::DecodedImage> picture = io::decode_image_file(out);
    ASSERT_TRUE(picture.is_ok()) << out << ": " << picture.status().to_string();
    const ImageView& got = picture->image.view();
    ASSERT_EQ(got.width, 8);
    ASSERT_EQ(got.height, 8);
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8 * 3; ++x)
        ASSERT_EQ(got.row(0, y)[x], pairs[i].row(y)[x]) << out << " at " << x / 3 << "," << y;
    }
  }
  EXPECT_TRUE(fs::exists(dir_ / "out" / "big.png"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "cut.png"));

  // One record per image, in list order, named by its path below the folder.
  std::ifstream records(dir_ / "records.jsonl");
  std::vector<std::string> sources;
  for (std::string line; std::getline(records, line);) {
    Result<ParsedFrameRecord> record = parse_frame_record(line);
    ASSERT_TRUE(record.is_ok()) << line;
    sources.push_back(record->source);
  }
  EXPECT_EQ(sources, (std::vector<std::string>{"big.png", "pair0.png", "pair2.png", "pair4.png", "pair6.png",
                                               "sub/pair1.png", "sub/pair3.png", "sub/pair5.png"}));
}

TEST_F(ImageFlow, AnOutputThatWouldReplaceAnInputIsRefusedBeforeAnythingRuns) {
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  write_png("a.png", random_image(16, 8, 1));
  PipelineConfig config = image2image_config();
  config.sinks.images->output_dir = (dir_ / "in").string();
  config.sinks.metadata.reset();
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("sinks.images.output_dir"), std::string::npos)
      << result.status().message();
  const io::DecodedImage kept = io::decode_image_file(dir_ / "in" / "a.png").value();
  EXPECT_EQ(kept.image.view().width, 16);  // the input is untouched
}

// JPEG pictures written as JPEG on the CPU by default; nvJPEG asked of a CPU flow is refused by key,
// and nothing is written.
TEST_F(ImageFlow, JpegPicturesOnTheCpuAndNvjpegRefusedOnACpuFlow) {
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  write_png("a.png", random_image(16, 8, 1));
  PipelineConfig config = image2image_config();
  config.sinks.metadata.reset();
  config.sinks.images->format = ImageOutputFormat::kJpeg;
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  ASSERT_FALSE(result->outputs.empty());
  EXPECT_EQ(result->outputs.front().encoder, "jpg");
  EXPECT_TRUE(io::decode_image_file(fs::path(config.sinks.images->output_dir) / "a.jpg").is_ok());
  config.sinks.images->encoder = JpegCodec::kNvjpeg;
  config.sinks.images->output_dir = (dir_ / "refused").string();
  result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("sinks.images.encoder"), std::string::npos)
      << result.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "refused" / "a.jpg"));
  // The decoder too: nvJPEG asked for by name on a CPU flow is refused, not replaced by libjpeg-turbo.
  config.sinks.images->encoder = JpegCodec::kAuto;
  config.images->decoder = JpegCodec::kNvjpeg;
  result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("images.decoder"), std::string::npos) << result.status().message();
}

TEST_F(ImageFlow, AModelThatIsNotImageShapedIsRefusedNamingItsOutput) {
  runtime::GraphBuilder builder(17);
  const runtime::ValueId input = builder.input("input", runtime::image_type(3));
  const runtime::ValueId pooled = builder.node("GlobalAveragePool", {input}, "pooled");
  const runtime::ValueId flat = builder.node("Flatten", {pooled}, "logits");
  builder.output(flat);
  std::ofstream(dir_ / "identity.onnx", std::ios::binary)
      << runtime::serialize_onnx(std::move(builder).take_graph(), {}).value();
  write_png("a.png", random_image(16, 8, 1));
  Result<FlowResult> result = run_flow(image2image_config(), {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("'logits'"), std::string::npos) << result.status().message();
}

// Boxes come back in each image's own pixels, whatever its size: the detector sees every image
// stretched into 64x64, and the mapping back is per frame.
TEST_F(ImageFlow, DetectionMapsEveryImagesBoxesBackToItsOwnSize) {
  ASSERT_TRUE(runtime::write_demo_detection_model(dir_ / "detector.onnx").is_ok());
  struct Case {
    int width, height, x1, y1, x2, y2;
  };
  const std::vector<Case> cases = {{96, 48, 20, 10, 52, 30}, {40, 80, 8, 40, 32, 72}, {64, 64, 0, 0, 24, 16}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, c.width, c.height).value();
    for (int y = 0; y < c.height; ++y) {
      for (int x = 0; x < c.width; ++x) {
        const bool inside = x >= c.x1 && x < c.x2 && y >= c.y1 && y < c.y2;
        std::uint8_t* pixel = image.row(y) + 3 * x;
        pixel[0] = inside ? 220 : 128;
        pixel[1] = inside ? 30 : 128;
        pixel[2] = inside ? 30 : 128;
      }
    }
    write_png(fmt::format("img{}.png", i), image);
  }
  PipelineConfig config;
  config.images = ImagesConfig{.inputs = {(dir_ / "in").string()}};
  config.flow = FlowKind::kDetection;
  config.stages = {StageKind::kDetect};
  ModelConfig model{.path = (dir_ / "detector.onnx").string(),
                    .mean = {0.0f, 0.0f, 0.0f},
                    .std = {1.0f, 1.0f, 1.0f},
                    .parser = post::DetectParser::kBoxes};
  model.input_width = 64;
  model.input_height = 64;
  config.models = {model};
  config.mux.batch_size = 2;
  config.detect.confidence = 0.5f;
  config.sinks.metadata = MetadataSinkConfig{.path = (dir_ / "boxes.jsonl").string()};
  config.stats.progress = false;
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();

  std::ifstream records(dir_ / "boxes.jsonl");
  std::size_t seen = 0;
  for (std::string line; std::getline(records, line); ++seen) {
    const ParsedFrameRecord record = parse_frame_record(line).value();
    const Case& c = cases[static_cast<std::size_t>(record.source[3] - '0')];
    ASSERT_TRUE(record.objects && record.objects->size() == 1) << line;
    const ParsedObject& object = record.objects->front();
    EXPECT_EQ(object.class_id, 1);
    // One network pixel of error per corner (demo_detector.h), in this image's own scale.
    const float tolerance_x = 1.5f * static_cast<float>(c.width) / 64.0f;
    const float tolerance_y = 1.5f * static_cast<float>(c.height) / 64.0f;
    EXPECT_NEAR(object.box[0], c.x1, tolerance_x) << line;
    EXPECT_NEAR(object.box[2], c.x2, tolerance_x) << line;
    EXPECT_NEAR(object.box[1], c.y1, tolerance_y) << line;
    EXPECT_NEAR(object.box[3], c.y2, tolerance_y) << line;
  }
  EXPECT_EQ(seen, cases.size());
}

// The color classifier: the mean of each channel over the image (GlobalAveragePool, Flatten), then
// logits that favour the channel above the other two (Gemm). Output [N, 3]: red, green, blue.
Status write_color_classifier(const fs::path& path) {
  using namespace runtime;
  GraphBuilder b(17);
  const ValueId input = b.input("input", image_type(3));
  const ValueId flat = b.node("Flatten", {b.node("GlobalAveragePool", {input}, "pooled")}, "flat");
  constexpr float s = 20.0f;
  const ValueId weights = b.constant(
      "weights", float32_tensor({3, 3}, {s, -s / 2, -s / 2, -s / 2, s, -s / 2, -s / 2, -s / 2, s}));
  b.output(b.node("Gemm", {flat, weights}, "logits"),
           ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3)}});
  FOVEA_ASSIGN_OR_RETURN(const std::string bytes, serialize_onnx(std::move(b).take_graph(), {}));
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  return file ? Status::ok() : make_error(StatusCode::kIoError, path.string(), ": cannot write");
}

// A segmenter whose class is the brightest channel: a 1x1 convolution that passes the channels
// through, so the class map is the argmax of the input pixel (red 0, green 1, blue 2).
Status write_brightest_channel_segmenter(const fs::path& path) {
  using namespace runtime;
  GraphBuilder b(17);
  const ValueId input = b.input("input", image_type(3));
  const ValueId weights = b.constant("weights", float32_tensor({3, 3, 1, 1}, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  b.output(b.node("Conv", {input, weights}, "scores"), image_type(3));
  FOVEA_ASSIGN_OR_RETURN(const std::string bytes, serialize_onnx(std::move(b).take_graph(), {}));
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  return file ? Status::ok() : make_error(StatusCode::kIoError, path.string(), ": cannot write");
}

// An image of 2x2 blocks, each a random color whose brightest channel is its class: downscaled by
// exactly 2 (or not at all) into the model's input, every input pixel samples one block, so the
// label image is each pixel's block class exactly.
io::HostImage block_image(int width, int height, unsigned seed, std::vector<std::uint8_t>& classes) {
  io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
  std::mt19937 random(seed);
  classes.assign(static_cast<std::size_t>(width) * height, 0);
  for (int by = 0; by < height; by += 2) {
    for (int bx = 0; bx < width; bx += 2) {
      const auto c = static_cast<std::uint8_t>(random() % 3);
      std::uint8_t color[3];
      for (int k = 0; k < 3; ++k)
        color[k] = static_cast<std::uint8_t>(k == c ? 200 + random() % 56 : random() % 150);
      for (int y = by; y < by + 2; ++y) {
        for (int x = bx; x < bx + 2; ++x) {
          std::copy(color, color + 3, image.row(y) + 3 * x);
          classes[static_cast<std::size_t>(y) * width + x] = c;
        }
      }
    }
  }
  return image;
}

std::vector<ParsedFrameRecord> read_records(const fs::path& path) {
  std::vector<ParsedFrameRecord> records;
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    Result<ParsedFrameRecord> record = parse_frame_record(line);
    EXPECT_TRUE(record.is_ok()) << line << ": " << record.status().to_string();
    if (record.is_ok()) records.push_back(*record);
  }
  return records;
}

PipelineConfig classification_config(const fs::path& dir) {
  PipelineConfig config;
  config.images = ImagesConfig{.inputs = {(dir / "in").string()}, .recursive = true};
  config.flow = FlowKind::kClassification;
  ModelConfig model{
      .path = (dir / "color.onnx").string(), .mean = {0.0f, 0.0f, 0.0f}, .std = {1.0f, 1.0f, 1.0f}};
  model.input_width = 8;
  model.input_height = 8;
  model.labels = (dir / "colors.txt").string();
  config.models = {model};
  config.mux.batch_size = 2;
  config.sinks.metadata = MetadataSinkConfig{.path = (dir / "classes.jsonl").string()};
  config.stats.progress = false;
  return config;
}

io::HostImage solid_image(int width, int height, std::array<std::uint8_t, 3> color) {
  io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) std::copy(color.begin(), color.end(), image.row(y) + 3 * x);
  }
  return image;
}

// Each image's top classes by name, best first, from the label file; top_k and min_score trim them.
TEST_F(ImageFlow, ClassificationGivesEachImageItsTopClassesByName) {
  ASSERT_TRUE(write_color_classifier(dir_ / "color.onnx").is_ok());
  std::ofstream(dir_ / "colors.txt") << "red\ngreen\nblue\n";
  write_png("a_red.png", solid_image(20, 10, {220, 40, 30}));
  write_png("b_green.png", solid_image(7, 13, {30, 200, 60}));
  write_png("sub/c_blue.png", solid_image(33, 33, {10, 90, 180}));
  PipelineConfig config = classification_config(dir_);
  config.classify_frames.top_k = 2;
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_FALSE(result->partial());

  const std::vector<ParsedFrameRecord> records = read_records(dir_ / "classes.jsonl");
  ASSERT_EQ(records.size(), 3u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"a_red.png", "red"}, {"b_green.png", "green"}, {"sub/c_blue.png", "blue"}};
  for (std::size_t i = 0; i < records.size(); ++i) {
    const ParsedFrameRecord& record = records[i];
    EXPECT_EQ(record.source, expected[i].first);
    EXPECT_EQ(record.version, kFrameRecordVersion);
    ASSERT_TRUE(record.classes.has_value()) << record.source;
    ASSERT_EQ(record.classes->size(), 2u) << record.source;
    const ClassLabel& top = (*record.classes)[0];
    EXPECT_EQ(top.label, expected[i].second) << record.source;
    EXPECT_EQ(top.label,
              std::vector<std::string>({"red", "green", "blue"})[static_cast<std::size_t>(top.class_id)]);
    EXPECT_GT(top.score, 0.5f);
    EXPECT_GE(top.score, (*record.classes)[1].score);
    EXPECT_LE(top.score + (*record.classes)[1].score, 1.0f + 1e-6f);
    EXPECT_FALSE(record.objects.has_value());
  }

  // A minimum score leaves only the clear winner.
  config.classify_frames.top_k = 3;
  config.classify_frames.min_score = 0.5f;
  ASSERT_TRUE(run_flow(config, {.device = DeviceChoice::kCpu}).is_ok());
  for (const ParsedFrameRecord& record : read_records(dir_ / "classes.jsonl")) {
    ASSERT_TRUE(record.classes.has_value());
    EXPECT_EQ(record.classes->size(), 1u) << record.source;
  }
}

// A scene classifier on video frames: the same preset, a record of classes per frame.
TEST_F(ImageFlow, ClassificationRunsOnVideoFramesToo) {
  ASSERT_TRUE(write_color_classifier(dir_ / "color.onnx").is_ok());
  std::ofstream(dir_ / "colors.txt") << "red\ngreen\nblue\n";
  const fs::path clip = dir_ / "clip.mp4";
  ASSERT_TRUE(io::write_synthetic_clip(clip.string(), {.width = 64, .height = 48, .frames = 5}).is_ok());
  PipelineConfig config = classification_config(dir_);
  config.images.reset();
  config.sources = {SourceConfig{.uri = clip.string()}};
  Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const std::vector<ParsedFrameRecord> records = read_records(dir_ / "classes.jsonl");
  ASSERT_EQ(records.size(), 5u);
  for (const ParsedFrameRecord& record : records) {
    ASSERT_TRUE(record.classes.has_value());
    EXPECT_EQ(record.classes->size(), 3u);
  }
}

// Label images at each image's own size, through stretch and letterbox: every pixel the class of
// its block, and the metadata's target fraction the share of the target class among its pixels.
TEST_F(ImageFlow, SegmentationWritesALabelImagePerImageAtItsOwnSize) {
  ASSERT_TRUE(write_brightest_channel_segmenter(dir_ / "segmenter.onnx").is_ok());
  struct Case {
    std::string name;
    int width, height;
  };
  // The model's input is 16x16: each image is at that size or twice it along one or both sides.
  const std::vector<Case> cases = {
      {"a.png", 16, 16}, {"b.png", 32, 16}, {"sub/c.png", 16, 32}, {"d.png", 32, 32}};
  std::vector<std::vector<std::uint8_t>> classes(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i)
    write_png(cases[i].name,
              block_image(cases[i].width, cases[i].height, static_cast<unsigned>(i + 7), classes[i]));
  for (const bool letterbox : {false, true}) {
    SCOPED_TRACE(letterbox ? "letterbox" : "stretch");
    PipelineConfig config;
    config.images = ImagesConfig{.inputs = {(dir_ / "in").string()}, .recursive = true};
    config.flow = FlowKind::kSegmentation;
    config.task.classes = {1};
    ModelConfig model{
        .path = (dir_ / "segmenter.onnx").string(), .mean = {0.0f, 0.0f, 0.0f}, .std = {1.0f, 1.0f, 1.0f}};
    model.input_width = 16;
    model.input_height = 16;
    model.keep_aspect = letterbox;
    config.models = {model};
    config.mux.batch_size = 3;
    config.sinks.images = ImageSinkConfig{.output_dir = (dir_ / "out").string()};
    config.sinks.metadata = MetadataSinkConfig{.path = (dir_ / "seg.jsonl").string()};
    config.stats.progress = false;
    Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kCpu});
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();

    const std::vector<ParsedFrameRecord> records = read_records(dir_ / "seg.jsonl");
    ASSERT_EQ(records.size(), cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      Result<io::DecodedImage> labels = io::decode_image_file(dir_ / "out" / c.name);
      ASSERT_TRUE(labels.is_ok()) << c.name << ": " << labels.status().to_string();
      EXPECT_EQ(labels->source_has_alpha, false);
      const ImageView& got = labels->image.view();
      ASSERT_EQ(got.width, c.width) << c.name;
      ASSERT_EQ(got.height, c.height) << c.name;
      const int channels = got.format == PixelFormat::kGRAY8 ? 1 : 3;
      std::size_t targets = 0;
      for (int y = 0; y < c.height; ++y) {
        for (int x = 0; x < c.width; ++x) {
          const std::uint8_t want = classes[i][static_cast<std::size_t>(y) * c.width + x];
          ASSERT_EQ(got.row(0, y)[channels * x], want) << c.name << " at " << x << "," << y;
          targets += want == 1 ? 1 : 0;
        }
      }
      const auto record = std::find_if(records.begin(), records.end(),
                                       [&](const ParsedFrameRecord& r) { return r.source == c.name; });
      ASSERT_NE(record, records.end()) << c.name;
      ASSERT_TRUE(record->target_fraction.has_value());
      EXPECT_DOUBLE_EQ(*record->target_fraction, static_cast<double>(targets) / (c.width * c.height))
          << c.name;
    }
  }
}

// A label image is a class index per pixel: JPEG would change them, so it is refused, by its key.
TEST(ImageFlowConfig, SegmentationLabelImagesAreRefusedAsJpeg) {
  const std::string yaml = R"(
images: {inputs: [photos]}
flow: segmentation
model: {path: m.onnx}
sinks: {images: {output_dir: out, format: jpeg}}
)";
  Result<PipelineConfig> config = parse_config(yaml, "seg.yaml");
  ASSERT_FALSE(config.is_ok());
  EXPECT_NE(config.status().message().find("sinks.images.format"), std::string::npos)
      << config.status().message();
  EXPECT_NE(config.status().message().find("PNG"), std::string::npos) << config.status().message();
  const std::string classification = R"(
images: {inputs: [photos]}
flow: classification
classify_frames: {top_k: 3, min_score: 0.1}
model: {path: m.onnx}
sinks: {metadata: {path: m.jsonl}}
)";
  Result<PipelineConfig> parsed = parse_config(classification, "classes.yaml");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(stages_of(*parsed), std::vector<StageKind>{StageKind::kClassifyFrames});
  EXPECT_EQ(parsed->classify_frames.top_k, 3);
  EXPECT_EQ(parse_config(dump_config(*parsed), "dump").value(), *parsed);
  EXPECT_FALSE(parse_config(classification + "  images: {output_dir: out}\n", "pictures.yaml").is_ok());
}

// A model of the wrong shape for the task is refused before anything runs, naming the model file
// and its output's shape.
TEST_F(ImageFlow, AModelOfTheWrongRankForTheTaskIsRefusedNamingIt) {
  ASSERT_TRUE(write_color_classifier(dir_ / "color.onnx").is_ok());
  ASSERT_TRUE(write_brightest_channel_segmenter(dir_ / "segmenter.onnx").is_ok());
  std::ofstream(dir_ / "colors.txt") << "red\ngreen\nblue\n";
  write_png("a.png", random_image(16, 8, 1));

  PipelineConfig classify = classification_config(dir_);
  classify.models[0].path = (dir_ / "segmenter.onnx").string();
  classify.models[0].labels.reset();
  Result<FlowResult> refused = run_flow(classify, {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("segmenter.onnx"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("[N, C]"), std::string::npos) << refused.status().message();

  PipelineConfig segment = classification_config(dir_);
  segment.flow = FlowKind::kSegmentation;
  segment.models[0].labels.reset();
  refused = run_flow(segment, {.device = DeviceChoice::kCpu});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("color.onnx"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("'logits' is ["), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "classes.jsonl"));  // nothing ran
}

// Memory stays bounded whatever the folder's size: with a budget of 3 frames and a consumer that
// holds 2 of the frames it takes, the source stops decoding at the budget, plus the image the pusher
// needs next when it found nothing downstream (it passes then, over frames decoded ahead of it);
// once the consumer lets go, the rest follow.
TEST_F(ImageFlow, TheSourceHoldsNoMoreFramesThanItsBudget) {
  for (int i = 0; i < 60; ++i)
    write_png(fmt::format("p{:02}.png", i), random_image(12, 6, static_cast<unsigned>(i)));
  io::ImageList list = io::list_images({(dir_ / "in").string()}).value();
  StreamMux<SourceFrame> mux(MuxOptions{.batch_size = 1}, {"images"});
  // The patience long past the test's pauses, so that a slow machine cannot let an image through.
  ImageSources sources(
      std::move(list), "images", "in",
      {.threads = 4, .max_frames_in_flight = 3, .next_image_patience = std::chrono::minutes(5)}, mux);
  sources.start();
  // One batch held downstream, not two: the next image waits for frames held downstream to be
  // released (only the patience lets it through), so a consumer that held image 0 while waiting
  // for image 1 could wait the whole patience when images 2 and 3 had filled the budget first.
  std::optional<Batch<SourceFrame>> held = mux.next_batch();
  ASSERT_TRUE(held.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the decoders' chance to overrun
  const std::optional<SourceReport> report = sources.reports()[0];
  EXPECT_LE(report->frames_decoded, 3 + 1);  // the budget, and the next image over frames decoded ahead
  held.reset();
  std::size_t frames = 1;
  while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) frames += batch->frames.size();
  sources.join();
  EXPECT_EQ(frames, 60u) << sources.reports()[0]->frames_decoded << " decoded, "
                         << sources.reports()[0]->items_failed << " failed";
}

// A batch of pictures larger than the byte budget is not held whole: when the next picture waits for
// memory, the mux sends what it has, and the run completes (batches of 8 over a budget of 3
// pictures; before, the batch waited to fill and held 8).
TEST_F(ImageFlow, BatchesOfPicturesLargerThanTheBudgetGoOutPartial) {
  constexpr int kWidth = 64;
  constexpr int kHeight = 48;
  for (int i = 0; i < 24; ++i)
    write_png(fmt::format("p{:02}.png", i), random_image(kWidth, kHeight, static_cast<unsigned>(i)));
  io::ImageList list = io::list_images({(dir_ / "in").string()}).value();
  StreamMux<SourceFrame> mux(MuxOptions{.batch_size = 8}, {"images"});
  const std::int64_t picture = std::int64_t{kWidth} * kHeight * 3;
  ImageSources sources(std::move(list), "images", "in",
                       {.threads = 4, .max_frames_in_flight = 64, .max_bytes_in_flight = 3 * picture}, mux);
  sources.start();
  std::size_t frames = 0;
  std::size_t largest = 0;
  while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) {
    frames += batch->frames.size();
    largest = std::max(largest, batch->frames.size());
  }
  sources.join();
  EXPECT_EQ(frames, 24u);
  // Cut well short of 8: the frames held stay near the budget (TheSourceHoldsNoMoreFramesThanItsBudget
  // bounds them exactly with a consumer that holds what it takes).
  EXPECT_LE(largest, 5u);
}

// An odd-width "AB" picture: A is the left half, B the right one ending at the right edge; the
// middle column belongs to neither.
TEST_F(ImageFlow, AbHalvesOfAnOddWidthEndAtTheEdges) {
  io::HostImage image = random_image(5, 2, 7);
  write_png("ab.png", image);
  for (const AbSplit split : {AbSplit::kA, AbSplit::kB}) {
    io::ImageList list = io::list_images({(dir_ / "in").string()}).value();
    StreamMux<SourceFrame> mux(MuxOptions{.batch_size = 1}, {"images"});
    ImageSources sources(std::move(list), "images", "in", {.threads = 1, .split = split}, mux);
    sources.start();
    const std::optional<Batch<SourceFrame>> batch = mux.next_batch();
    ASSERT_TRUE(batch.has_value());
    const ImageView& half = batch->frames[0].payload.frame.image;
    ASSERT_EQ(half.width, 2);
    const int first_column = split == AbSplit::kA ? 0 : 3;
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 2 * 3; ++x) {
        EXPECT_EQ(half.row(0, y)[x], image.view().row(0, y)[first_column * 3 + x]) << y << "," << x;
      }
    }
    while (mux.next_batch()) {
    }
    sources.join();
  }
}

TEST(ImageFlowConfig, AnImageFlowReadsFromYamlAndRefusesVideoStages) {
  const std::string good = R"(
images: {inputs: [photos], recursive: true, shard: 1/4, split: a}
flow: image2image
model: {path: m.onnx, input_width: 256, input_height: 256}
sinks: {images: {output_dir: out, format: jpeg, quality: 80}}
)";
  Result<PipelineConfig> config = parse_config(good, "good.yaml");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->images->shard, "1/4");
  EXPECT_EQ(config->sinks.images->format, ImageOutputFormat::kJpeg);
  EXPECT_EQ(parse_config(dump_config(*config), "dump").value(), *config);

  const std::string osd = R"(
images: {inputs: [photos]}
flow: detection
model: {path: m.onnx, parser: ssd}
sinks: {metadata: {path: m.jsonl}}
)";
  EXPECT_TRUE(parse_config(osd, "detect.yaml").is_ok());  // the preset's osd draws nothing unless enabled
  Result<PipelineConfig> refused = parse_config(osd + "osd: {enabled: true}\n", "osd.yaml");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("stages: [detect]"), std::string::npos)
      << refused.status().message();

  const std::string shard = R"(
images: {inputs: [photos], shard: 4/4}
flow: image2image
model: {path: m.onnx}
sinks: {null: true}
)";
  Result<PipelineConfig> bad_shard = parse_config(shard, "shard.yaml");
  ASSERT_FALSE(bad_shard.is_ok());
  EXPECT_NE(bad_shard.status().message().find("images.shard"), std::string::npos)
      << bad_shard.status().message();

  const std::string both = R"(
sources: [{uri: a.mp4}]
images: {inputs: [photos]}
flow: image2image
model: {path: m.onnx}
sinks: {null: true}
)";
  EXPECT_FALSE(parse_config(both, "both.yaml").is_ok());
}

}  // namespace
}  // namespace fovea::pipeline
