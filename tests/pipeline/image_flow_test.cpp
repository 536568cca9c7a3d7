// The image flow end to end on the CPU path (pipeline/image_source.h, image_ops.h, image_sink.h):
// files of different sizes and formats in, pictures (image2image) or boxes (detection) out, bad
// files skipped by name, outputs that would overwrite inputs refused before anything runs.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "image_flow_fixture.h"
#include "io/image_codec.h"
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

// Memory stays bounded whatever the folder's size: with a budget of 3 frames and a consumer that
// holds every frame it takes, the source stops decoding at the budget, plus what the image the
// pusher needs next may add (it always passes, so it can only fill the mux's queue of 4 and the
// pusher's hand); once the consumer lets go, the rest follow.
TEST_F(ImageFlow, TheSourceHoldsNoMoreFramesThanItsBudget) {
  for (int i = 0; i < 60; ++i)
    write_png(fmt::format("p{:02}.png", i), random_image(12, 6, static_cast<unsigned>(i)));
  io::ImageList list = io::list_images({(dir_ / "in").string()}).value();
  StreamMux<SourceFrame> mux(MuxOptions{.batch_size = 1}, {"images"});
  ImageSources sources(std::move(list), "images", "in", {.threads = 4, .max_frames_in_flight = 3}, mux);
  sources.start();
  std::vector<Batch<SourceFrame>> held;
  while (held.size() < 4) held.push_back(*mux.next_batch());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the decoders' chance to overrun
  const std::optional<SourceReport> report = sources.reports()[0];
  EXPECT_LE(report->frames_decoded, 3 + 4 + 4 + 1);  // the budget, held, the mux queue, the pusher's
  held.clear();
  std::size_t frames = 4;
  while (std::optional<Batch<SourceFrame>> batch = mux.next_batch()) frames += batch->frames.size();
  sources.join();
  EXPECT_EQ(frames, 60u) << sources.reports()[0]->frames_decoded << " decoded, "
                         << sources.reports()[0]->items_failed << " failed";
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
