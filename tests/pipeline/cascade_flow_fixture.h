// The cascade flow tests' shared set-up, on top of the detection flow's: a longer clip, a tiny
// color classifier written with fovea's ONNX writer (the dominant RGB channel of a crop) and its
// label file, and configurations that track and classify.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "detection_flow_fixture.h"
#include "runtime/graph_builder.h"
#include "runtime/onnx_writer.h"

namespace fovea::pipeline::detect_test {

constexpr int kClipFrames = 24;
constexpr int kColorSide = 32;  // the color model's input
const char* const kColors[] = {"red", "green", "blue"};

// A classifier of the dominant color: the mean of each RGB channel over the crop
// (GlobalAveragePool, Flatten), then logits that favour the channel above the other two (Gemm).
// Output [N, 3]: red, green, blue. `any_size`: the input's height and width are left open, as an
// export with dynamic spatial axes leaves them.
runtime::Graph color_model_graph(bool any_size = false) {
  using namespace runtime;
  GraphBuilder b(17);
  const Dim side_h = any_size ? Dim::unknown("H") : Dim::known_size(kColorSide);
  const Dim side_w = any_size ? Dim::unknown("W") : Dim::known_size(kColorSide);
  const ValueId input = b.input(
      "input", ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3), side_h, side_w}});
  const ValueId pooled = b.node("GlobalAveragePool", {input}, "pooled");
  const ValueId flat = b.node("Flatten", {pooled}, "flat");
  constexpr float s = 20.0f;
  // B [3 in, 3 out]: class c gets s * (x_c - (x_a + x_b) / 2).
  const ValueId weights = b.constant(
      "weights", float32_tensor({3, 3}, {s, -s / 2, -s / 2, -s / 2, s, -s / 2, -s / 2, -s / 2, s}));
  b.output(b.node("Gemm", {flat, weights}, "logits"),
           ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3)}});
  return std::move(b).take_graph();
}

class CascadeFlow : public DetectionFlow {
 protected:
  void SetUp() override {
    DetectionFlow::SetUp();
    ASSERT_TRUE(io::write_synthetic_clip(path("long.mp4"),
                                         {.width = kWidth, .height = kHeight, .frames = kClipFrames})
                    .is_ok());
    Result<std::string> bytes = runtime::serialize_onnx(color_model_graph(), {});
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    std::ofstream(path("color.onnx"), std::ios::binary) << *bytes;
    std::ofstream(path("colors.txt")) << "red\ngreen\nblue\n";
  }

  // Two sources showing the same clip, the detector every third frame, ByteTrack confirming a track
  // at its first detection (so that the first skipped frames have tracks to predict).
  PipelineConfig tracked(const std::vector<std::string>& clips = {"long.mp4", "long.mp4"}) const {
    PipelineConfig cfg = config(clips);
    cfg.detect.interval = 2;
    cfg.track = {.enabled = true, .tracker = track::TrackerKind::kByteTrack, .min_hits = 1};
    return cfg;
  }

  void add_color_model(PipelineConfig& cfg, SecondaryConfig entry = {.model = "color"}) const {
    ModelConfig color{.name = "color", .path = path("color.onnx")};
    color.mean = {0.0f, 0.0f, 0.0f};
    color.std = {1.0f, 1.0f, 1.0f};
    color.labels = path("colors.txt");
    color.batch_size = 4;  // several chunks per batch, the last partial
    cfg.models.push_back(color);
    cfg.secondary.push_back(entry);
  }
};

}  // namespace fovea::pipeline::detect_test
