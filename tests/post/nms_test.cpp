// NMS reference: hand-made cases for every rule nms.h defines (thresholds, ties, IoU edge cases,
// NaN/inf scores, class awareness, top-k, the per-class candidate cap) and bad arguments.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "post/nms.h"

namespace fovea::post {
namespace {

struct NmsResult {
  std::vector<Detection> detections;
  std::vector<std::int32_t> counts;
  // (box index, class) of image n's detections, in order.
  std::vector<std::pair<int, int>> kept(int n, const NmsParams& params) const {
    std::vector<std::pair<int, int>> out;
    for (int i = 0; i < counts[static_cast<std::size_t>(n)]; ++i) {
      const Detection& d = detections[static_cast<std::size_t>(n * params.top_k + i)];
      out.emplace_back(d.box_index, d.class_id);
    }
    return out;
  }
};

NmsResult run_cpu(const NmsShape& shape, const NmsParams& params, const std::vector<float>& boxes,
                  const std::vector<float>& scores) {
  NmsResult result;
  result.detections.resize(static_cast<std::size_t>(shape.batch * params.top_k));
  result.counts.resize(static_cast<std::size_t>(shape.batch));
  const Status status = run_nms_cpu(shape, params, boxes.data(), scores.data(),
                                    {result.detections.data(), result.counts.data()});
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return result;
}

using Kept = std::vector<std::pair<int, int>>;
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Nms, IouExactlyAtThresholdKeepsBoth) {
  // Box 1 covers half of box 0: IoU = 1 / 2 exactly.
  const std::vector<float> boxes = {0, 0, 2, 1, 0, 0, 1, 1};
  const std::vector<float> scores = {0.9f, 0.8f};
  NmsParams params;
  params.iou_threshold = 0.5f;
  EXPECT_EQ(run_cpu({1, 2, 1}, params, boxes, scores).kept(0, params), (Kept{{0, 0}, {1, 0}}));
  params.iou_threshold = std::nextafter(0.5f, 0.0f);  // just below: IoU 0.5 > threshold suppresses
  EXPECT_EQ(run_cpu({1, 2, 1}, params, boxes, scores).kept(0, params), (Kept{{0, 0}}));
}

TEST(Nms, EqualScoresRankByLowerIndexAndIdenticalBoxesSuppress) {
  const std::vector<float> boxes = {0, 0, 10, 10, 0, 0, 10, 10, 0, 0, 10, 10};
  const std::vector<float> scores = {0.5f, 0.7f, 0.7f};
  const NmsParams params;
  // Boxes 1 and 2 tie at 0.7: box 1 ranks first and suppresses the identical 2 and 0.
  EXPECT_EQ(run_cpu({1, 3, 1}, params, boxes, scores).kept(0, params), (Kept{{1, 0}}));
}

TEST(Nms, ZeroAreaBoxesNeverSuppress) {
  const std::vector<float> boxes = {5, 5, 5, 5, 5, 5, 5, 5, 0, 0, 10, 0, 0, 0, 10, 10};
  const std::vector<float> scores = {0.9f, 0.8f, 0.7f, 0.6f};
  const NmsParams params;
  EXPECT_EQ(run_cpu({1, 4, 1}, params, boxes, scores).kept(0, params),
            (Kept{{0, 0}, {1, 0}, {2, 0}, {3, 0}}));
}

TEST(Nms, SwappedCornersAreNormalized) {
  const std::vector<float> boxes = {10, 10, 0, 0, 0, 0, 10, 10};
  const std::vector<float> scores = {0.9f, 0.8f};
  const NmsParams params;
  const NmsResult r = run_cpu({1, 2, 1}, params, boxes, scores);
  EXPECT_EQ(r.kept(0, params), (Kept{{0, 0}}));
  const Box b = r.detections[0].box;
  EXPECT_EQ(b.x1, 0.0f);
  EXPECT_EQ(b.y1, 0.0f);
  EXPECT_EQ(b.x2, 10.0f);
  EXPECT_EQ(b.y2, 10.0f);
}

TEST(Nms, NanAndMinusInfScoresAreDroppedPlusInfRanksFirst) {
  const std::vector<float> boxes = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  const std::vector<float> scores = {std::nanf(""), -kInf, 0.9f, kInf};
  NmsParams params;
  params.score_threshold = -kInf;  // even the lowest threshold drops NaN and -inf
  const NmsResult r = run_cpu({1, 4, 1}, params, boxes, scores);
  EXPECT_EQ(r.kept(0, params), (Kept{{3, 0}, {2, 0}}));
  EXPECT_EQ(r.detections[0].score, kInf);
}

TEST(Nms, ScoreMustBeAboveThreshold) {
  const std::vector<float> boxes = {0, 0, 1, 1, 2, 2, 3, 3};
  const std::vector<float> scores = {0.05f, 0.0500001f};
  const NmsParams params;  // threshold 0.05: equal is not above
  EXPECT_EQ(run_cpu({1, 2, 1}, params, boxes, scores).kept(0, params), (Kept{{1, 0}}));
}

TEST(Nms, ClassesDoNotSuppressEachOther) {
  // Two identical boxes; box 0 scores class 0, box 1 scores class 1; class 2 is background.
  const std::vector<float> boxes = {0, 0, 10, 10, 0, 0, 10, 10};
  const std::vector<float> scores = {0.9f, 0.0f, 0.99f, 0.0f, 0.8f, 0.99f};
  NmsParams params;
  params.background_class = 2;
  EXPECT_EQ(run_cpu({1, 2, 3}, params, boxes, scores).kept(0, params), (Kept{{0, 0}, {1, 1}}));
}

TEST(Nms, TopKRanksAcrossClassesWithTiesByFlatIndex) {
  // Disjoint boxes; class 1 of box 0 and class 0 of box 1 tie: flat index 0*2+1 < 1*2+0.
  const std::vector<float> boxes = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  const std::vector<float> scores = {0.3f, 0.6f, 0.6f, 0.2f, 0.9f, 0.1f};
  NmsParams params;
  params.top_k = 3;
  EXPECT_EQ(run_cpu({1, 3, 2}, params, boxes, scores).kept(0, params), (Kept{{2, 0}, {0, 1}, {1, 0}}));
}

TEST(Nms, ImagesAreIndependentAndCarryTheirIndex) {
  const std::vector<float> boxes = {0, 0, 10, 10, 0, 0, 10, 9, 0, 0, 10, 10, 20, 20, 30, 30};
  const std::vector<float> scores = {0.9f, 0.8f, 0.9f, 0.8f};
  const NmsParams params;
  const NmsResult r = run_cpu({2, 2, 1}, params, boxes, scores);
  EXPECT_EQ(r.kept(0, params), (Kept{{0, 0}}));
  EXPECT_EQ(r.kept(1, params), (Kept{{0, 0}, {1, 0}}));
  EXPECT_EQ(r.detections[static_cast<std::size_t>(params.top_k)].image, 1);
  EXPECT_EQ(r.detections[static_cast<std::size_t>(params.top_k) + 1].score, 0.8f);
}

TEST(Nms, CandidateCapKeepsTheBestOfEachClass) {
  const std::vector<float> boxes = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  const std::vector<float> scores = {0.2f, 0.9f, 0.5f};
  NmsParams params;
  params.max_candidates_per_class = 2;
  EXPECT_EQ(run_cpu({1, 3, 1}, params, boxes, scores).kept(0, params), (Kept{{1, 0}, {2, 0}}));
}

TEST(Nms, SuppressedBoxesDoNotSuppress) {
  // 0 suppresses 1 (IoU 0.8); 1 would suppress 2 (IoU 0.8) but is gone; 0 and 2 overlap 0.6 < 0.7.
  const std::vector<float> boxes = {0, 0, 10, 1, 1, 0, 11, 1, 2, 0, 12, 1};
  const std::vector<float> scores = {0.9f, 0.8f, 0.7f};
  NmsParams params;
  params.iou_threshold = 0.7f;
  EXPECT_EQ(run_cpu({1, 3, 1}, params, boxes, scores).kept(0, params), (Kept{{0, 0}, {2, 0}}));
}

TEST(Nms, BadArgumentsAreRejected) {
  const NmsParams good;
  EXPECT_EQ(check_nms({0, 10, 2}, good).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_nms({1, 10, kMaxNmsClasses + 1}, good).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_nms({1000, 100000, 100}, good).code(), StatusCode::kInvalidArgument);
  NmsParams p = good;
  p.iou_threshold = std::nanf("");
  EXPECT_EQ(check_nms({1, 10, 2}, p).code(), StatusCode::kInvalidArgument);
  p = good;
  p.top_k = 0;
  EXPECT_EQ(check_nms({1, 10, 2}, p).code(), StatusCode::kInvalidArgument);
  p = good;
  p.max_candidates_per_class = kMaxCandidatesPerClass + 1;
  EXPECT_EQ(check_nms({1, 10, 2}, p).code(), StatusCode::kInvalidArgument);
  p = good;
  p.background_class = 2;
  EXPECT_EQ(check_nms({1, 10, 2}, p).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(check_nms({16, 8732, 81}, good).is_ok());
}

}  // namespace
}  // namespace fovea::post
