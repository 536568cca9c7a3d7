// NonMaxSuppression on CUDA against the CPU reference, which it must match exactly (same triples,
// same order): random overlapping boxes in corner order either way or in centre form, zero-area and
// duplicate boxes, quantized scores (ties), NaN/inf/-0 scores, with and without a score threshold,
// max_output_boxes_per_class from 0 to all, odd sizes, batch 1 and N, N below and above 64 and up
// to 20000, parameters as plan-time constants and as run-time inputs. float32 only: the op's
// boxes and scores are float32 (the CPU op accepts nothing else).
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include <fmt/format.h>

#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::testing {
namespace {

struct BoxOptions {
  bool center_point_box = false;
  bool flip_corners = true;  // some boxes as (y2, x2, y1, x1) or mixed
  bool degenerate = true;    // some zero-area (and, in centre form, negative-size) boxes
  bool duplicates = true;    // some boxes copied from an earlier one
  float quantum = 0.0f;      // > 0: coordinates on this grid, so boxes coincide more often
};

float quantize(float v, float quantum) {
  return quantum > 0 ? std::round(v / quantum) * quantum : v;
}

// Boxes of 0..30 units in a 100 x 100 field, so that many overlap.
Tensor random_boxes(int batches, int n, const BoxOptions& options, std::mt19937& rng) {
  std::uniform_real_distribution<float> position(0.0f, 100.0f);
  std::uniform_real_distribution<float> size(0.0f, 30.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> values;
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < n; ++i) {
      if (options.duplicates && i > 0 && unit(rng) < 0.1f) {
        const auto from = values.end() - 4 * (1 + static_cast<int>(unit(rng) * static_cast<float>(i - 1)));
        values.insert(values.end(), from, from + 4);
        continue;
      }
      const float y = quantize(position(rng), options.quantum);
      const float x = quantize(position(rng), options.quantum);
      float h = quantize(size(rng), options.quantum);
      float w = quantize(size(rng), options.quantum);
      if (options.degenerate && unit(rng) < 0.05f) h = 0.0f;
      if (options.center_point_box) {
        if (options.degenerate && unit(rng) < 0.05f) w = -w;
        values.insert(values.end(), {x, y, w, h});
      } else if (options.flip_corners && unit(rng) < 0.3f) {
        values.insert(values.end(), {y + h, x, y, x + w});
      } else {
        values.insert(values.end(), {y, x, y + h, x + w});
      }
    }
  }
  return float_tensor({batches, n, 4}, std::move(values));
}

struct ScoreOptions {
  float quantum = 0.0f;   // > 0: scores on this grid (ties)
  bool specials = false;  // NaN, +-inf and +-0 among the scores
};

Tensor random_scores(int batches, int classes, int n, const ScoreOptions& options, std::mt19937& rng) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  std::vector<float> values;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(batches) * classes * n; ++i) {
    float score = quantize(unit(rng), options.quantum);
    if (options.specials && unit(rng) < 0.05f) score = specials[static_cast<int>(unit(rng) * 4.999f)];
    values.push_back(score);
  }
  return float_tensor({batches, classes, n}, std::move(values));
}

struct NmsParams {
  std::optional<std::int64_t> max_per_class;  // nullopt: the input is omitted (no rows)
  float iou_threshold = 0.5f;
  std::optional<float> score_threshold;
  bool constant = true;  // parameters as plan-time constants (else device inputs read at run time)
};

// The node and its inputs; omitted trailing inputs are left out, as a model would.
::testing::AssertionResult nms_matches_cpu(const Tensor& boxes, const Tensor& scores, const NmsParams& params,
                                           bool center_point_box) {
  std::vector<Tensor> inputs = {boxes, scores};
  if (params.max_per_class || params.score_threshold) {
    inputs.push_back(params.max_per_class ? int64_tensor({1}, {*params.max_per_class}) : Tensor());
    inputs.push_back(float_tensor({1}, {params.iou_threshold}));
  }
  if (params.score_threshold) inputs.push_back(float_tensor({1}, {*params.score_threshold}));
  NodeBuilder builder("NonMaxSuppression", 11);
  builder.inputs(static_cast<int>(inputs.size())).attr("center_point_box", center_point_box ? 1 : 0);
  if (inputs.size() > 2 && !params.max_per_class) builder.omit_input(2);
  std::vector<int> constants;
  for (int i = 2; params.constant && i < static_cast<int>(inputs.size()); ++i) {
    if (!inputs[static_cast<std::size_t>(i)].empty_storage()) constants.push_back(i);
  }
  const Node node = builder.build();
  return cuda_matches_cpu(node, inputs, {.constant_inputs = constants});
}

std::string describe(int batches, int classes, int n, const NmsParams& params, bool center) {
  return fmt::format("[{}, {}, {}] max {} iou {} threshold {} {} {}", batches, classes, n,
                     params.max_per_class ? std::to_string(*params.max_per_class) : "absent",
                     params.iou_threshold,
                     params.score_threshold ? std::to_string(*params.score_threshold) : "none",
                     params.constant ? "constant" : "run-time", center ? "centre" : "corners");
}

struct Size {
  int batches, classes, boxes;
};

TEST(CudaNonMaxSuppression, MatchesCpuOnRandomBoxes) {
  FOVEA_REQUIRE_GPU();
  const Size sizes[] = {{1, 1, 7}, {1, 3, 13}, {3, 5, 127}, {2, 1, 64}, {2, 2, 65}, {1, 7, 200}};
  const NmsParams params[] = {
      {.max_per_class = 1},
      {.max_per_class = 7, .iou_threshold = 0.3f, .score_threshold = 0.4f},
      {.max_per_class = 1000000000, .iou_threshold = 0.5f},
      {.max_per_class = 1000000000, .iou_threshold = 0.0f, .score_threshold = 0.2f, .constant = false},
      {.max_per_class = 5, .iou_threshold = 0.7f, .constant = false},
  };
  std::mt19937 rng(1);
  for (const Size& size : sizes) {
    for (const NmsParams& p : params) {
      for (bool center : {false, true}) {
        const Tensor boxes = random_boxes(size.batches, size.boxes, {.center_point_box = center}, rng);
        const Tensor scores = random_scores(size.batches, size.classes, size.boxes, {}, rng);
        EXPECT_TRUE(nms_matches_cpu(boxes, scores, p, center))
            << describe(size.batches, size.classes, size.boxes, p, center);
      }
    }
  }
}

// Quantized scores and coordinates: equal scores rank by box index, identical boxes suppress each
// other, and IoUs land exactly on the threshold; NaN is dropped, +inf ranks first, -inf last.
TEST(CudaNonMaxSuppression, TiesDuplicatesAndSpecialScores) {
  FOVEA_REQUIRE_GPU();
  const NmsParams params[] = {
      {.max_per_class = 1000},
      {.max_per_class = 1000, .score_threshold = 0.5f},
      {.max_per_class = 1000, .score_threshold = -std::numeric_limits<float>::infinity(), .constant = false},
      {.max_per_class = 3, .iou_threshold = 0.25f},
  };
  std::mt19937 rng(2);
  for (const Size& size : {Size{1, 2, 50}, Size{2, 3, 300}}) {
    for (const NmsParams& p : params) {
      for (bool center : {false, true}) {
        const Tensor boxes =
            random_boxes(size.batches, size.boxes, {.center_point_box = center, .quantum = 5.0f}, rng);
        const Tensor scores =
            random_scores(size.batches, size.classes, size.boxes, {.quantum = 0.125f, .specials = true}, rng);
        EXPECT_TRUE(nms_matches_cpu(boxes, scores, p, center))
            << describe(size.batches, size.classes, size.boxes, p, center);
      }
    }
  }
}

// N in the thousands: no candidate cap per class, any number of kept boxes.
TEST(CudaNonMaxSuppression, ThousandsOfBoxes) {
  FOVEA_REQUIRE_GPU();
  std::mt19937 rng(3);
  const struct {
    Size size;
    NmsParams params;
  } cases[] = {
      {{1, 4, 3001}, {.max_per_class = 1000000, .iou_threshold = 0.5f}},
      {{2, 3, 5000}, {.max_per_class = 100, .iou_threshold = 0.5f, .score_threshold = 0.05f}},
      {{1, 1, 20000}, {.max_per_class = 200, .iou_threshold = 0.6f, .constant = false}},
      {{1, 2, 20000}, {.max_per_class = 1000000, .iou_threshold = 0.3f, .score_threshold = 0.5f}},
  };
  for (const auto& c : cases) {
    const Tensor boxes = random_boxes(c.size.batches, c.size.boxes, {}, rng);
    const Tensor scores =
        random_scores(c.size.batches, c.size.classes, c.size.boxes, {.quantum = 0.001f}, rng);
    EXPECT_TRUE(nms_matches_cpu(boxes, scores, c.params, false))
        << describe(c.size.batches, c.size.classes, c.size.boxes, c.params, false);
  }
}

// Outputs of no rows: max_output_boxes_per_class 0, negative or omitted, no boxes, no candidate.
TEST(CudaNonMaxSuppression, EmptySelections) {
  FOVEA_REQUIRE_GPU();
  std::mt19937 rng(4);
  const Tensor boxes = random_boxes(2, 9, {}, rng);
  const Tensor scores = random_scores(2, 3, 9, {}, rng);
  for (bool constant : {true, false}) {
    EXPECT_TRUE(nms_matches_cpu(boxes, scores, {.max_per_class = 0, .constant = constant}, false));
    EXPECT_TRUE(nms_matches_cpu(boxes, scores, {.max_per_class = -4, .constant = constant}, false));
    EXPECT_TRUE(nms_matches_cpu(boxes, scores,
                                {.max_per_class = 5, .score_threshold = 2.0f, .constant = constant}, false));
    EXPECT_TRUE(nms_matches_cpu(random_boxes(2, 0, {}, rng), random_scores(2, 3, 0, {}, rng),
                                {.max_per_class = 5, .constant = constant}, false));
  }
  EXPECT_TRUE(nms_matches_cpu(boxes, scores, {}, false));
  EXPECT_TRUE(nms_matches_cpu(boxes, scores, {.score_threshold = 0.1f}, false));
}

}  // namespace
}  // namespace fovea::runtime::testing
