// MOTA, IDF1 and HOTA on cases small enough to work out by hand from the definitions (metrics.h);
// each test's comment is the working.
#include <cmath>

#include <gtest/gtest.h>

#include "track/metrics.h"

namespace fovea::track {
namespace {

// Boxes 10x10 at x = 0 (A), at x = 100 (B, far from A), and A shifted right by s, whose IoU with A
// is (10 - s) / (10 + s).
constexpr Box kA{0, 0, 10, 10};
constexpr Box kB{100, 0, 110, 10};
constexpr Box kFar{500, 500, 510, 510};
Box shifted(float s) {
  return Box{s, 0, 10 + s, 10};
}

MotSequence sequence(std::vector<std::vector<MotObject>> frames) {
  return MotSequence{std::move(frames)};
}

TEST(ClearMot, CountsMissesFalsePositivesAndSwitches) {
  // Frame 1: truth 1 at A, 2 at B; hypotheses 10 at A, 20 at B: two matches.
  // Frame 2: same truth; hypotheses 10 at A, 30 at B: two matches, truth 2 switched 20 -> 30.
  // Frame 3: truth 1 at A, 3 at (300, 0) unmatched (a miss); hypotheses
  //          10 at A (a match) and 30 at kFar (a false positive).
  // GT = 6, matches 5, FN 1, FP 1, IDSW 1: MOTA = 1 - 3/6 = 0.5; every match has IoU 1: MOTP 1.
  const Box c{300, 0, 310, 10};
  const MotSequence truth = sequence({{{1, kA}, {2, kB}}, {{1, kA}, {2, kB}}, {{1, kA}, {3, c}}});
  const MotSequence hyp = sequence({{{10, kA}, {20, kB}}, {{10, kA}, {30, kB}}, {{10, kA}, {30, kFar}}});
  const ClearMotMetrics m = clear_mot(truth, hyp);
  EXPECT_EQ(m.ground_truth, 6);
  EXPECT_EQ(m.matches, 5);
  EXPECT_EQ(m.false_negatives, 1);
  EXPECT_EQ(m.false_positives, 1);
  EXPECT_EQ(m.id_switches, 1);
  EXPECT_DOUBLE_EQ(m.mota, 0.5);
  EXPECT_DOUBLE_EQ(m.motp, 1.0);
}

TEST(ClearMot, KeepsThePreviousMatchOverABetterOverlap) {
  // Frame 1: truth 1 at A; hypothesis 10 at A shifted 2.5 (IoU 7.5/12.5 = 0.6): matched.
  // Frame 2: hypothesis 10 still at IoU 0.6, hypothesis 20 at A shifted 0.5 (IoU 9.5/10.5 = 0.905).
  // CLEAR-MOT keeps 10 (still >= 0.5), so no switch and 20 is a false positive:
  // MOTA = 1 - (0 + 1 + 0) / 2 = 0.5, MOTP = 0.6.
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}});
  const MotSequence hyp = sequence({{{10, shifted(2.5f)}}, {{10, shifted(2.5f)}, {20, shifted(0.5f)}}});
  const ClearMotMetrics m = clear_mot(truth, hyp);
  EXPECT_EQ(m.id_switches, 0);
  EXPECT_EQ(m.false_positives, 1);
  EXPECT_DOUBLE_EQ(m.mota, 0.5);
  EXPECT_NEAR(m.motp, 0.6, 1e-6);
}

TEST(ClearMot, BelowHalfIouIsAMissAndAFalsePositive) {
  // IoU (10 - 4) / (10 + 4) = 0.43 < 0.5: FN 1, FP 1, MOTA = 1 - 2/1 = -1.
  const ClearMotMetrics m = clear_mot(sequence({{{1, kA}}}), sequence({{{10, shifted(4)}}}));
  EXPECT_EQ(m.matches, 0);
  EXPECT_DOUBLE_EQ(m.mota, -1.0);
}

TEST(ClearMot, CountsASwitchAgainstTheLastMatchAfterAGap) {
  // Truth 1 at A in frames 1-3; hypothesis 10 in frame 1, nothing in frame 2, 20 in frame 3.
  // The switch counts against 10, matched two frames earlier: IDSW 1, FN 1, MOTA = 1 - 2/3.
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}, {{1, kA}}});
  const MotSequence hyp = sequence({{{10, kA}}, {}, {{20, kA}}});
  const ClearMotMetrics m = clear_mot(truth, hyp);
  EXPECT_EQ(m.id_switches, 1);
  EXPECT_NEAR(m.mota, 1.0 / 3.0, 1e-12);
}

TEST(IdentityMetrics, MatchesTrajectoriesOptimally) {
  // Truth 1 at A and truth 2 at B, frames 1-4. Hypothesis 10 at A in frames 1-2; hypothesis 20 at
  // B in frames 1-2 and at A in frames 3-4. Shared frames: (1,10) 2, (1,20) 2, (2,20) 2. The best
  // one-to-one matching is 1-10 and 2-20: IDTP 4 (pairing 1-20 first would give only 2).
  // GT 8, hypotheses 6: IDFN 4, IDFP 2, IDF1 = 2*4 / (8 + 6) = 4/7, IDP 4/6, IDR 4/8.
  const MotSequence truth =
      sequence({{{1, kA}, {2, kB}}, {{1, kA}, {2, kB}}, {{1, kA}, {2, kB}}, {{1, kA}, {2, kB}}});
  const MotSequence hyp = sequence({{{10, kA}, {20, kB}}, {{10, kA}, {20, kB}}, {{20, kA}}, {{20, kA}}});
  const IdentityMetrics m = identity_metrics(truth, hyp);
  EXPECT_EQ(m.idtp, 4);
  EXPECT_EQ(m.idfn, 4);
  EXPECT_EQ(m.idfp, 2);
  EXPECT_DOUBLE_EQ(m.idf1, 4.0 / 7.0);
  EXPECT_DOUBLE_EQ(m.idp, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.idr, 0.5);
}

TEST(IdentityMetrics, ASwitchHalvesIdf1) {
  // Truth 1 at A, frames 1-4; hypothesis 10 in frames 1-2 and 20 in frames 3-4. Only one of them
  // can be truth 1's: IDTP 2, IDF1 = 2*2 / (4 + 4) = 0.5 (while MOTA = 1 - 1/4 = 0.75).
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}, {{1, kA}}, {{1, kA}}});
  const MotSequence hyp = sequence({{{10, kA}}, {{10, kA}}, {{20, kA}}, {{20, kA}}});
  EXPECT_DOUBLE_EQ(identity_metrics(truth, hyp).idf1, 0.5);
  EXPECT_DOUBLE_EQ(clear_mot(truth, hyp).mota, 0.75);
}

TEST(Hota, PerfectTrackingScoresOne) {
  const MotSequence truth = sequence({{{1, kA}, {2, kB}}, {{1, kA}, {2, kB}}});
  const HotaMetrics m = hota(truth, truth);
  EXPECT_DOUBLE_EQ(m.hota, 1.0);
  EXPECT_DOUBLE_EQ(m.deta, 1.0);
  EXPECT_DOUBLE_EQ(m.assa, 1.0);
}

TEST(Hota, LocalizationCountsPerAlpha) {
  // Truth 1 at A in frames 1-2, hypothesis 10 at A shifted 2 (IoU 8/12 = 0.667). For the 13
  // alphas 0.05..0.65 both frames are true positives: DetA 1, AssA 1 (TPA 2 of |g| 2, |h| 2),
  // HOTA_alpha 1; for the 6 alphas 0.70..0.95 there is no true positive: HOTA_alpha 0.
  // HOTA = 13/19.
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}});
  const MotSequence hyp = sequence({{{10, shifted(2)}}, {{10, shifted(2)}}});
  const HotaMetrics m = hota(truth, hyp);
  EXPECT_DOUBLE_EQ(m.hota_at[12], 1.0);
  EXPECT_DOUBLE_EQ(m.hota_at[13], 0.0);
  EXPECT_NEAR(m.hota, 13.0 / 19.0, 1e-12);
}

TEST(Hota, ASwitchHalvesAssociation) {
  // Truth 1 at A, frames 1-4; hypothesis 10 in frames 1-2, 20 in frames 3-4, IoU 1. Every alpha:
  // TP 4, DetA 1. Each true positive's association score is TPA / (|g| + |h| - TPA) =
  // 2 / (4 + 2 - 2) = 0.5, so AssA 0.5 and HOTA = sqrt(1 x 0.5) = 0.7071.
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}, {{1, kA}}, {{1, kA}}});
  const MotSequence hyp = sequence({{{10, kA}}, {{10, kA}}, {{20, kA}}, {{20, kA}}});
  const HotaMetrics m = hota(truth, hyp);
  EXPECT_DOUBLE_EQ(m.deta, 1.0);
  EXPECT_DOUBLE_EQ(m.assa, 0.5);
  EXPECT_NEAR(m.hota, std::sqrt(0.5), 1e-12);
}

TEST(Hota, DetectionErrors) {
  // Truth 1 at A in frames 1-2; hypothesis 10 at A in frame 1, 30 far away in frame 2. Every
  // alpha: TP 1, FN 1, FP 1: DetA = 1/3. The one true positive's pair: TPA 1, |g| 2, |h| 1:
  // 1 / (2 + 1 - 1) = 0.5 = AssA. HOTA = sqrt(1/3 x 1/2) = sqrt(1/6).
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}});
  const MotSequence hyp = sequence({{{10, kA}}, {{30, kFar}}});
  const HotaMetrics m = hota(truth, hyp);
  EXPECT_NEAR(m.deta, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(m.assa, 0.5, 1e-12);
  EXPECT_NEAR(m.hota, std::sqrt(1.0 / 6.0), 1e-12);
}

TEST(Metrics, EmptyAndUnequalSequences) {
  // No hypotheses: every truth box a miss. MOTA 0, IDF1 0, HOTA 0; a shorter hypothesis sequence
  // counts as empty frames at its end.
  const MotSequence truth = sequence({{{1, kA}}, {{1, kA}}});
  const MotSequence none;
  EXPECT_DOUBLE_EQ(clear_mot(truth, none).mota, 0.0);
  EXPECT_EQ(clear_mot(truth, none).false_negatives, 2);
  EXPECT_DOUBLE_EQ(identity_metrics(truth, none).idf1, 0.0);
  EXPECT_DOUBLE_EQ(hota(truth, none).hota, 0.0);
  EXPECT_EQ(clear_mot(truth, sequence({{{10, kA}}})).false_negatives, 1);
  EXPECT_DOUBLE_EQ(clear_mot(none, none).mota, 1.0);
}

}  // namespace
}  // namespace fovea::track
