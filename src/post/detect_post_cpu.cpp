// The detection postprocess: parser names, output matching, frame mappings, the plan, and the CPU
// reference (plain loops over frames, candidates and classes around detect_post_math.h, then
// run_nms_cpu).
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "post/detect_post.h"
#include "post/detect_post_math.h"
#include "post/tensor_args.h"

namespace fovea::post {

namespace {

constexpr std::array<std::pair<DetectParser, std::string_view>, 4> kParserNames = {{
    {DetectParser::kSsd, "ssd"},
    {DetectParser::kYolo, "yolo"},
    {DetectParser::kDetectNet, "detectnet"},
    {DetectParser::kBoxes, "boxes"},
}};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string describe(const OutputInfo& o) {
  return fmt::format("'{}' {} {}", o.name, shape_text(o.shape), data_type_name(o.dtype));
}

std::string describe_all(std::span<const OutputInfo> outputs) {
  std::vector<std::string> parts;
  for (const OutputInfo& o : outputs) parts.push_back(describe(o));
  return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ", "));
}

bool name_has(const std::string& name, std::initializer_list<std::string_view> hints) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  return std::any_of(hints.begin(), hints.end(),
                     [&](std::string_view h) { return lower.find(h) != std::string::npos; });
}

Status refuse(DetectParser parser, const OutputInfo& o, std::string_view expected) {
  return make_error(StatusCode::kInvalidArgument,
                    fmt::format("parser {}: model output {}: expected {}", detect_parser_name(parser),
                                describe(o), expected));
}

Status refuse_count(DetectParser parser, std::span<const OutputInfo> outputs, std::string_view expected) {
  return make_error(StatusCode::kInvalidArgument,
                    fmt::format("parser {}: expected {}; the model has {} output(s): {}",
                                detect_parser_name(parser), expected, outputs.size(), describe_all(outputs)));
}

bool is_float(DataType d) {
  return d == DataType::kFloat32 || d == DataType::kFloat16;
}
bool is_number(DataType d) {
  return d == DataType::kInt32 || d == DataType::kInt64 || d == DataType::kFloat32;
}

// The index among `candidates` whose name has one of the hints, or -1.
int by_name(std::span<const OutputInfo> outputs, const std::vector<int>& candidates,
            std::initializer_list<std::string_view> hints) {
  for (int i : candidates) {
    if (name_has(outputs[static_cast<std::size_t>(i)].name, hints)) return i;
  }
  return -1;
}

std::vector<int> all_but(std::size_t count, std::initializer_list<int> taken) {
  std::vector<int> rest;
  for (int i = 0; i < static_cast<int>(count); ++i) {
    if (std::find(taken.begin(), taken.end(), i) == taken.end()) rest.push_back(i);
  }
  return rest;
}

Status check_classes(DetectParser parser, const OutputInfo& o, std::int64_t model_classes,
                     const DetectParserOptions& options) {
  if (options.classes > 0 && model_classes != options.classes) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("parser {}: model output {} has {} classes, the labels {}",
                                  detect_parser_name(parser), describe(o), model_classes, options.classes));
  }
  return Status::ok();
}

Result<DetectLayout> resolve_ssd(std::span<const OutputInfo> out, const DetectParserOptions& options) {
  const DetectParser p = DetectParser::kSsd;
  if (out.size() != 2 && out.size() != 3) {
    return refuse_count(p, out, "loc [N, A, 4], logits [N, A, C] and optionally priors [A, 4]");
  }
  DetectLayout l;
  l.kind = DetectLayoutKind::kSsd;
  if (out.size() == 3) {
    l.priors = by_name(out, {0, 1, 2}, {"prior", "anchor"});
    for (int i = 0; i < 3 && l.priors < 0; ++i) {
      if (out[static_cast<std::size_t>(i)].shape.size() == 2) l.priors = i;
    }
    if (l.priors < 0) {
      return refuse_count(p, out, "priors [A, 4] (named prior/anchor) among three outputs");
    }
  }
  const std::vector<int> rest = all_but(out.size(), {l.priors});
  l.logits = by_name(out, rest, {"cls", "logit", "conf", "score"});
  if (l.logits < 0) {
    const auto& second = out[static_cast<std::size_t>(rest[1])];
    l.logits = second.shape.size() == 3 && second.shape[2] == 4 &&
                       out[static_cast<std::size_t>(rest[0])].shape.size() == 3 &&
                       out[static_cast<std::size_t>(rest[0])].shape[2] != 4
                   ? rest[0]
                   : rest[1];
  }
  l.loc = l.logits == rest[0] ? rest[1] : rest[0];
  const OutputInfo& loc = out[static_cast<std::size_t>(l.loc)];
  const OutputInfo& logits = out[static_cast<std::size_t>(l.logits)];
  if (loc.shape.size() != 3 || loc.shape[2] != 4 || loc.shape[0] <= 0 || loc.shape[1] <= 0 ||
      !is_float(loc.dtype)) {
    return refuse(p, loc, "box deltas [N, A, 4] float32/float16");
  }
  if (logits.shape.size() != 3 || logits.shape[0] != loc.shape[0] || logits.shape[1] != loc.shape[1] ||
      logits.shape[2] < 1 || logits.dtype != loc.dtype) {
    return refuse(p, logits,
                  fmt::format("class logits [{}, {}, C] {} (as the deltas {})", loc.shape[0], loc.shape[1],
                              data_type_name(loc.dtype), describe(loc)));
  }
  if (l.priors >= 0) {
    const OutputInfo& priors = out[static_cast<std::size_t>(l.priors)];
    const auto& s = priors.shape;
    const bool shape_ok = (s.size() == 2 && s[0] == loc.shape[1] && s[1] == 4) ||
                          (s.size() == 3 && s[0] == 1 && s[1] == loc.shape[1] && s[2] == 4);
    if (!shape_ok || priors.dtype != DataType::kFloat32) {
      return refuse(p, priors, fmt::format("priors [{}, 4] float32", loc.shape[1]));
    }
  }
  FOVEA_TRY(check_classes(p, logits, logits.shape[2], options));
  l.dtype = loc.dtype;
  l.batch = static_cast<int>(loc.shape[0]);
  l.rows = static_cast<int>(loc.shape[1]);
  l.classes = static_cast<int>(logits.shape[2]);
  l.candidates = l.rows;
  return l;
}

Result<DetectLayout> resolve_yolo(std::span<const OutputInfo> out, const DetectParserOptions& options) {
  const DetectParser p = DetectParser::kYolo;
  if (out.size() != 1) {
    return refuse_count(p, out, "one output: [N, 4 + C, A] (anchor-free) or [N, A, 5 + C] (anchor-based)");
  }
  const OutputInfo& o = out[0];
  if (o.shape.size() != 3 || o.shape[0] <= 0 || o.shape[1] <= 0 || o.shape[2] <= 0 || !is_float(o.dtype)) {
    return refuse(p, o, "[N, 4 + C, A] or [N, A, 5 + C], float32/float16");
  }
  const std::int64_t d1 = o.shape[1], d2 = o.shape[2];
  YoloFormat format = options.yolo_format;
  if (format == YoloFormat::kAuto) {
    if (options.classes > 0 && (d1 == 4 + options.classes) != (d2 == 5 + options.classes)) {
      format = d1 == 4 + options.classes ? YoloFormat::kAnchorFree : YoloFormat::kAnchorBased;
    } else {
      format = d1 < d2 ? YoloFormat::kAnchorFree : YoloFormat::kAnchorBased;
    }
  }
  DetectLayout l;
  l.predictions = 0;
  l.dtype = o.dtype;
  l.batch = static_cast<int>(o.shape[0]);
  if (format == YoloFormat::kAnchorFree) {
    if (d1 <= 4) return refuse(p, o, "anchor-free [N, 4 + C, A] with C >= 1");
    l.kind = DetectLayoutKind::kYoloAnchorFree;
    l.rows = static_cast<int>(d2);
    l.classes = static_cast<int>(d1 - 4);
  } else {
    if (d2 <= 5) return refuse(p, o, "anchor-based [N, A, 5 + C] with C >= 1");
    l.kind = DetectLayoutKind::kYoloAnchorBased;
    l.rows = static_cast<int>(d1);
    l.classes = static_cast<int>(d2 - 5);
  }
  FOVEA_TRY(check_classes(p, o, l.classes, options));
  l.candidates = l.rows;
  return l;
}

Result<DetectLayout> resolve_detectnet(std::span<const OutputInfo> out, const DetectParserOptions& options) {
  const DetectParser p = DetectParser::kDetectNet;
  if (out.size() != 2) return refuse_count(p, out, "coverage [N, C, H, W] and bbox [N, 4C, H, W]");
  for (const OutputInfo& o : out) {
    if (o.shape.size() != 4 || !is_float(o.dtype) ||
        std::any_of(o.shape.begin(), o.shape.end(), [](std::int64_t d) { return d <= 0; })) {
      return refuse(p, o, "coverage [N, C, H, W] or bbox [N, 4C, H, W], float32/float16");
    }
  }
  DetectLayout l;
  l.kind = DetectLayoutKind::kDetectNet;
  l.coverage = by_name(out, {0, 1}, {"cov"});
  if (l.coverage < 0) l.coverage = out[1].shape[1] == 4 * out[0].shape[1] ? 0 : 1;
  l.bbox = 1 - l.coverage;
  const OutputInfo& cov = out[static_cast<std::size_t>(l.coverage)];
  const OutputInfo& bbox = out[static_cast<std::size_t>(l.bbox)];
  if (bbox.shape[0] != cov.shape[0] || bbox.shape[1] != 4 * cov.shape[1] || bbox.shape[2] != cov.shape[2] ||
      bbox.shape[3] != cov.shape[3] || bbox.dtype != cov.dtype) {
    return refuse(
        p, bbox,
        fmt::format("bbox [{}, {}, {}, {}] {} (four channels per class of the coverage {})", cov.shape[0],
                    4 * cov.shape[1], cov.shape[2], cov.shape[3], data_type_name(cov.dtype), describe(cov)));
  }
  FOVEA_TRY(check_classes(p, cov, cov.shape[1], options));
  l.dtype = cov.dtype;
  l.batch = static_cast<int>(cov.shape[0]);
  l.classes = static_cast<int>(cov.shape[1]);
  l.grid_height = static_cast<int>(cov.shape[2]);
  l.grid_width = static_cast<int>(cov.shape[3]);
  l.rows = l.grid_width * l.grid_height;
  if (static_cast<std::int64_t>(l.rows) * l.classes > std::numeric_limits<int>::max() / 4) {
    return refuse(p, cov, "a grid of fewer cells");
  }
  l.candidates = l.rows * l.classes;
  return l;
}

Result<DetectLayout> resolve_decoded_boxes(std::span<const OutputInfo> out,
                                           const DetectParserOptions& options) {
  const DetectParser p = DetectParser::kBoxes;
  DetectLayout l;
  l.kind = DetectLayoutKind::kBoxes;
  l.boxes = by_name(out, {0, 1}, {"box"});
  if (l.boxes < 0) {
    l.boxes = out[0].shape.size() == 3 && out[0].shape[2] == 4 ? 0 : 1;
  }
  l.scores = 1 - l.boxes;
  const OutputInfo& boxes = out[static_cast<std::size_t>(l.boxes)];
  const OutputInfo& scores = out[static_cast<std::size_t>(l.scores)];
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4 || boxes.shape[0] <= 0 || boxes.shape[1] <= 0 ||
      !is_float(boxes.dtype)) {
    return refuse(p, boxes, "boxes [N, A, 4] (x1, y1, x2, y2) float32/float16");
  }
  const bool shape_ok = (scores.shape.size() == 3 || scores.shape.size() == 2) &&
                        scores.shape[0] == boxes.shape[0] && scores.shape[1] == boxes.shape[1] &&
                        (scores.shape.size() == 2 || scores.shape[2] >= 1);
  if (!shape_ok || scores.dtype != boxes.dtype) {
    return refuse(
        p, scores,
        fmt::format("scores [{}, {}, C] or [{}, {}] {} (as the boxes {})", boxes.shape[0], boxes.shape[1],
                    boxes.shape[0], boxes.shape[1], data_type_name(boxes.dtype), describe(boxes)));
  }
  const std::int64_t classes = scores.shape.size() == 3 ? scores.shape[2] : 1;
  FOVEA_TRY(check_classes(p, scores, classes, options));
  l.dtype = boxes.dtype;
  l.batch = static_cast<int>(boxes.shape[0]);
  l.rows = static_cast<int>(boxes.shape[1]);
  l.classes = static_cast<int>(classes);
  l.candidates = l.rows;
  return l;
}

Result<DetectLayout> resolve_nms_outputs(std::span<const OutputInfo> out,
                                         const DetectParserOptions& options) {
  const DetectParser p = DetectParser::kBoxes;
  DetectLayout l;
  l.kind = DetectLayoutKind::kNmsOutputs;
  const std::vector<int> all = {0, 1, 2, 3};
  l.count = by_name(out, all, {"num", "count"});
  for (int i : all) {
    const auto& s = out[static_cast<std::size_t>(i)].shape;
    if (l.count < 0 && (s.size() == 1 || (s.size() == 2 && s[1] == 1))) l.count = i;
  }
  if (l.count < 0) {
    return refuse_count(p, out,
                        "num_detections [N] or [N, 1], boxes [N, K, 4], scores [N, K], classes [N, K]");
  }
  std::vector<int> rest = all_but(4, {l.count});
  for (int i : rest) {
    const auto& s = out[static_cast<std::size_t>(i)].shape;
    if (l.boxes < 0 && s.size() == 3 && s[2] == 4) l.boxes = i;
  }
  if (l.boxes < 0) return refuse_count(p, out, "boxes [N, K, 4] among the four outputs");
  rest = all_but(4, {l.count, l.boxes});
  l.class_ids = by_name(out, rest, {"class", "label"});
  if (l.class_ids < 0) {
    l.class_ids = out[static_cast<std::size_t>(rest[0])].dtype != DataType::kFloat32 &&
                          out[static_cast<std::size_t>(rest[0])].dtype != DataType::kFloat16
                      ? rest[0]
                      : rest[1];
  }
  l.scores = l.class_ids == rest[0] ? rest[1] : rest[0];
  const OutputInfo& count = out[static_cast<std::size_t>(l.count)];
  const OutputInfo& boxes = out[static_cast<std::size_t>(l.boxes)];
  const OutputInfo& scores = out[static_cast<std::size_t>(l.scores)];
  const OutputInfo& ids = out[static_cast<std::size_t>(l.class_ids)];
  const std::int64_t n = boxes.shape[0], k = boxes.shape[1];
  if (n <= 0 || k <= 0 || !is_float(boxes.dtype)) return refuse(p, boxes, "boxes [N, K, 4] float32/float16");
  if (count.shape[0] != n || !is_number(count.dtype)) {
    return refuse(p, count, fmt::format("num_detections [{}] or [{}, 1] int32/int64/float32", n, n));
  }
  if (scores.shape != std::vector<std::int64_t>{n, k} || scores.dtype != boxes.dtype) {
    return refuse(p, scores,
                  fmt::format("scores [{}, {}] {} (as the boxes {})", n, k, data_type_name(boxes.dtype),
                              describe(boxes)));
  }
  if (ids.shape != std::vector<std::int64_t>{n, k} || !is_number(ids.dtype)) {
    return refuse(p, ids, fmt::format("classes [{}, {}] int32/int64/float32", n, k));
  }
  l.dtype = boxes.dtype;
  l.batch = static_cast<int>(n);
  l.rows = static_cast<int>(k);
  l.classes = options.classes > 0 ? options.classes : kMaxDetectClasses;
  l.candidates = l.rows;
  return l;
}

Result<DetectLayout> resolve_boxes(std::span<const OutputInfo> out, const DetectParserOptions& options) {
  if (out.size() == 2) return resolve_decoded_boxes(out, options);
  if (out.size() == 4) return resolve_nms_outputs(out, options);
  return refuse_count(DetectParser::kBoxes, out,
                      "boxes [N, A, 4] and scores [N, A, C], or the NMS outputs num_detections [N, 1], "
                      "boxes [N, K, 4], scores [N, K], classes [N, K]");
}

float inf() {
  return std::numeric_limits<float>::infinity();
}

Status check_view(const TensorView& t, const OutputInfo& o, bool device) {
  const std::string what = fmt::format("model output '{}'", o.name);
  if (t.data == nullptr) return make_error(StatusCode::kInvalidArgument, what, ": no data");
  bool same = t.rank == static_cast<int>(o.shape.size()) && t.dtype == o.dtype;
  for (int i = 0; same && i < t.rank; ++i)
    same = t.shape[static_cast<std::size_t>(i)] == o.shape[static_cast<std::size_t>(i)];
  if (!same) {
    std::vector<std::int64_t> shape(t.shape.begin(), t.shape.begin() + std::max(t.rank, 0));
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("{}: {} {} at run time, the plan has {} {}", what, shape_text(shape),
                                  data_type_name(t.dtype), shape_text(o.shape), data_type_name(o.dtype)));
  }
  if (!t.is_contiguous()) return make_error(StatusCode::kInvalidArgument, what, ": must be dense");
  return check_memory(t, device, what.c_str());
}

Result<std::vector<float>> class_thresholds(const DetectLayout& layout, const DetectPostParams& params) {
  const int classes = layout.classes;
  auto check_class = [&](int c, std::string_view what) -> Status {
    if (c < 0 || c >= classes) {
      return make_error(
          StatusCode::kInvalidArgument,
          fmt::format("detect: {} {} is not a class of the model (0..{})", what, c, classes - 1));
    }
    return Status::ok();
  };
  if (std::isnan(params.score_threshold)) {
    return make_error(StatusCode::kInvalidArgument, "detect: the score threshold is NaN");
  }
  std::vector<float> thresholds(static_cast<std::size_t>(classes), params.score_threshold);
  for (const auto& [c, t] : params.class_thresholds) {
    FOVEA_TRY(check_class(c, "threshold class"));
    if (std::isnan(t)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("detect: the threshold of class {} is NaN", c));
    }
    thresholds[static_cast<std::size_t>(c)] = t;
  }
  if (!params.classes.empty()) {
    std::vector<bool> keep(static_cast<std::size_t>(classes), false);
    for (int c : params.classes) {
      FOVEA_TRY(check_class(c, "class filter entry"));
      keep[static_cast<std::size_t>(c)] = true;
    }
    for (int c = 0; c < classes; ++c) {
      if (!keep[static_cast<std::size_t>(c)]) thresholds[static_cast<std::size_t>(c)] = inf();
    }
  }
  if (params.background_class != -1) {
    FOVEA_TRY(check_class(params.background_class, "background class"));
    thresholds[static_cast<std::size_t>(params.background_class)] = inf();
  }
  return thresholds;
}

Status check_params(const DetectPostConfig& config, const DetectLayout& layout) {
  const DetectParserOptions& o = config.options;
  const DetectPostParams& p = config.params;
  if (o.input_width <= 0 || o.input_height <= 0) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("detect: the network input size {}x{} is not positive", o.input_width, o.input_height));
  }
  if (layout.batch > kMaxDetectBatch) {
    return make_error(StatusCode::kUnsupported, fmt::format("detect: batch {} is above the supported {}",
                                                            layout.batch, kMaxDetectBatch));
  }
  if (layout.classes > kMaxDetectClasses) {
    return make_error(StatusCode::kUnsupported, fmt::format("detect: {} classes, at most {} are supported",
                                                            layout.classes, kMaxDetectClasses));
  }
  if (!(p.min_width >= 0.0f) || !(p.min_height >= 0.0f) || std::isinf(p.min_width) ||
      std::isinf(p.min_height)) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("detect: minimum box size {}x{} must be finite and >= 0", p.min_width, p.min_height));
  }
  if (layout.kind == DetectLayoutKind::kDetectNet &&
      (!(o.detectnet_norm_x > 0.0f) || !(o.detectnet_norm_y > 0.0f) || o.detectnet_stride_x < 0 ||
       o.detectnet_stride_y < 0)) {
    return make_error(StatusCode::kInvalidArgument,
                      "detect: detectnet box norms must be positive and strides >= 0");
  }
  return Status::ok();
}

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

}  // namespace

std::string_view detect_parser_name(DetectParser parser) {
  for (const auto& [p, name] : kParserNames) {
    if (p == parser) return name;
  }
  return "?";
}

Result<DetectParser> parse_parser_name(std::string_view name) {
  std::vector<std::string_view> known;
  for (const auto& [p, n] : kParserNames) {
    if (n == name) return p;
    known.push_back(n);
  }
  return make_error(
      StatusCode::kInvalidArgument,
      fmt::format("unknown detection parser '{}'; known parsers: {}", name, fmt::join(known, ", ")));
}

std::string_view detect_layout_name(DetectLayoutKind kind) {
  switch (kind) {
    case DetectLayoutKind::kSsd: return "ssd";
    case DetectLayoutKind::kYoloAnchorFree: return "yolo anchor-free [N, 4 + C, A]";
    case DetectLayoutKind::kYoloAnchorBased: return "yolo anchor-based [N, A, 5 + C]";
    case DetectLayoutKind::kDetectNet: return "detectnet";
    case DetectLayoutKind::kBoxes: return "decoded boxes";
    case DetectLayoutKind::kNmsOutputs: return "NMS outputs";
  }
  return "?";
}

Result<DetectLayout> resolve_outputs(DetectParser parser, std::span<const OutputInfo> outputs,
                                     const DetectParserOptions& options) {
  switch (parser) {
    case DetectParser::kSsd: return resolve_ssd(outputs, options);
    case DetectParser::kYolo: return resolve_yolo(outputs, options);
    case DetectParser::kDetectNet: return resolve_detectnet(outputs, options);
    case DetectParser::kBoxes: return resolve_boxes(outputs, options);
  }
  return make_error(StatusCode::kInvalidArgument, "detect: unknown parser");
}

Status check_outputs(DetectParser parser, std::span<const OutputInfo> outputs,
                     const DetectParserOptions& options) {
  return resolve_outputs(parser, outputs, options).status();
}

FrameMapping stretch_mapping(int input_width, int input_height, int frame_width, int frame_height) {
  FrameMapping m;
  m.scale_x = static_cast<float>(frame_width) / static_cast<float>(input_width);
  m.scale_y = static_cast<float>(frame_height) / static_cast<float>(input_height);
  m.frame_width = static_cast<float>(frame_width);
  m.frame_height = static_cast<float>(frame_height);
  return m;
}

FrameMapping letterbox_mapping(int input_width, int input_height, int frame_width, int frame_height) {
  return placement_mapping(image::fit_placement(image::ResizeFit::kLetterbox, frame_width, frame_height,
                                                input_width, input_height),
                           image::Roi{0, 0, frame_width, frame_height}, frame_width, frame_height);
}

FrameMapping placement_mapping(const image::ResizePlacement& placement, const image::Roi& roi,
                               int frame_width, int frame_height) {
  FrameMapping m;
  m.pad_x = static_cast<float>(placement.offset_x);
  m.pad_y = static_cast<float>(placement.offset_y);
  // ROI pixels per placed pixel (the inverse of the placement's scale, without rounding it twice).
  m.scale_x = static_cast<float>(roi.width) / static_cast<float>(placement.width);
  m.scale_y = static_cast<float>(roi.height) / static_cast<float>(placement.height);
  m.origin_x = static_cast<float>(roi.x);
  m.origin_y = static_cast<float>(roi.y);
  m.frame_width = static_cast<float>(frame_width);
  m.frame_height = static_cast<float>(frame_height);
  return m;
}

DetectPostParams default_detect_params(DetectParser parser) {
  DetectPostParams p;
  switch (parser) {
    case DetectParser::kSsd:  // torchvision.models.detection.SSD's defaults
      p.score_threshold = 0.01f;
      p.iou_threshold = 0.45f;
      p.max_candidates_per_class = 400;
      p.top_k = 200;
      p.background_class = 0;
      break;
    case DetectParser::kYolo:  // ultralytics' predict defaults (conf 0.25, iou 0.7, max_det 300)
      p.score_threshold = 0.25f;
      p.iou_threshold = 0.7f;
      p.top_k = 300;
      p.best_class_only = true;
      break;
    case DetectParser::kDetectNet:  // DeepStream's PeopleNet config (pre-cluster 0.4, NMS 0.5)
      p.score_threshold = 0.4f;
      p.iou_threshold = 0.5f;
      p.top_k = 100;
      break;
    case DetectParser::kBoxes: break;
  }
  return p;
}

Result<DetectPostPlan> plan_detect_post(const DetectPostConfig& config, std::span<const OutputInfo> outputs,
                                        DetectDevice device) {
  DetectPostPlan plan;
  plan.config = config;
  plan.outputs.assign(outputs.begin(), outputs.end());
  FOVEA_ASSIGN_OR_RETURN(plan.layout, resolve_outputs(config.parser, outputs, config.options));
  const DetectLayout& l = plan.layout;
  FOVEA_TRY(check_params(config, l));
  FOVEA_ASSIGN_OR_RETURN(plan.thresholds, class_thresholds(l, config.params));
  const bool nms_outputs = l.kind == DetectLayoutKind::kNmsOutputs;
  plan.nms_shape = NmsShape{l.batch, l.candidates, nms_outputs ? 1 : l.classes};
  plan.nms_params.score_threshold = -inf();  // the thresholds were applied before (-inf: not counted)
  // The model's own NMS ran already: IoU never exceeds 1, so nothing more is suppressed.
  plan.nms_params.iou_threshold = nms_outputs ? 1.0f : config.params.iou_threshold;
  plan.nms_params.top_k = config.params.top_k;
  plan.nms_params.max_candidates_per_class = config.params.max_candidates_per_class;
  plan.nms_params.background_class = -1;
  FOVEA_TRY(check_nms(plan.nms_shape, plan.nms_params).with_context("detect"));
  plan.detections_per_image = config.params.top_k;
  if (device == DetectDevice::kCuda) {
    FOVEA_ASSIGN_OR_RETURN(const NmsPlan nms_plan, plan_nms(plan.nms_shape, plan.nms_params));
    plan.workspace_bytes = detail::detect_workspace_layout(plan.nms_shape, nms_plan.workspace_bytes).total;
  }
  return plan;
}

namespace detail {

namespace {
std::size_t align_up(std::size_t bytes) {
  constexpr std::size_t kAlignment = 256;  // cudaMalloc's alignment: keeps every array aligned
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}
}  // namespace

DetectWorkspace detect_workspace_layout(const NmsShape& shape, std::size_t nms_bytes) {
  DetectWorkspace w;
  const auto boxes = static_cast<std::size_t>(shape.batch) * static_cast<std::size_t>(shape.boxes);
  w.boxes = 0;
  w.scores = align_up(boxes * 4 * sizeof(float));
  w.nms = w.scores + align_up(boxes * static_cast<std::size_t>(shape.classes) * sizeof(float));
  w.nms_bytes = nms_bytes;
  w.total = w.nms + align_up(nms_bytes);
  return w;
}

Result<DetectArgs> make_detect_args(const DetectPostPlan& plan, const DetectInputs& inputs, bool device) {
  const DetectLayout& l = plan.layout;
  const DetectParserOptions& o = plan.config.options;
  const DetectPostParams& p = plan.config.params;
  if (inputs.outputs.size() != plan.outputs.size()) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("detect: {} output tensors, the plan has {}",
                                                                inputs.outputs.size(), plan.outputs.size()));
  }
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    FOVEA_TRY(check_view(inputs.outputs[i], plan.outputs[i], device));
  }
  if (l.kind == DetectLayoutKind::kSsd && l.priors < 0) {
    FOVEA_TRY(check_tensor(inputs.priors, 2, {DataType::kFloat32}, "priors"));
    if (inputs.priors.shape[0] != l.rows || inputs.priors.shape[1] != 4 || !inputs.priors.is_contiguous()) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("detect: priors must be dense [{}, 4] float32 (one per anchor)", l.rows));
    }
    FOVEA_TRY(check_memory(inputs.priors, device, "priors"));
  }
  if (inputs.mappings.size() != static_cast<std::size_t>(l.batch)) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("detect: {} frame mappings for a batch of {}",
                                                                inputs.mappings.size(), l.batch));
  }
  auto args = std::make_unique<DetectArgs>();
  DetectArgs& a = *args;
  a.kind = l.kind;
  a.batch = l.batch;
  a.rows = l.rows;
  a.classes = l.classes;
  a.candidates = l.candidates;
  a.grid_width = l.grid_width;
  a.grid_height = l.grid_height;
  a.model_columns = l.kind == DetectLayoutKind::kBoxes
                        ? static_cast<int>(plan.outputs[static_cast<std::size_t>(l.scores)].shape.size() == 3
                                               ? plan.outputs[static_cast<std::size_t>(l.scores)].shape[2]
                                               : 1)
                        : l.classes;
  a.score_columns = plan.nms_shape.classes;
  a.background_class = p.background_class;
  a.best_class_only = p.best_class_only && l.kind != DetectLayoutKind::kNmsOutputs;
  a.min_width = p.min_width;
  a.min_height = p.min_height;
  a.ssd = o.ssd;
  a.softmax = o.ssd_softmax;
  a.yolo.has_objectness = l.kind == DetectLayoutKind::kYoloAnchorBased;
  a.yolo.apply_sigmoid = o.yolo_sigmoid;
  const float sx = o.normalized_boxes ? static_cast<float>(o.input_width) : 1.0f;
  const float sy = o.normalized_boxes ? static_cast<float>(o.input_height) : 1.0f;
  a.yolo.scale_x = sx;
  a.yolo.scale_y = sy;
  a.box_scale_x = sx;
  a.box_scale_y = sy;
  if (l.kind == DetectLayoutKind::kDetectNet) {
    a.stride_x = static_cast<float>(o.detectnet_stride_x > 0 ? o.detectnet_stride_x
                                                             : ceil_div(o.input_width, l.grid_width));
    a.stride_y = static_cast<float>(o.detectnet_stride_y > 0 ? o.detectnet_stride_y
                                                             : ceil_div(o.input_height, l.grid_height));
  }
  a.norm_x = o.detectnet_norm_x;
  a.norm_y = o.detectnet_norm_y;
  a.offset_x = o.detectnet_offset_x;
  a.offset_y = o.detectnet_offset_y;
  a.coverage_sigmoid = o.detectnet_sigmoid;
  std::copy(inputs.mappings.begin(), inputs.mappings.end(), a.mappings);
  std::copy(plan.thresholds.begin(), plan.thresholds.end(), a.thresholds);
  return std::move(*args);
}

template <typename T>
DetectTensors<T> detect_tensors(const DetectPostPlan& plan, const DetectInputs& inputs) {
  const DetectLayout& l = plan.layout;
  auto data = [&](int role) {
    return role < 0 ? nullptr : inputs.outputs[static_cast<std::size_t>(role)].data;
  };
  auto typed = [&](int role) { return static_cast<const T*>(data(role)); };
  DetectTensors<T> t;
  t.loc = typed(l.loc);
  t.logits = typed(l.logits);
  t.priors = static_cast<const float*>(l.priors >= 0 ? data(l.priors) : inputs.priors.data);
  t.predictions = typed(l.predictions);
  t.coverage = typed(l.coverage);
  t.bbox = typed(l.bbox);
  t.boxes = typed(l.boxes);
  t.scores = typed(l.scores);
  t.count = data(l.count);
  t.class_ids = data(l.class_ids);
  if (l.count >= 0) t.count_dtype = plan.outputs[static_cast<std::size_t>(l.count)].dtype;
  if (l.class_ids >= 0) t.class_ids_dtype = plan.outputs[static_cast<std::size_t>(l.class_ids)].dtype;
  return t;
}
template DetectTensors<float> detect_tensors<float>(const DetectPostPlan&, const DetectInputs&);
template DetectTensors<std::uint16_t> detect_tensors<std::uint16_t>(const DetectPostPlan&,
                                                                    const DetectInputs&);

float softmax_sum(const float* terms, int count) {
  float lanes[kSumLanes] = {};
  for (int c = 0; c < count; ++c) lanes[c % kSumLanes] = add_rn(lanes[c % kSumLanes], terms[c]);
  for (int o = kSumLanes / 2; o > 0; o /= 2) {
    float next[kSumLanes];
    for (int l = 0; l < kSumLanes; ++l) next[l] = add_rn(lanes[l], lanes[l ^ o]);
    std::copy(next, next + kSumLanes, lanes);
  }
  return lanes[0];
}

}  // namespace detail

namespace {

// Steps 1-3 for one frame: boxes [candidates, 4] and the scores NMS sees [candidates, columns].
template <typename T>
void decode_frame(const detail::DetectArgs& a, const detail::DetectTensors<T>& t, int n, float* boxes,
                  float* scores) {
  using namespace detail;
  const FrameMapping& m = a.mappings[n];
  std::vector<float> s(static_cast<std::size_t>(a.classes)), terms(static_cast<std::size_t>(a.classes));
  for (int b = 0; b < a.candidates; ++b) {
    Box box{};
    const bool kept = frame_box(raw_box(a, t, n, b), m, a.min_width, a.min_height, box);
    float* out_box = boxes + static_cast<std::int64_t>(b) * 4;
    out_box[0] = box.x1;
    out_box[1] = box.y1;
    out_box[2] = box.x2;
    out_box[3] = box.y2;
    float* out = scores + static_cast<std::int64_t>(b) * a.score_columns;
    if (a.kind == DetectLayoutKind::kNmsOutputs) {
      const int c = nms_output_class(a, t, n, b);
      out[0] = c >= 0 ? counted_score(a, kept, -1, c, raw_score(a, t, n, b, 0)) : negative_infinity();
      continue;
    }
    if (a.kind == DetectLayoutKind::kSsd && a.softmax) {
      float max = negative_infinity();
      for (int c = 0; c < a.classes; ++c) max = fmaxf(max, raw_score(a, t, n, b, c));
      for (int c = 0; c < a.classes; ++c) {
        terms[static_cast<std::size_t>(c)] = exp_rn(sub_rn(raw_score(a, t, n, b, c), max));
      }
      const float sum = softmax_sum(terms.data(), a.classes);
      for (int c = 0; c < a.classes; ++c) {
        s[static_cast<std::size_t>(c)] = ssd_probability(raw_score(a, t, n, b, c), max, sum);
      }
    } else {
      for (int c = 0; c < a.classes; ++c) s[static_cast<std::size_t>(c)] = raw_score(a, t, n, b, c);
    }
    int best = -1;
    if (a.best_class_only) {
      if (a.kind == DetectLayoutKind::kDetectNet) {
        best = detectnet_best_class(a, t, n, b);
      } else {
        float best_score = 0.0f;
        for (int c = 0; c < a.classes; ++c) {
          if (c != a.background_class && better_class(s[static_cast<std::size_t>(c)], c, best_score, best)) {
            best = c;
            best_score = s[static_cast<std::size_t>(c)];
          }
        }
      }
    }
    for (int c = 0; c < a.classes; ++c)
      out[c] = counted_score(a, kept, best, c, s[static_cast<std::size_t>(c)]);
  }
}

}  // namespace

Status run_detect_post_cpu(const DetectPostPlan& plan, const DetectInputs& inputs,
                           const DetectionList& output) {
  FOVEA_ASSIGN_OR_RETURN(const detail::DetectArgs args, detail::make_detect_args(plan, inputs, false));
  const NmsShape& shape = plan.nms_shape;
  std::vector<float> boxes(static_cast<std::size_t>(shape.batch) * shape.boxes * 4);
  std::vector<float> scores(static_cast<std::size_t>(shape.batch) * shape.boxes * shape.classes);
  dispatch_float_dtype(plan.layout.dtype, [&](auto tag) {
    using T = decltype(tag);
    const detail::DetectTensors<T> tensors = detail::detect_tensors<T>(plan, inputs);
    for (int n = 0; n < shape.batch; ++n) {
      const std::size_t row = static_cast<std::size_t>(n) * shape.boxes;
      decode_frame(args, tensors, n, boxes.data() + row * 4, scores.data() + row * shape.classes);
    }
    FOVEA_CHECK(run_nms_cpu(shape, plan.nms_params, boxes.data(), scores.data(), output).is_ok());
    if (plan.layout.kind == DetectLayoutKind::kNmsOutputs) {
      for (int n = 0; n < shape.batch; ++n) {
        for (int i = 0; i < output.counts[n]; ++i) {
          Detection& d = output.detections[static_cast<std::int64_t>(n) * plan.detections_per_image + i];
          d.class_id = detail::nms_output_class(args, tensors, n, d.box_index);
        }
      }
    }
  });
  return Status::ok();
}

#if !defined(FOVEA_HAVE_CUDA)
Status run_detect_post_cuda(cudaStream_t, const DetectPostPlan&, const DetectInputs&, void*, std::size_t,
                            const DetectionList&) {
  return make_error(StatusCode::kUnsupported, "detect: this build has no CUDA");
}
#endif

}  // namespace fovea::post
