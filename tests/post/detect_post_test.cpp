// Detection postprocess, CPU reference: parser names, output matching and its refusals, one
// hand-computed case per parser and layout, frame mappings, and the defined behaviour for NaN and
// infinite scores and boxes, boxes outside the frame, zero detections, more detections than top-k,
// per-class thresholds, the class filter and the minimum size.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "image/tolerances.h"
#include "post/detect_post.h"
#include "post/detect_test_util.h"

namespace fovea::post {
namespace {

using image::testing::kBoxTolerance;
using image::testing::kF32Tolerance;
using testing::DetectResult;
using testing::HostModel;
using testing::run_cpu;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::nanf("");

void expect_box(const Detection& d, float x1, float y1, float x2, float y2) {
  EXPECT_NEAR(d.box.x1, x1, kBoxTolerance);
  EXPECT_NEAR(d.box.y1, y1, kBoxTolerance);
  EXPECT_NEAR(d.box.x2, x2, kBoxTolerance);
  EXPECT_NEAR(d.box.y2, y2, kBoxTolerance);
}

DetectPostConfig config_for(DetectParser parser, int input_width, int input_height) {
  DetectPostConfig c;
  c.parser = parser;
  c.params = default_detect_params(parser);
  c.options.input_width = input_width;
  c.options.input_height = input_height;
  return c;
}

TEST(DetectParserNames, KnownNamesRoundTripAndUnknownListsThem) {
  for (DetectParser p :
       {DetectParser::kSsd, DetectParser::kYolo, DetectParser::kDetectNet, DetectParser::kBoxes}) {
    auto parsed = parse_parser_name(detect_parser_name(p));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = parse_parser_name("yolov8");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  const std::string message = bad.status().to_string();
  for (const char* name : {"'yolov8'", "ssd", "yolo", "detectnet", "boxes"}) {
    EXPECT_NE(message.find(name), std::string::npos) << message;
  }
}

// --- hand-computed cases ------------------------------------------------------------------------

// torchvision's BoxCoder (weights 10, 10, 5, 5; dw clamped at log(1000/16)) on pixel corner anchors,
// softmax over the logits with class 0 the background, stretched onto a 200x100 frame.
HostModel ssd_model(bool priors_as_output) {
  HostModel m;
  const float ln2 = std::log(2.0f);
  // Anchor 0 [10, 20, 50, 60]: dx 1 -> +0.1 * 40, dw 5 ln 2 -> width x2: x -6..74, y 20..60.
  // Anchor 1 [0, 0, 10, 10]: dw 1000 clamps to log(62.5): width 625 about cx 5.
  m.add("bbox_regression", {1, 2, 4}, {1, 0, 5 * ln2, 0, 0, 0, 1000, 0});
  m.add("cls_logits", {1, 2, 3}, {0, ln2, 0, 0, 5, 0});
  const std::vector<float> priors = {10, 20, 50, 60, 0, 0, 10, 10};
  if (priors_as_output) {
    m.add("anchors", {2, 4}, priors);
  } else {
    m.priors = priors;
  }
  return m;
}

TEST(DetectPost, SsdTorchvisionHandComputed) {
  for (bool priors_as_output : {true, false}) {
    HostModel m = ssd_model(priors_as_output);
    DetectPostConfig c = config_for(DetectParser::kSsd, 100, 100);
    c.params.score_threshold = 0.3f;
    const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 200, 100)});
    ASSERT_EQ(r.count(0), 2);
    // exp(5) / (exp(5) + 2) first; x -307.5..317.5 (x2 clipped), y 0..10.
    EXPECT_EQ(r.at(0, 0).box_index, 1);
    EXPECT_EQ(r.at(0, 0).class_id, 1);
    EXPECT_NEAR(r.at(0, 0).score, std::exp(5.0f) / (std::exp(5.0f) + 2.0f), kF32Tolerance);
    expect_box(r.at(0, 0), 0, 0, 200, 10);
    // softmax(0, ln 2, 0) = (0.25, 0.5, 0.25): class 1 at 0.5; x1 -6 -> -12 clipped to 0, x2 74 -> 148.
    EXPECT_EQ(r.at(0, 1).box_index, 0);
    EXPECT_EQ(r.at(0, 1).class_id, 1);
    EXPECT_NEAR(r.at(0, 1).score, 0.5f, kF32Tolerance);
    expect_box(r.at(0, 1), 0, 20, 148, 60);
  }
}

TEST(DetectPost, SsdWithoutPriorsIsRefusedAtRunTime) {
  HostModel m = ssd_model(false);
  m.priors.clear();
  DetectPostConfig c = config_for(DetectParser::kSsd, 100, 100);
  auto plan = plan_detect_post(c, m.infos(), DetectDevice::kCpu);
  ASSERT_TRUE(plan.is_ok());
  std::vector<Detection> d(200);
  std::vector<std::int32_t> counts(1);
  const auto views = m.views();
  const std::vector<FrameMapping> mappings = {stretch_mapping(100, 100, 100, 100)};
  const Status s = run_detect_post_cpu(*plan, {views, {}, mappings}, {d.data(), counts.data()});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.to_string().find("priors"), std::string::npos) << s.to_string();
}

// YOLOv8 [1, 4 + 2, 3]: two overlapping boxes (IoU 180 / 220 = 0.82) and one apart.
HostModel yolov8_model() {
  HostModel m;
  m.add("output0", {1, 6, 3},
        {50, 52, 200,          // cx
         40, 40, 100,          // cy
         20, 20, 40,           // w
         10, 10, 40,           // h
         0.9f, 0.1f, 0.3f,     // class 0
         0.8f, 0.7f, 0.05f});  // class 1
  return m;
}

// Three anchors are fewer than 4 + C rows, so the class count tells the layout.
DetectPostConfig yolov8_config() {
  DetectPostConfig c = config_for(DetectParser::kYolo, 320, 320);
  c.options.classes = 2;
  return c;
}

TEST(DetectPost, YoloAnchorFreeBestClassOnly) {
  HostModel m = yolov8_model();
  DetectPostConfig c = yolov8_config();  // best class only, IoU 0.7
  const DetectResult r = run_cpu(m, c, {stretch_mapping(320, 320, 640, 640)});
  ASSERT_EQ(r.count(0), 3);
  EXPECT_EQ(r.at(0, 0).box_index, 0);
  EXPECT_EQ(r.at(0, 0).class_id, 0);
  EXPECT_FLOAT_EQ(r.at(0, 0).score, 0.9f);
  expect_box(r.at(0, 0), 80, 70, 120, 90);
  EXPECT_EQ(r.at(0, 1).box_index, 1);  // its best class is 1: no class-0 box suppresses it
  EXPECT_EQ(r.at(0, 1).class_id, 1);
  EXPECT_EQ(r.at(0, 2).box_index, 2);
  EXPECT_EQ(r.at(0, 2).class_id, 0);
  expect_box(r.at(0, 2), 360, 160, 440, 240);
}

TEST(DetectPost, YoloAnchorFreeMultiLabel) {
  HostModel m = yolov8_model();
  DetectPostConfig c = yolov8_config();
  c.params.best_class_only = false;
  const DetectResult r = run_cpu(m, c, {stretch_mapping(320, 320, 320, 320)});
  ASSERT_EQ(r.count(0), 3);
  // (0, class 0) 0.9, (0, class 1) 0.8, then (1, class 1) 0.7 is suppressed by (0, class 1).
  EXPECT_EQ(std::make_pair(r.at(0, 0).box_index, r.at(0, 0).class_id), std::make_pair(0, 0));
  EXPECT_EQ(std::make_pair(r.at(0, 1).box_index, r.at(0, 1).class_id), std::make_pair(0, 1));
  EXPECT_EQ(std::make_pair(r.at(0, 2).box_index, r.at(0, 2).class_id), std::make_pair(2, 0));
}

TEST(DetectPost, YoloAnchorBasedObjectnessTimesClass) {
  HostModel m;
  m.add("output", {1, 2, 7}, {50, 40, 20, 10, 0.5f, 0.9f, 0.2f, 10, 10, 4, 4, 0.1f, 1.0f, 1.0f});
  DetectPostConfig c = config_for(DetectParser::kYolo, 100, 100);
  c.options.classes = 2;  // [1, 2, 7]: 7 = 5 + 2 says anchor-based though 2 < 7
  auto layout = resolve_outputs(c.parser, m.infos(), c.options);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  EXPECT_EQ(layout->kind, DetectLayoutKind::kYoloAnchorBased);
  const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  ASSERT_EQ(r.count(0), 1);
  EXPECT_EQ(r.at(0, 0).class_id, 0);
  EXPECT_FLOAT_EQ(r.at(0, 0).score, 0.45f);
  expect_box(r.at(0, 0), 40, 35, 60, 45);
}

TEST(DetectPost, DetectNetDeepStreamFormula) {
  // Grid 3 x 2 over a 48 x 32 input: stride ceil(48 / 3) = ceil(32 / 2) = 16; norm 35, offset 0.5.
  const int w = 3, h = 2, cells = w * h;
  std::vector<float> cov(2 * cells, 0.0f), bbox(8 * cells, 0.0f);
  const int cell = 1 * w + 1;    // (gx, gy) = (1, 1)
  cov[1 * cells + cell] = 0.9f;  // class 1
  cov[0 * cells + 0] = 0.3f;     // class 0 at cell 0: below PeopleNet's 0.4
  const float cx = (16.0f + 0.5f) / 35.0f, cy = (16.0f + 0.5f) / 35.0f;
  // The box (10, 12, 30, 28): x1 = (o1 - cx) * -35, x2 = (o3 + cx) * 35.
  bbox[(4 + 0) * cells + cell] = cx - 10.0f / 35.0f;
  bbox[(4 + 1) * cells + cell] = cy - 12.0f / 35.0f;
  bbox[(4 + 2) * cells + cell] = 30.0f / 35.0f - cx;
  bbox[(4 + 3) * cells + cell] = 28.0f / 35.0f - cy;
  HostModel m;
  m.add("output_bbox/BiasAdd", {1, 8, h, w}, bbox);
  m.add("output_cov/Sigmoid", {1, 2, h, w}, cov);
  DetectPostConfig c = config_for(DetectParser::kDetectNet, 48, 32);
  const DetectResult r = run_cpu(m, c, {stretch_mapping(48, 32, 48, 32)});
  ASSERT_EQ(r.count(0), 1);
  EXPECT_EQ(r.at(0, 0).class_id, 1);
  EXPECT_EQ(r.at(0, 0).box_index, 1 * cells + cell);
  EXPECT_FLOAT_EQ(r.at(0, 0).score, 0.9f);
  expect_box(r.at(0, 0), 10, 12, 30, 28);

  // With the coverage as logits every (class, cell) passes 0.4 (sigmoid(0) = 0.5), but only one has
  // a box: all-zero offsets give x1 = x2 = gx * 16 + 0.5, an empty box.
  c.options.detectnet_sigmoid = true;
  const DetectResult s = run_cpu(m, c, {stretch_mapping(48, 32, 48, 32)});
  ASSERT_EQ(s.count(0), 1);
  EXPECT_NEAR(s.at(0, 0).score, 1.0f / (1.0f + std::exp(-0.9f)), kF32Tolerance);
}

TEST(DetectPost, BoxesNormalizedLetterboxed) {
  HostModel m;
  m.add("boxes", {1, 1, 4}, {0.1f, 0.3f, 0.5f, 0.7f});
  m.add("scores", {1, 1, 2}, {0.1f, 0.6f});
  DetectPostConfig c = config_for(DetectParser::kBoxes, 100, 100);
  c.options.normalized_boxes = true;
  // A 200 x 100 frame letterboxed into 100 x 100: scale 0.5, placed 100 x 50 at (0, 25).
  const FrameMapping mapping = letterbox_mapping(100, 100, 200, 100);
  EXPECT_FLOAT_EQ(mapping.pad_y, 25.0f);
  EXPECT_FLOAT_EQ(mapping.scale_x, 2.0f);
  const DetectResult r = run_cpu(m, c, {mapping});
  ASSERT_EQ(r.count(0), 1);
  EXPECT_EQ(r.at(0, 0).class_id, 1);
  expect_box(r.at(0, 0), 20, 10, 100, 90);  // input (10, 30, 50, 70)
}

TEST(DetectPost, NmsOutputsRankWithoutSecondSuppression) {
  HostModel m;
  m.add("num_detections", {1, 1}, {2}, DataType::kInt32);
  m.add("detection_boxes", {1, 3, 4}, {10, 10, 50, 50, 12, 12, 52, 52, 0, 0, 5, 5});
  m.add("detection_scores", {1, 3}, {0.8f, 0.9f, 0.95f});
  m.add("detection_classes", {1, 3}, {3, 3, 1}, DataType::kInt32);
  DetectPostConfig c = config_for(DetectParser::kBoxes, 100, 100);
  c.options.classes = 5;
  auto layout = resolve_outputs(c.parser, m.infos(), c.options);
  ASSERT_TRUE(layout.is_ok());
  EXPECT_EQ(layout->kind, DetectLayoutKind::kNmsOutputs);
  const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  ASSERT_EQ(r.count(0), 2);  // row 2 is past num_detections
  EXPECT_EQ(r.at(0, 0).box_index, 1);
  EXPECT_EQ(r.at(0, 0).class_id, 3);
  EXPECT_EQ(r.at(0, 1).box_index, 0);
  EXPECT_EQ(r.at(0, 1).class_id, 3);
}

TEST(DetectPost, PlacementMappingUndoesACroppedKeepAspectResize) {
  // ROI (100, 50, 400 x 200) of a 640 x 480 frame, resized by 0.5 to 200 x 100 at the top-left.
  const image::Roi roi{100, 50, 400, 200};
  const auto placement = image::fit_placement(image::ResizeFit::kKeepAspectTopLeft, 400, 200, 200, 200);
  const FrameMapping m = placement_mapping(placement, roi, 640, 480);
  HostModel model;
  model.add("boxes", {1, 1, 4}, {10, 20, 30, 40});
  model.add("scores", {1, 1}, {0.9f});
  const DetectResult r = run_cpu(model, config_for(DetectParser::kBoxes, 200, 200), {m});
  ASSERT_EQ(r.count(0), 1);
  expect_box(r.at(0, 0), 120, 90, 160, 130);
}

// --- bad and extreme input ----------------------------------------------------------------------

TEST(DetectPost, NanAndInfiniteScoresAndBoxesOutsideTheFrame) {
  HostModel m;
  m.add("boxes", {1, 7, 4}, {10,   10, 20,   20,    // 0: NaN score: never counts
                             30,   30, 40,   40,    // 1: +inf score: counts, ranks first
                             kNan, 0,  5,    5,     // 2: NaN coordinate: dropped
                             -50,  0,  -10,  10,    // 3: wholly left of the frame: dropped
                             -10,  50, 20,   60,    // 4: partly outside: clipped to x 0..20
                             0,    0,  kInf, 10,    // 5: infinite coordinate: dropped
                             90,   95, 80,   85});  // 6: corners swapped: ordered
  m.add("scores", {1, 7}, {kNan, kInf, 0.9f, 0.8f, 0.7f, 0.6f, -kInf});
  DetectPostConfig c = config_for(DetectParser::kBoxes, 100, 100);
  c.params.score_threshold = -1.0f;  // -inf still never counts
  const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  ASSERT_EQ(r.count(0), 2);
  EXPECT_EQ(r.at(0, 0).box_index, 1);
  EXPECT_EQ(r.at(0, 0).score, kInf);
  EXPECT_EQ(r.at(0, 1).box_index, 4);
  expect_box(r.at(0, 1), 0, 50, 20, 60);

  m.outputs[1].f32[6] = 0.5f;  // row 6 now counts, with ordered corners
  const DetectResult s = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  ASSERT_EQ(s.count(0), 3);
  expect_box(s.at(0, 2), 80, 85, 90, 95);
}

TEST(DetectPost, SsdNanOrInfiniteLogitDropsTheAnchor) {
  HostModel m = ssd_model(true);
  m.outputs[1].f32[1] = kNan;  // anchor 0: softmax of a row with NaN is NaN (torch.softmax too)
  m.outputs[1].f32[4] = kInf;  // anchor 1: inf - inf = NaN
  DetectPostConfig c = config_for(DetectParser::kSsd, 100, 100);
  const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  EXPECT_EQ(r.count(0), 0);
}

TEST(DetectPost, ZeroDetections) {
  HostModel m = ssd_model(true);
  m.outputs[1].f32 = {20, 0, 0, 20, 0, 0};  // the background wins everywhere
  DetectPostConfig c = config_for(DetectParser::kSsd, 100, 100);
  const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  EXPECT_EQ(r.count(0), 0);
}

TEST(DetectPost, ThousandsOfDetectionsKeepTheTopK) {
  // 5000 disjoint 8 x 8 boxes on a 100 x 50 grid (stride 10), all above the threshold, per frame.
  const int rows = 5000;
  std::vector<float> boxes, scores;
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < rows; ++i) {
      const float x = static_cast<float>(i % 100) * 10, y = static_cast<float>(i / 100) * 10;
      boxes.insert(boxes.end(), {x, y, x + 8, y + 8});
      scores.push_back(0.5f + 0.4f * static_cast<float>((i * 7919 + n) % rows) / rows);
    }
  }
  HostModel m;
  m.add("boxes", {2, rows, 4}, boxes);
  m.add("scores", {2, rows, 1}, scores);
  DetectPostConfig c = config_for(DetectParser::kBoxes, 1000, 500);
  c.params.top_k = 100;
  c.params.max_candidates_per_class = 5000;
  const DetectResult r =
      run_cpu(m, c, {stretch_mapping(1000, 500, 1000, 500), stretch_mapping(1000, 500, 1000, 500)});
  for (int n = 0; n < 2; ++n) {
    ASSERT_EQ(r.count(n), 100);
    EXPECT_NEAR(r.at(n, 0).score, 0.9f, 1e-3);
    for (int i = 1; i < 100; ++i) {
      EXPECT_GT(r.at(n, i - 1).score, r.at(n, i).score);
    }
  }
}

TEST(DetectPost, ClassThresholdsFilterBackgroundAndMinimumSize) {
  HostModel m;
  m.add("boxes", {1, 2, 4}, {0, 0, 50, 50, 60, 60, 62, 90});
  m.add("scores", {1, 2, 4}, {0.5f, 0.5f, 0.5f, 0.5f, 0.9f, 0.9f, 0.9f, 0.9f});
  DetectPostConfig c = config_for(DetectParser::kBoxes, 100, 100);
  c.params.score_threshold = 0.4f;
  c.params.class_thresholds = {{1, 0.6f}};  // class 1 needs more than 0.5
  c.params.classes = {0, 1, 2};             // class 3 is never reported
  c.params.background_class = 2;
  c.params.min_width = 3.0f;  // row 1 is 2 pixels wide
  const DetectResult r = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  ASSERT_EQ(r.count(0), 1);
  EXPECT_EQ(r.at(0, 0).class_id, 0);
  EXPECT_EQ(r.at(0, 0).box_index, 0);

  c.params.min_width = 1.5f;  // in frame pixels: the 2-pixel box at scale 1 passes
  const DetectResult s = run_cpu(m, c, {stretch_mapping(100, 100, 100, 100)});
  EXPECT_EQ(s.count(0), 3);  // row 1 class 0 and 1 (0.9 > 0.6), row 0 class 0
}

TEST(DetectPost, BadParamsAreRefused) {
  HostModel m = yolov8_model();
  auto refused = [&](DetectPostConfig c, const char* needle) {
    auto plan = plan_detect_post(c, m.infos(), DetectDevice::kCpu);
    ASSERT_FALSE(plan.is_ok()) << needle;
    EXPECT_NE(plan.status().to_string().find(needle), std::string::npos) << plan.status().to_string();
  };
  const DetectPostConfig good = yolov8_config();
  DetectPostConfig c = good;
  c.params.classes = {0, 2};
  refused(c, "class filter entry 2");
  c = good;
  c.params.class_thresholds = {{1, kNan}};
  refused(c, "NaN");
  c = good;
  c.params.top_k = 0;
  refused(c, "top_k");
  c = good;
  c.options.input_width = 0;
  refused(c, "input size");
  c = good;
  c.params.min_width = -1;
  refused(c, "minimum box size");

  auto plan = plan_detect_post(good, m.infos(), DetectDevice::kCpu);
  ASSERT_TRUE(plan.is_ok());
  std::vector<Detection> d(300);
  std::vector<std::int32_t> counts(1);
  const auto views = m.views();
  const Status no_mapping = run_detect_post_cpu(*plan, {views, {}, {}}, {d.data(), counts.data()});
  EXPECT_NE(no_mapping.to_string().find("0 frame mappings for a batch of 1"), std::string::npos)
      << no_mapping.to_string();
}

// --- output matching ----------------------------------------------------------------------------

void expect_refused(DetectParser parser, const std::vector<OutputInfo>& outputs,
                    std::initializer_list<const char*> needles, int classes = 0) {
  DetectParserOptions o;
  o.input_width = 300;
  o.input_height = 300;
  o.classes = classes;
  const Status s = check_outputs(parser, outputs, o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  for (const char* needle : needles)
    EXPECT_NE(s.to_string().find(needle), std::string::npos) << s.to_string();
}

TEST(DetectOutputs, MismatchesNameTheOutputItsShapeAndTheExpectation) {
  using V = std::vector<OutputInfo>;
  // SSD: logits with another anchor count.
  expect_refused(DetectParser::kSsd, V{{"bbox_regression", {1, 8732, 4}}, {"cls_logits", {1, 8700, 91}}},
                 {"'cls_logits' [1, 8700, 91]", "expected class logits [1, 8732, C]"});
  // SSD: a single output.
  expect_refused(DetectParser::kSsd, V{{"out", {1, 8732, 95}}},
                 {"the model has 1 output(s)", "'out' [1, 8732, 95]"});
  // SSD: priors of the wrong count.
  expect_refused(DetectParser::kSsd, V{{"loc", {1, 10, 4}}, {"conf", {1, 10, 3}}, {"priors", {11, 4}}},
                 {"'priors' [11, 4]", "priors [10, 4] float32"});
  // YOLO: rank 2.
  expect_refused(DetectParser::kYolo, V{{"output0", {84, 8400}}}, {"'output0' [84, 8400]", "[N, 4 + C, A]"});
  // YOLO: the labels say 80 classes, the model has 79.
  expect_refused(DetectParser::kYolo, V{{"output0", {1, 83, 8400}}}, {"79 classes, the labels 80"}, 80);
  // DetectNet: bbox without four channels per class.
  expect_refused(DetectParser::kDetectNet,
                 V{{"output_cov/Sigmoid", {1, 3, 34, 60}}, {"output_bbox/BiasAdd", {1, 10, 34, 60}}},
                 {"'output_bbox/BiasAdd' [1, 10, 34, 60]", "bbox [1, 12, 34, 60]"});
  // boxes: three outputs.
  expect_refused(DetectParser::kBoxes, V{{"a", {1, 5, 4}}, {"b", {1, 5}}, {"c", {1, 5}}}, {"3 output(s)"});
  // boxes: NMS outputs with a float16 score but float32 boxes.
  expect_refused(DetectParser::kBoxes,
                 V{{"num_detections", {2, 1}, DataType::kInt32},
                   {"detection_boxes", {2, 100, 4}},
                   {"detection_scores", {2, 100}, DataType::kFloat16},
                   {"detection_classes", {2, 100}, DataType::kInt32}},
                 {"'detection_scores' [2, 100] float16", "scores [2, 100] float32"});
}

TEST(DetectOutputs, RolesAreFoundByShapeThenName) {
  DetectParserOptions o;
  o.input_width = 640;
  o.input_height = 640;
  using V = std::vector<OutputInfo>;
  auto ssd = resolve_outputs(DetectParser::kSsd,
                             V{{"cls_logits", {4, 3234, 91}}, {"bbox_regression", {4, 3234, 4}}}, o);
  ASSERT_TRUE(ssd.is_ok());
  EXPECT_EQ(ssd->loc, 1);
  EXPECT_EQ(ssd->logits, 0);
  EXPECT_EQ(ssd->classes, 91);
  // Four classes: only the names tell the deltas from the scores.
  auto four = resolve_outputs(DetectParser::kSsd, V{{"scores", {1, 10, 4}}, {"deltas", {1, 10, 4}}}, o);
  ASSERT_TRUE(four.is_ok());
  EXPECT_EQ(four->logits, 0);
  auto v8 = resolve_outputs(DetectParser::kYolo, V{{"output0", {1, 84, 8400}}}, o);
  ASSERT_TRUE(v8.is_ok());
  EXPECT_EQ(v8->kind, DetectLayoutKind::kYoloAnchorFree);
  EXPECT_EQ(v8->classes, 80);
  auto v5 = resolve_outputs(DetectParser::kYolo, V{{"output", {1, 25200, 85}}}, o);
  ASSERT_TRUE(v5.is_ok());
  EXPECT_EQ(v5->kind, DetectLayoutKind::kYoloAnchorBased);
  EXPECT_EQ(v5->classes, 80);
  auto dn = resolve_outputs(DetectParser::kDetectNet, V{{"a", {2, 12, 34, 60}}, {"b", {2, 3, 34, 60}}}, o);
  ASSERT_TRUE(dn.is_ok());
  EXPECT_EQ(dn->coverage, 1);
  EXPECT_EQ(dn->candidates, 3 * 34 * 60);
  auto nms = resolve_outputs(DetectParser::kBoxes,
                             V{{"det_boxes", {1, 100, 4}},
                               {"det_scores", {1, 100}},
                               {"det_classes", {1, 100}, DataType::kInt64},
                               {"num_dets", {1, 1}, DataType::kInt32}},
                             o);
  ASSERT_TRUE(nms.is_ok()) << nms.status().to_string();
  EXPECT_EQ(nms->count, 3);
  EXPECT_EQ(nms->boxes, 0);
  EXPECT_EQ(nms->scores, 1);
  EXPECT_EQ(nms->class_ids, 2);
}

TEST(DetectOutputs, TensorsThatDoNotMatchThePlanAreRefused) {
  HostModel m = yolov8_model();
  auto plan = plan_detect_post(yolov8_config(), m.infos(), DetectDevice::kCpu);
  ASSERT_TRUE(plan.is_ok());
  std::vector<float> other(6 * 4);
  const std::vector<TensorView> views = {
      contiguous_tensor(other.data(), DataType::kFloat32, MemoryKind::kHost, {1, 6, 4})};
  std::vector<Detection> d(300);
  std::vector<std::int32_t> counts(1);
  const std::vector<FrameMapping> mappings = {stretch_mapping(320, 320, 320, 320)};
  const Status s = run_detect_post_cpu(*plan, {views, {}, mappings}, {d.data(), counts.data()});
  EXPECT_NE(s.to_string().find("'output0': [1, 6, 4] float32 at run time, the plan has [1, 6, 3]"),
            std::string::npos)
      << s.to_string();
}

// The CPU reference on every random layout, batch 1 and 5, float32 and float16: it runs, finds
// something, and each detection obeys the contract (inside its frame, above its threshold).
TEST(DetectPost, RandomInputsObeyTheContract) {
  for (auto kind :
       {DetectLayoutKind::kSsd, DetectLayoutKind::kYoloAnchorFree, DetectLayoutKind::kYoloAnchorBased,
        DetectLayoutKind::kDetectNet, DetectLayoutKind::kBoxes, DetectLayoutKind::kNmsOutputs}) {
    for (int batch : {1, 5}) {
      for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
        auto r = testing::random_model(kind, batch, 7 + batch, dtype);
        const auto mappings =
            testing::random_mappings(batch, r.config.options.input_width, r.config.options.input_height);
        const DetectResult out = run_cpu(r.model, r.config, mappings);
        int total = 0;
        for (int n = 0; n < batch; ++n) {
          total += out.count(n);
          for (int i = 0; i < out.count(n); ++i) {
            const Detection& d = out.at(n, i);
            const FrameMapping& fm = mappings[static_cast<std::size_t>(n)];
            EXPECT_GE(d.box.x1, 0.0f);
            EXPECT_LE(d.box.x2, fm.frame_width);
            EXPECT_LE(d.box.y2, fm.frame_height);
            EXPECT_GE(d.box.x2 - d.box.x1, r.config.params.min_width);
            EXPECT_GT(d.score, d.class_id == 1 ? 0.6f : r.config.params.score_threshold);
            EXPECT_NE(d.class_id, r.config.params.background_class);
            if (i > 0) {
              EXPECT_GE(out.at(n, i - 1).score, d.score);
            }
          }
        }
        EXPECT_GT(total, 0) << detect_layout_name(kind) << " batch " << batch;
      }
    }
  }
}

}  // namespace
}  // namespace fovea::post
