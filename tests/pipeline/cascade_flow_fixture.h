// The cascade flow tests' shared set-up, on top of the detection flow's: a longer clip, a tiny
// color classifier written with fovea's ONNX writer (the dominant RGB channel of a crop) and its
// label file, and configurations that track and classify.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "detection_flow_fixture.h"
#include "runtime/graph.h"
#include "runtime/onnx_writer.h"

namespace fovea::pipeline::detect_test {

constexpr int kClipFrames = 24;
constexpr int kColorSide = 32;  // the color model's input
const char* const kColors[] = {"red", "green", "blue"};

// A classifier of the dominant color: the mean of each RGB channel over the crop
// (GlobalAveragePool, Flatten), then logits that favour the channel above the other two (Gemm).
// Output [N, 3]: red, green, blue.
runtime::Graph color_model_graph() {
  using namespace runtime;
  Graph graph;
  graph.opsets[""] = 17;
  const ValueId input = graph.add_value(
      "input", ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3),
                                                  Dim::known_size(kColorSide), Dim::known_size(kColorSide)}});
  graph.inputs.push_back(input);
  const auto node = [&](const std::string& op, std::vector<ValueId> inputs, const std::string& output,
                        std::map<std::string, Attribute, std::less<>> attributes = {}) {
    const ValueId out = graph.add_value(output, ValueType{DataType::kFloat32, std::nullopt});
    Node n;
    n.name = output;
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(inputs);
    n.outputs = {out};
    n.attributes = std::move(attributes);
    graph.nodes.push_back(std::move(n));
    graph.value(out).producer = static_cast<int>(graph.nodes.size() - 1);
    return out;
  };
  const ValueId pooled = node("GlobalAveragePool", {input}, "pooled");
  const ValueId flat = node("Flatten", {pooled}, "flat");
  constexpr float s = 20.0f;
  // B [3 in, 3 out]: class c gets s * (x_c - (x_a + x_b) / 2).
  const ValueId weights = graph.add_constant(
      "weights", Tensor::from_vector<float>(DataType::kFloat32, {3, 3},
                                            {s, -s / 2, -s / 2, -s / 2, s, -s / 2, -s / 2, -s / 2, s}));
  const ValueId logits = node("Gemm", {flat, weights}, "logits");
  graph.value(logits).type = ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3)}};
  graph.outputs.push_back(logits);
  return graph;
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
