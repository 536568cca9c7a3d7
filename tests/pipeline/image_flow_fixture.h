// The image flow tests' shared set-up (CPU and GPU): a temporary folder with an input tree, the
// identity image-to-image model, random pictures, and a configuration that runs them.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/image_codec.h"
#include "pipeline/config.h"
#include "pipeline/stats.h"
#include "runtime/graph_builder.h"
#include "runtime/onnx_writer.h"

namespace fovea::pipeline::image_flow_test {

namespace fs = std::filesystem;

// An image-to-image model that gives its input back: with the symmetric normalization and its
// inverse, every picture is its input's pixels exactly (preprocess at scale 1, no resampling).
// Writes `builder`'s graph to `path` as an ONNX file.
inline Status write_model(const fs::path& path, runtime::GraphBuilder&& builder) {
  FOVEA_ASSIGN_OR_RETURN(const std::string bytes,
                         runtime::serialize_onnx(std::move(builder).take_graph(), {}));
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  return file ? Status::ok() : make_error(StatusCode::kIoError, path.string(), ": cannot write");
}

inline Status write_identity_model(const fs::path& path) {
  runtime::GraphBuilder builder(17);
  const runtime::ValueId input = builder.input("input", runtime::image_type(3));
  const runtime::ValueId output = builder.node("Identity", {input}, "output");
  builder.output(output, runtime::image_type(3));
  return write_model(path, std::move(builder));
}

// An image-to-image model whose every output value is NaN (0 / 0): a model that overflows, as the
// flows' count of non-finite outputs sees it.
inline Status write_nan_model(const fs::path& path) {
  runtime::GraphBuilder builder(17);
  const runtime::ValueId input = builder.input("input", runtime::image_type(3));
  const runtime::ValueId zero = builder.node("Sub", {input, input}, "zero");
  const runtime::ValueId output = builder.node("Div", {zero, zero}, "output");
  builder.output(output, runtime::image_type(3));
  return write_model(path, std::move(builder));
}

// What the stage `stage` of a run counted as `counter` (0 when it counted nothing of that name).
inline std::uint64_t stage_count(const PipelineStats& stats, const std::string& stage,
                                 const std::string& counter) {
  for (const StageStats& s : stats.stages) {
    if (s.name != stage) continue;
    for (const StageCounter& c : s.counters) {
      if (c.name == counter) return c.value;
    }
  }
  return 0;
}

inline io::HostImage random_image(int width, int height, unsigned seed) {
  io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
  std::mt19937 random(seed);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width * 3; ++x) image.row(y)[x] = static_cast<std::uint8_t>(random() & 0xff);
  }
  return image;
}

class ImageFlow : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("fovea_images_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in" / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_png(const fs::path& relative, const io::HostImage& image) {
    ASSERT_TRUE(
        io::write_image_file(dir_ / "in" / relative, image.view(), {.format = io::ImageFileFormat::kPng}, {})
            .is_ok());
  }

  PipelineConfig image2image_config() {
    PipelineConfig config;
    config.images = ImagesConfig{.inputs = {(dir_ / "in").string()}, .recursive = true, .split = AbSplit::kA};
    config.flow = FlowKind::kImage2Image;
    ModelConfig model{
        .path = (dir_ / "identity.onnx").string(), .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
    model.input_width = 8;
    model.input_height = 8;
    config.models = {model};
    config.mux.batch_size = 3;
    config.sinks.images = ImageSinkConfig{.output_dir = (dir_ / "out").string()};
    config.sinks.metadata = MetadataSinkConfig{.path = (dir_ / "records.jsonl").string()};
    config.stats.progress = false;
    return config;
  }

  fs::path dir_;
};

}  // namespace fovea::pipeline::image_flow_test
