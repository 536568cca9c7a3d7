#include "runtime/demo_model.h"

#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "runtime/graph.h"
#include "runtime/onnx_writer.h"

namespace fovea::runtime {

namespace {

// The opset the model declares: the loader's range holds it, and Conv/Relu/AveragePool have had
// their current meaning since opset 11.
constexpr int kDemoOpset = 17;
constexpr int kMaxSmoothingKernel = 31;

Status check_options(const DemoModelOptions& options) {
  if (options.smoothing_kernel < 1 || options.smoothing_kernel > kMaxSmoothingKernel ||
      options.smoothing_kernel % 2 == 0) {
    return make_error(StatusCode::kInvalidArgument, "demo model: smoothing_kernel ",
                      std::to_string(options.smoothing_kernel), " is not an odd size in 1..",
                      std::to_string(kMaxSmoothingKernel));
  }
  if (!(options.colorfulness_threshold > 0.0f && options.colorfulness_threshold < 1.0f)) {
    return make_error(StatusCode::kInvalidArgument, "demo model: colorfulness_threshold ",
                      std::to_string(options.colorfulness_threshold), " is outside (0, 1)");
  }
  if (!(options.logit_scale > 0.0f)) {
    return make_error(StatusCode::kInvalidArgument, "demo model: logit_scale ",
                      std::to_string(options.logit_scale), " is not positive");
  }
  return Status::ok();
}

Attribute ints_attribute(std::vector<std::int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

Attribute int_attribute(std::int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

Tensor weights(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector<float>(DataType::kFloat32, std::move(shape), values);
}

// [N, channels, H, W] with the batch and spatial dims symbolic.
ValueType image_type(std::int64_t channels) {
  return ValueType{DataType::kFloat32,
                   Dims{Dim::unknown("N"), Dim::known_size(channels), Dim::unknown("H"), Dim::unknown("W")}};
}

class DemoGraphBuilder {
 public:
  DemoGraphBuilder() { graph_.opsets[""] = kDemoOpset; }

  ValueId input(const std::string& name, std::int64_t channels) {
    const ValueId id = graph_.add_value(name, image_type(channels));
    graph_.inputs.push_back(id);
    return id;
  }

  // One node producing one [N, channels, H, W] value named `output`.
  ValueId node(const std::string& name, const std::string& op_type, std::vector<ValueId> inputs,
               const std::string& output, std::int64_t channels,
               std::map<std::string, Attribute, std::less<>> attributes = {}) {
    const ValueId out = graph_.add_value(output, image_type(channels));
    Node node;
    node.name = name;
    node.op_type = op_type;
    node.opset = kDemoOpset;
    node.inputs = std::move(inputs);
    node.outputs = {out};
    node.attributes = std::move(attributes);
    graph_.nodes.push_back(std::move(node));
    graph_.value(out).producer = static_cast<int>(graph_.nodes.size() - 1);
    return out;
  }

  ValueId constant(const std::string& name, Tensor tensor) {
    return graph_.add_constant(name, std::move(tensor));
  }

  Graph finish(ValueId output) {
    graph_.outputs.push_back(output);
    return std::move(graph_);
  }

 private:
  Graph graph_;
};

// Rows of the chroma conv: each a difference of two channels, in both signs, so that the Relu
// after it keeps |difference| split over two channels.
std::vector<float> chroma_weights() {
  return {1,  -1, 0,    // R - G
          -1, 1,  0,    // G - R
          0,  1,  -1,   // G - B
          0,  -1, 1,    // B - G
          -1, 0,  1,    // B - R
          1,  0,  -1};  // R - B
}

Graph demo_graph(const DemoModelOptions& options) {
  DemoGraphBuilder b;
  const ValueId input = b.input("input", 3);
  const ValueId chroma_w = b.constant("chroma.weight", weights({6, 3, 1, 1}, chroma_weights()));
  const ValueId chroma = b.node("chroma", "Conv", {input, chroma_w}, "chroma_difference", 6);
  const ValueId positive = b.node("chroma_relu", "Relu", {chroma}, "chroma_positive", 6);
  // The six positive parts sum to twice max - min; halving gives colorfulness on the 0..1 scale.
  const ValueId sum_w = b.constant("colorfulness.weight", weights({1, 6, 1, 1}, std::vector<float>(6, 0.5f)));
  const ValueId colorfulness = b.node("colorfulness", "Conv", {positive, sum_w}, "colorfulness", 1);
  const std::int64_t k = options.smoothing_kernel;
  const std::int64_t half = k / 2;
  const ValueId smoothed = b.node("smooth", "AveragePool", {colorfulness}, "smoothed_colorfulness", 1,
                                  {{"kernel_shape", ints_attribute({k, k})},
                                   {"pads", ints_attribute({half, half, half, half})},
                                   {"strides", ints_attribute({1, 1})},
                                   {"count_include_pad", int_attribute(0)}});
  const float s = options.logit_scale;
  const float t = options.colorfulness_threshold;
  const ValueId logits_w = b.constant("logits.weight", weights({2, 1, 1, 1}, {-s, s}));
  const ValueId logits_b = b.constant("logits.bias", weights({2}, {s * t, -s * t}));
  return b.finish(b.node("logits", "Conv", {smoothed, logits_w, logits_b}, "out", 2));
}

}  // namespace

Result<std::string> demo_segmentation_model(const DemoModelOptions& options) {
  FOVEA_TRY(check_options(options));
  const Graph graph = demo_graph(options);
  return serialize_onnx(graph, {{"fovea.demo",
                                 "segmentation: class 0 background, class 1 colored subjects; "
                                 "input RGB in [0, 1], mean 0, std 1"}});
}

Status write_demo_segmentation_model(const std::filesystem::path& path, const DemoModelOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, demo_segmentation_model(options));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return make_error(StatusCode::kIoError, "cannot open ", path.string(), " for writing the demo model");
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return make_error(StatusCode::kIoError, "writing the demo model to ", path.string(), " failed");
  }
  return Status::ok();
}

}  // namespace fovea::runtime
