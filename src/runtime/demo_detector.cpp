#include "runtime/demo_detector.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "core/output_file.h"
#include "runtime/graph_builder.h"
#include "runtime/onnx_writer.h"

namespace fovea::runtime {

namespace {

// The opset the model declares: the loader's range holds it, and every op used here has had its
// current meaning since opset 13 (Unsqueeze's axes as an input).
constexpr int kOpset = 17;
constexpr int kMaxSmoothingKernel = 31;  // as the segmenter's
// A cell is one proposal per class: past 64 pixels cells span whole objects at the demo's sizes.
constexpr int kMaxCellStride = 64;
constexpr std::int64_t kObjectClasses = kDemoDetectorClasses - 1;  // all but the background
constexpr std::int64_t kCorners = 4;
constexpr float kFar = static_cast<float>(kDemoDetectorMaxInputSide);

Status check_options(const DemoDetectorOptions& options) {
  if (options.smoothing_kernel < 1 || options.smoothing_kernel > kMaxSmoothingKernel ||
      options.smoothing_kernel % 2 == 0) {
    return make_error(StatusCode::kInvalidArgument, "demo detector: smoothing_kernel ",
                      std::to_string(options.smoothing_kernel), " is not an odd size in 1..",
                      std::to_string(kMaxSmoothingKernel));
  }
  if (!(options.hue_threshold > 0.0f && options.hue_threshold < 1.0f)) {
    return make_error(StatusCode::kInvalidArgument, "demo detector: hue_threshold ",
                      std::to_string(options.hue_threshold), " is outside (0, 1)");
  }
  if (options.cell_stride < 1 || options.cell_stride > kMaxCellStride) {
    return make_error(StatusCode::kInvalidArgument, "demo detector: cell_stride ",
                      std::to_string(options.cell_stride), " is outside 1..", std::to_string(kMaxCellStride));
  }
  if (options.max_object_side < 1 || options.max_object_side > kDemoDetectorMaxInputSide) {
    return make_error(StatusCode::kInvalidArgument, "demo detector: max_object_side ",
                      std::to_string(options.max_object_side), " is outside 1..",
                      std::to_string(kDemoDetectorMaxInputSide));
  }
  return Status::ok();
}

Attributes cast_to_float() {
  return {{"to", int_attribute(data_type_to_onnx(DataType::kFloat32))}};
}

// A pooling window: kernel, stride and the padding at the start and end of each spatial dim
// (ONNX's pads: all starts, then all ends).
struct Window {
  std::int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right;
};

Attributes pool_attributes(const Window& w) {
  return {{"kernel_shape", ints_attribute({w.kernel_h, w.kernel_w})},
          {"strides", ints_attribute({w.stride_h, w.stride_w})},
          {"pads", ints_attribute({w.pad_top, w.pad_left, w.pad_bottom, w.pad_right})}};
}

// Cells of s x s pixels, the last row and column cut by the frame: ceil(H / s) x ceil(W / s).
Window cell_window(std::int64_t s) {
  return Window{s, s, s, s, 0, 0, s - 1, s - 1};
}

// Both outputs' declared type: float32 [N, A, 4], A rows of four per image.
ValueType rows_type() {
  return ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::unknown("A"), Dim::known_size(kCorners)}};
}

// Rows of the chroma conv: each a difference of two channels, in both signs, so that the Relu
// after it keeps |difference| split over two channels (the segmenter's first layer).
std::vector<float> chroma_weights() {
  return {1,  -1, 0,    // R - G
          -1, 1,  0,    // G - R
          0,  1,  -1,   // G - B
          0,  -1, 1,    // B - G
          -1, 0,  1,    // B - R
          1,  0,  -1};  // R - B
}

// Over the positive parts P(R-G), P(G-R), P(G-B), P(B-G), P(B-R), P(R-B): each class's hue
// margin min(c - o1, c - o2) = P(c - o1) - P(o1 - c) - P(o2 - o1).
std::vector<float> hue_weights() {
  return {1,  -1, 0, -1, 0,  0,    // red:   P(R-G) - P(G-R) - P(B-G)
          -1, 1,  0, 0,  -1, 0,    // green: P(G-R) - P(R-G) - P(B-R)
          0,  -1, 0, 0,  1,  -1};  // blue:  P(B-R) - P(R-B) - P(G-R)
}

// Per class k, from the pooled a = kFar - min x, b = max x + 1, c = kFar - min y, d = max y + 1:
// width a + b - kFar, b, height c + d - kFar, d (Relu follows: empty windows give 0, 0, 0, 0).
std::pair<std::vector<float>, std::vector<float>> extent_weights() {
  std::vector<float> weights(static_cast<std::size_t>(kObjectClasses * kCorners * kObjectClasses * kCorners));
  std::vector<float> bias;
  const auto set = [&](std::int64_t out, std::int64_t in) {
    weights[static_cast<std::size_t>(out * kObjectClasses * kCorners + in)] = 1.0f;
  };
  for (std::int64_t k = 0; k < kObjectClasses; ++k) {
    const std::int64_t base = k * kCorners;
    set(base + 0, base + 0);
    set(base + 0, base + 1);
    set(base + 1, base + 1);
    set(base + 2, base + 2);
    set(base + 2, base + 3);
    set(base + 3, base + 3);
    bias.insert(bias.end(), {-kFar, 0.0f, -kFar, 0.0f});
  }
  return {weights, bias};
}

// Per class, from width, b, height, d: x1 = b - width, y1 = d - height, x2 = b, y2 = d.
std::vector<float> corner_weights() {
  std::vector<float> weights(static_cast<std::size_t>(kObjectClasses * kCorners * kObjectClasses * kCorners));
  const auto set = [&](std::int64_t out, std::int64_t in, float w) {
    weights[static_cast<std::size_t>(out * kObjectClasses * kCorners + in)] = w;
  };
  for (std::int64_t k = 0; k < kObjectClasses; ++k) {
    const std::int64_t base = k * kCorners;
    set(base + 0, base + 1, 1.0f);
    set(base + 0, base + 0, -1.0f);
    set(base + 1, base + 3, 1.0f);
    set(base + 1, base + 2, -1.0f);
    set(base + 2, base + 1, 1.0f);
    set(base + 3, base + 3, 1.0f);
  }
  return weights;
}

// Class k's share (input channel k - 1) goes to column k of its own rows' four (channel
// 4 (k - 1) + k); the background column and the other classes' columns stay 0.
std::vector<float> score_column_weights() {
  std::vector<float> weights(static_cast<std::size_t>(kObjectClasses * kCorners * kObjectClasses));
  for (std::int64_t k = 0; k < kObjectClasses; ++k) {
    weights[static_cast<std::size_t>((k * kCorners + k + 1) * kObjectClasses + k)] = 1.0f;
  }
  return weights;
}

struct CoordinateMaps {
  ValueId x, y;  // float [1, 1, 1, 1, W] and [1, 1, 1, H, 1]
};

// x and y as float rows from the input's shape; the planner folds all of it into constants.
CoordinateMaps coordinate_maps(GraphBuilder& b, ValueId shape) {
  const ValueId zero = b.constant("range.start", float32_tensor({}, {0.0f}));
  const ValueId one = b.constant("range.delta", float32_tensor({}, {1.0f}));
  const auto axis = [&](const std::string& name, std::int64_t dim, std::vector<std::int64_t> row_shape) {
    const ValueId index = b.constant(name + ".index", int64_tensor({}, {dim}));
    const ValueId size = b.node("Gather", {shape, index}, name + "_size");
    const ValueId size_f = b.node("Cast", {size}, name + "_size_float", cast_to_float());
    const ValueId range = b.node("Range", {zero, size_f, one}, name + "_range");
    return b.node("Reshape", {range, b.constant(name + ".shape", int64_tensor({5}, row_shape))},
                  name + "_coordinate");
  };
  return CoordinateMaps{axis("x", 3, {1, 1, 1, 1, -1}), axis("y", 2, {1, 1, 1, -1, 1})};
}

// [1, 1, 4, H, W]: coordinate j at pixel (x, y) is x_weight[j] x + y_weight[j] y + offset[j], that
// is kFar - x, x + 1, kFar - y, y + 1 (all >= 1, so 0 can mean "no pixel").
ValueId coordinates(GraphBuilder& b, ValueId shape) {
  const CoordinateMaps maps = coordinate_maps(b, shape);
  const Shape per_coordinate{1, 1, kCorners, 1, 1};
  const ValueId x_part = b.node(
      "Mul", {maps.x, b.constant("coordinates.x_weight", float32_tensor(per_coordinate, {-1, 1, 0, 0}))},
      "coordinates_x");
  const ValueId y_part = b.node(
      "Mul", {maps.y, b.constant("coordinates.y_weight", float32_tensor(per_coordinate, {0, 0, -1, 1}))},
      "coordinates_y");
  const ValueId xy = b.node("Add", {x_part, y_part}, "coordinates_xy");
  return b.node("Add",
                {xy, b.constant("coordinates.offset", float32_tensor(per_coordinate, {kFar, 1, kFar, 1}))},
                "coordinates");
}

// [N, 3 * 4, Gh, Gw] (channel 4 class + j) to the parser's rows [N, 3 G, 4].
ValueId to_rows(GraphBuilder& b, ValueId grid, const std::string& name) {
  const ValueId split =
      b.node("Reshape",
             {grid, b.constant(name + ".split_shape", int64_tensor({4}, {0, kObjectClasses, kCorners, -1}))},
             name + "_split");
  const ValueId transposed =
      b.node("Transpose", {split}, name + "_transposed", {{"perm", ints_attribute({0, 1, 3, 2})}});
  return b.node("Reshape",
                {transposed, b.constant(name + ".rows_shape", int64_tensor({3}, {0, -1, kCorners}))}, name);
}

// Per class [N, 3, H, W]: 1 where the smoothed hue margin passes the threshold, else 0.
ValueId class_mask(GraphBuilder& b, ValueId input, const DemoDetectorOptions& options) {
  const ValueId chroma = b.node(
      "Conv", {input, b.constant("chroma.weight", float32_tensor({6, 3, 1, 1}, chroma_weights()))}, "chroma");
  const ValueId positive = b.node("Relu", {chroma}, "chroma_positive");
  const ValueId margin = b.node(
      "Conv", {positive, b.constant("hue.weight", float32_tensor({kObjectClasses, 6, 1, 1}, hue_weights()))},
      "hue_margin");
  const ValueId hue = b.node("Relu", {margin}, "hue");
  // A box filter as a per-class Conv rather than an AveragePool: the CPU executor's convolution
  // runs it about five times faster. Its zero padding makes the frame border read as background.
  const std::int64_t k = options.smoothing_kernel;
  const std::int64_t half = k / 2;
  const std::vector<float> box_filter(static_cast<std::size_t>(kObjectClasses * k * k),
                                      1.0f / static_cast<float>(k * k));
  const ValueId smoothed = b.node(
      "Conv", {hue, b.constant("smooth.weight", float32_tensor({kObjectClasses, 1, k, k}, box_filter))},
      "smoothed_hue",
      {{"pads", ints_attribute({half, half, half, half})}, {"group", int_attribute(kObjectClasses)}});
  const ValueId passes =
      b.node("Greater", {smoothed, b.constant("hue.threshold", float32_tensor({}, {options.hue_threshold}))},
             "hue_passes");
  return b.node("Cast", {passes}, "class_mask", cast_to_float());
}

// [N, 12, Gh, Gw]: per class x1, y1, x2, y2 of the class's pixels in each cell's window.
ValueId box_grid(GraphBuilder& b, ValueId input, ValueId mask, const DemoDetectorOptions& options) {
  const ValueId shape = b.node("Shape", {input}, "input_shape");
  const ValueId mask5 =
      b.node("Unsqueeze", {mask, b.constant("mask.axes", int64_tensor({1}, {2}))}, "class_mask_5d");
  const ValueId masked5 = b.node("Mul", {mask5, coordinates(b, shape)}, "masked_coordinates_5d");
  const ValueId masked_shape = b.node(
      "Mul", {shape, b.constant("masked.channels", int64_tensor({4}, {1, kCorners, 1, 1}))}, "masked_shape");
  const ValueId masked = b.node("Reshape", {masked5, masked_shape}, "masked_coordinates");
  const std::int64_t s = options.cell_stride;
  const ValueId cell_max = b.node("MaxPool", {masked}, "cell_max", pool_attributes(cell_window(s)));
  const std::int64_t r = (options.max_object_side - 1 + s - 1) / s;
  const ValueId rows =
      b.node("MaxPool", {cell_max}, "window_x", pool_attributes(Window{1, 2 * r + 1, 1, 1, 0, r, 0, r}));
  const ValueId extremes =
      b.node("MaxPool", {rows}, "window_y", pool_attributes(Window{2 * r + 1, 1, 1, 1, r, 0, r, 0}));
  const std::int64_t channels = kObjectClasses * kCorners;
  const auto [extent_w, extent_b] = extent_weights();
  const ValueId extent =
      b.node("Conv",
             {extremes, b.constant("extent.weight", float32_tensor({channels, channels, 1, 1}, extent_w)),
              b.constant("extent.bias", float32_tensor({channels}, extent_b))},
             "extent");
  const ValueId extent_relu = b.node("Relu", {extent}, "extent_positive");
  return b.node("Conv",
                {extent_relu,
                 b.constant("corners.weight", float32_tensor({channels, channels, 1, 1}, corner_weights()))},
                "corners");
}

// [N, 12, Gh, Gw]: each cell's share of class k in column k of the class's four.
ValueId score_grid(GraphBuilder& b, ValueId mask, const DemoDetectorOptions& options) {
  Attributes share_attributes = pool_attributes(cell_window(options.cell_stride));
  share_attributes["count_include_pad"] = int_attribute(0);
  const ValueId share = b.node("AveragePool", {mask}, "cell_share", std::move(share_attributes));
  const Shape weight_shape{kObjectClasses * kCorners, kObjectClasses, 1, 1};
  return b.node("Conv",
                {share, b.constant("score.weight", float32_tensor(weight_shape, score_column_weights()))},
                "score_columns");
}

Graph detector_graph(const DemoDetectorOptions& options) {
  GraphBuilder b(kOpset);
  const ValueId input = b.input("input", image_type(3));
  const ValueId mask = class_mask(b, input, options);
  const ValueId boxes = to_rows(b, box_grid(b, input, mask, options), "boxes");
  const ValueId scores = to_rows(b, score_grid(b, mask, options), "scores");
  b.output(boxes, rows_type());
  b.output(scores, rows_type());
  return std::move(b).take_graph();
}

}  // namespace

Result<std::string> demo_detection_model(const DemoDetectorOptions& options) {
  FOVEA_TRY(check_options(options));
  return serialize_onnx(detector_graph(options),
                        {{"fovea.demo",
                          "detection: class 0 background, 1 red, 2 green, 3 blue; boxes parser; "
                          "input RGB in [0, 1], mean 0, std 1"}});
}

Status write_demo_detection_model(const std::filesystem::path& path, const DemoDetectorOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, demo_detection_model(options));
  return write_file_atomically(path, bytes, "demo detection model");
}

}  // namespace fovea::runtime
