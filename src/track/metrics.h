// Tracking-quality metrics, from their published definitions (not from a library):
//   CLEAR-MOT  Bernardin and Stiefelhagen, "Evaluating Multiple Object Tracking Performance: The
//              CLEAR MOT Metrics", 2008: MOTA = 1 - (FN + FP + IDSW) / GT, MOTP = mean IoU of matches.
//   IDF1       Ristani et al., "Performance Measures and a Data Set for Multi-Target, Multi-Camera
//              Tracking", 2016: one global one-to-one matching of ground-truth and hypothesis
//              trajectories maximizing the frames they share; IDF1 = 2 IDTP / (GT + hypotheses).
//   HOTA       Luiten et al., "HOTA: A Higher Order Metric for Evaluating Multi-Object Tracking",
//              IJCV 2021: per localization threshold alpha, HOTA = sqrt(DetA * AssA), averaged over
//              alpha = 0.05, 0.10, ..., 0.95.
// Details that the papers leave to the implementation follow TrackEval (the MOTChallenge
// evaluation code), which the published benchmark figures come from: CLEAR-MOT keeps a pair that
// was matched in the previous frame when it still overlaps enough, then matches the rest
// optimally, and counts an identity switch against the hypothesis a ground-truth object was last
// matched to (in any earlier frame); HOTA matches each frame once, maximizing IoU weighted by the
// pair's global alignment score, and keeps the matches above each alpha.
// Similarity is box IoU everywhere; CLEAR-MOT and IDF1 match at IoU >= 0.5.
#pragma once

#include <array>
#include <cstdint>

#include "track/mot.h"

namespace fovea::track {

// The IoU a match needs for CLEAR-MOT and IDF1 (MOTChallenge's).
inline constexpr double kMatchIou = 0.5;

struct ClearMotMetrics {
  double mota = 0.0;
  double motp = 0.0;  // mean IoU of the matches
  std::int64_t ground_truth = 0;
  std::int64_t matches = 0;
  std::int64_t false_negatives = 0;
  std::int64_t false_positives = 0;
  std::int64_t id_switches = 0;
};

struct IdentityMetrics {
  double idf1 = 0.0;
  double idp = 0.0;  // IDTP / (IDTP + IDFP)
  double idr = 0.0;  // IDTP / (IDTP + IDFN)
  std::int64_t idtp = 0;
  std::int64_t idfp = 0;
  std::int64_t idfn = 0;
};

inline constexpr int kHotaAlphas = 19;  // 0.05, 0.10, ..., 0.95

struct HotaMetrics {
  double hota = 0.0;  // averages over the alphas
  double deta = 0.0;
  double assa = 0.0;
  std::array<double, kHotaAlphas> hota_at{};  // per alpha
};

// Sequences of different lengths are compared as if the shorter had empty frames at its end.
// Ids must be unique within a frame (parse_mot checks files; the trackers guarantee it).
ClearMotMetrics clear_mot(const MotSequence& truth, const MotSequence& hypothesis);
IdentityMetrics identity_metrics(const MotSequence& truth, const MotSequence& hypothesis);
HotaMetrics hota(const MotSequence& truth, const MotSequence& hypothesis);
double hota_alpha(int index);

}  // namespace fovea::track
