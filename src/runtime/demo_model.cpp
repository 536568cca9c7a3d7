#include "runtime/demo_model.h"

#include <cstdint>
#include <fstream>
#include <utility>
#include <vector>

#include "runtime/graph_builder.h"
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
  GraphBuilder b(kDemoOpset);
  // Each value is named after its layer (demo_model.h), but for the model's output "out".
  const ValueId input = b.input("input", image_type(3));
  const ValueId chroma_w = b.constant("chroma.weight", float32_tensor({6, 3, 1, 1}, chroma_weights()));
  const ValueId chroma = b.node("Conv", {input, chroma_w}, "chroma");
  const ValueId positive = b.node("Relu", {chroma}, "chroma_relu");
  // The six positive parts sum to twice max - min; halving gives colorfulness on the 0..1 scale.
  const ValueId sum_w =
      b.constant("colorfulness.weight", float32_tensor({1, 6, 1, 1}, std::vector<float>(6, 0.5f)));
  const ValueId colorfulness = b.node("Conv", {positive, sum_w}, "colorfulness");
  const std::int64_t k = options.smoothing_kernel;
  const std::int64_t half = k / 2;
  const ValueId smoothed = b.node("AveragePool", {colorfulness}, "smooth",
                                  {{"kernel_shape", ints_attribute({k, k})},
                                   {"pads", ints_attribute({half, half, half, half})},
                                   {"strides", ints_attribute({1, 1})},
                                   {"count_include_pad", int_attribute(0)}});
  const float s = options.logit_scale;
  const float t = options.colorfulness_threshold;
  const ValueId logits_w = b.constant("logits.weight", float32_tensor({2, 1, 1, 1}, {-s, s}));
  const ValueId logits_b = b.constant("logits.bias", float32_tensor({2}, {s * t, -s * t}));
  b.output(b.node("Conv", {smoothed, logits_w, logits_b}, "out"), image_type(2));
  return std::move(b).take_graph();
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
