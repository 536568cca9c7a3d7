// The segmentation flow tests' shared set-up: a temporary folder with two small synthetic clips
// (io/synthetic_clip.h) and the demo model (runtime/demo_model.h), whose contract makes the subject
// mask known, and a configuration that runs them through the flow with a lossless video sink.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/frame.h"
#include "image/blur.h"
#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "runtime/demo_model.h"

namespace fovea::pipeline::flow_test {

inline constexpr int kWidth = 160;
inline constexpr int kHeight = 96;
inline constexpr int kFramesA = 10;
inline constexpr int kFramesB = 6;
inline constexpr int kBatch = 2;
inline constexpr int kBlur = 9;

class FlowFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / (std::string("fovea_flow_") + info->test_suite_name() +
                                                     "_" + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(
        io::write_synthetic_clip(clip_a(), {.width = kWidth, .height = kHeight, .frames = kFramesA}).is_ok());
    ASSERT_TRUE(io::write_synthetic_clip(clip_b(),
                                         {.width = kWidth, .height = kHeight, .frames = kFramesB, .seed = 2})
                    .is_ok());
    ASSERT_TRUE(runtime::write_demo_segmentation_model(model()).is_ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  const std::filesystem::path& dir() const { return dir_; }
  std::string clip_a() const { return (dir_ / "a.mp4").string(); }
  std::string clip_b() const { return (dir_ / "b.mp4").string(); }
  std::string model() const { return (dir_ / "demo.onnx").string(); }

  // The demo's settings at the clips' size, lossless output to dir()/out, metadata to
  // dir()/frames.jsonl, report to dir()/report.json, no progress line.
  PipelineConfig base_config(const std::vector<std::string>& uris) const {
    PipelineConfig config;
    for (const std::string& uri : uris) config.sources.push_back({.uri = uri});
    config.mux.batch_size = kBatch;
    config.mux.width = kWidth;
    config.mux.height = kHeight;
    config.models = {{.path = model(),
                      .precision = runtime::Precision::kFloat16,
                      .mean = runtime::kDemoModelMean,
                      .std = runtime::kDemoModelStd}};
    config.task.classes = {runtime::kDemoSubjectClass};
    config.task.blur_kernel = kBlur;
    config.task.refine_mask = false;
    config.sinks.video =
        VideoSinkConfig{.output_dir = (dir_ / "out").string(), .preset = "ultrafast", .qp = 0};
    config.sinks.metadata = MetadataSinkConfig{.path = (dir_ / "frames.jsonl").string()};
    config.stats.progress = false;
    config.stats.report = (dir_ / "report.json").string();
    return config;
  }

  // The luma plane of `frame` blurred as the flow blurs the background.
  static Frame blur_luma(const Frame& frame) {
    Frame out;
    auto pixels = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(frame.image.width) *
                                                              frame.image.height);
    out.owner = pixels;
    out.image = ImageView{.format = PixelFormat::kGRAY8,
                          .width = frame.image.width,
                          .height = frame.image.height,
                          .memory = MemoryKind::kHost,
                          .num_planes = 1};
    out.image.planes[0] = {pixels->data(), static_cast<std::size_t>(frame.image.width)};
    ImageView luma = out.image;
    luma.planes[0] = frame.image.planes[0];
    const image::BlurParams params{.kernel_width = kBlur, .kernel_height = kBlur};
    EXPECT_TRUE(image::run_blur_cpu({.images = {luma}}, {.images = {out.image}}, params).is_ok());
    return out;
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace fovea::pipeline::flow_test
