#include "track/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "core/check.h"
#include "track/assignment.h"

namespace fovea::track {
namespace {

// TrackEval compares similarities with thresholds minus float64's epsilon, so that an IoU computed
// as exactly the threshold (0.5) passes despite rounding.
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

std::span<const MotObject> frame_of(const MotSequence& s, std::size_t f) {
  return f < s.frames.size() ? std::span<const MotObject>(s.frames[f]) : std::span<const MotObject>();
}

std::size_t frame_count(const MotSequence& a, const MotSequence& b) {
  return std::max(a.frames.size(), b.frames.size());
}

// Dense indices for a sequence's ids, in ascending id order.
class IdIndex {
 public:
  explicit IdIndex(const MotSequence& s) {
    for (const std::vector<MotObject>& frame : s.frames) {
      for (const MotObject& o : frame) index_.emplace(o.id, 0);
    }
    std::size_t next = 0;
    for (auto& [id, index] : index_) index = next++;
  }
  std::size_t size() const { return index_.size(); }
  std::size_t operator()(std::int64_t id) const { return index_.at(id); }

 private:
  std::map<std::int64_t, std::size_t> index_;
};

// IoU of every (truth, hypothesis) pair of one frame, row-major.
std::vector<double> iou_matrix(std::span<const MotObject> truth, std::span<const MotObject> hyp) {
  std::vector<double> iou(truth.size() * hyp.size());
  for (std::size_t g = 0; g < truth.size(); ++g) {
    for (std::size_t h = 0; h < hyp.size(); ++h) iou[g * hyp.size() + h] = box_iou(truth[g].box, hyp[h].box);
  }
  return iou;
}

// The assignment maximizing the sum of `score` (row-major, rows x cols).
std::vector<Match> maximize(const std::vector<double>& score, std::size_t rows, std::size_t cols) {
  std::vector<double> cost(score.size());
  std::transform(score.begin(), score.end(), cost.begin(), [](double s) { return -s; });
  return solve_assignment(cost, static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(cols));
}

}  // namespace

double hota_alpha(int index) {
  return 0.05 * (index + 1);
}

ClearMotMetrics clear_mot(const MotSequence& truth, const MotSequence& hypothesis) {
  const IdIndex truth_ids(truth), hyp_ids(hypothesis);
  // Per ground-truth object: the hypothesis it was matched to in the previous frame, and in any
  // earlier frame (the identity a switch is counted against).
  std::vector<std::optional<std::size_t>> previous(truth_ids.size()), last(truth_ids.size());
  ClearMotMetrics m;
  double iou_sum = 0.0;
  for (std::size_t f = 0; f < frame_count(truth, hypothesis); ++f) {
    const std::span<const MotObject> gt = frame_of(truth, f), hyp = frame_of(hypothesis, f);
    const std::vector<double> iou = iou_matrix(gt, hyp);
    // A pair that continues the previous frame's match outweighs any number of new ones (1000 >
    // the number of objects times the largest IoU, 1), as in TrackEval.
    std::vector<double> score(iou.size(), 0.0);
    for (std::size_t g = 0; g < gt.size(); ++g) {
      const std::optional<std::size_t> prev = previous[truth_ids(gt[g].id)];
      for (std::size_t h = 0; h < hyp.size(); ++h) {
        const double s = iou[g * hyp.size() + h];
        if (s < kMatchIou - kEpsilon) continue;
        score[g * hyp.size() + h] = s + (prev == hyp_ids(hyp[h].id) ? 1000.0 : 0.0);
      }
    }
    std::vector<std::optional<std::size_t>> now(truth_ids.size());
    std::int64_t matched = 0;
    for (const Match& match : maximize(score, gt.size(), hyp.size())) {
      if (score[match.row * hyp.size() + match.col] <= 0.0) continue;
      const std::size_t g = truth_ids(gt[match.row].id), h = hyp_ids(hyp[match.col].id);
      if (last[g].has_value() && *last[g] != h) ++m.id_switches;
      now[g] = last[g] = h;
      iou_sum += iou[match.row * hyp.size() + match.col];
      ++matched;
    }
    previous = std::move(now);
    m.ground_truth += static_cast<std::int64_t>(gt.size());
    m.matches += matched;
    m.false_negatives += static_cast<std::int64_t>(gt.size()) - matched;
    m.false_positives += static_cast<std::int64_t>(hyp.size()) - matched;
  }
  m.mota = 1.0 - static_cast<double>(m.false_negatives + m.false_positives + m.id_switches) /
                     static_cast<double>(std::max<std::int64_t>(1, m.ground_truth));
  m.motp = iou_sum / static_cast<double>(std::max<std::int64_t>(1, m.matches));
  return m;
}

IdentityMetrics identity_metrics(const MotSequence& truth, const MotSequence& hypothesis) {
  const IdIndex truth_ids(truth), hyp_ids(hypothesis);
  // overlap[g][h]: frames in which trajectories g and h are both present with IoU >= 0.5.
  std::vector<double> overlap(truth_ids.size() * hyp_ids.size(), 0.0);
  std::int64_t truth_count = 0, hyp_count = 0;
  for (std::size_t f = 0; f < frame_count(truth, hypothesis); ++f) {
    const std::span<const MotObject> gt = frame_of(truth, f), hyp = frame_of(hypothesis, f);
    truth_count += static_cast<std::int64_t>(gt.size());
    hyp_count += static_cast<std::int64_t>(hyp.size());
    for (const MotObject& g : gt) {
      for (const MotObject& h : hyp) {
        if (box_iou(g.box, h.box) >= kMatchIou - kEpsilon)
          overlap[truth_ids(g.id) * hyp_ids.size() + hyp_ids(h.id)] += 1;
      }
    }
  }
  IdentityMetrics m;
  for (const Match& match : maximize(overlap, truth_ids.size(), hyp_ids.size())) {
    m.idtp += static_cast<std::int64_t>(overlap[match.row * hyp_ids.size() + match.col]);
  }
  m.idfn = truth_count - m.idtp;
  m.idfp = hyp_count - m.idtp;
  const auto ratio = [](std::int64_t a, std::int64_t b) {
    return static_cast<double>(a) / static_cast<double>(std::max<std::int64_t>(1, b));
  };
  m.idf1 = ratio(2 * m.idtp, truth_count + hyp_count);
  m.idp = ratio(m.idtp, m.idtp + m.idfp);
  m.idr = ratio(m.idtp, m.idtp + m.idfn);
  return m;
}

HotaMetrics hota(const MotSequence& truth, const MotSequence& hypothesis) {
  const IdIndex truth_ids(truth), hyp_ids(hypothesis);
  const std::size_t nh = hyp_ids.size();
  const std::size_t frames = frame_count(truth, hypothesis);
  // Pass 1: each pair's global alignment score, A(g, h) = potential / (|g| + |h| - potential), where
  // a frame adds to the pair's potential its IoU normalized by the row and column sums of that
  // frame's IoU matrix (how much of either object the pair can claim).
  std::vector<double> potential(truth_ids.size() * nh, 0.0);
  std::vector<double> truth_len(truth_ids.size(), 0.0), hyp_len(nh, 0.0);
  for (std::size_t f = 0; f < frames; ++f) {
    const std::span<const MotObject> gt = frame_of(truth, f), hyp = frame_of(hypothesis, f);
    const std::vector<double> iou = iou_matrix(gt, hyp);
    std::vector<double> row_sum(gt.size(), 0.0), col_sum(hyp.size(), 0.0);
    for (std::size_t g = 0; g < gt.size(); ++g) {
      for (std::size_t h = 0; h < hyp.size(); ++h) {
        row_sum[g] += iou[g * hyp.size() + h];
        col_sum[h] += iou[g * hyp.size() + h];
      }
    }
    for (std::size_t g = 0; g < gt.size(); ++g) {
      truth_len[truth_ids(gt[g].id)] += 1;
      for (std::size_t h = 0; h < hyp.size(); ++h) {
        const double s = iou[g * hyp.size() + h], denominator = row_sum[g] + col_sum[h] - s;
        if (denominator > kEpsilon)
          potential[truth_ids(gt[g].id) * nh + hyp_ids(hyp[h].id)] += s / denominator;
      }
    }
    for (const MotObject& h : hyp) hyp_len[hyp_ids(h.id)] += 1;
  }
  std::vector<double> alignment(potential.size(), 0.0);
  for (std::size_t g = 0; g < truth_ids.size(); ++g) {
    for (std::size_t h = 0; h < nh; ++h) {
      const double p = potential[g * nh + h];
      alignment[g * nh + h] = p / std::max(kEpsilon, truth_len[g] + hyp_len[h] - p);
    }
  }
  // Pass 2: one matching per frame maximizing IoU x alignment; per alpha, the matched pairs with
  // IoU >= alpha are true positives and count toward their pair's associations.
  std::array<double, kHotaAlphas> tp{};
  double truth_total = 0.0, hyp_total = 0.0;
  std::vector<std::vector<double>> pair_matches(kHotaAlphas, std::vector<double>(potential.size(), 0.0));
  for (std::size_t f = 0; f < frames; ++f) {
    const std::span<const MotObject> gt = frame_of(truth, f), hyp = frame_of(hypothesis, f);
    const std::vector<double> iou = iou_matrix(gt, hyp);
    std::vector<double> score(iou.size());
    for (std::size_t g = 0; g < gt.size(); ++g) {
      for (std::size_t h = 0; h < hyp.size(); ++h) {
        score[g * hyp.size() + h] =
            iou[g * hyp.size() + h] * alignment[truth_ids(gt[g].id) * nh + hyp_ids(hyp[h].id)];
      }
    }
    const std::vector<Match> matches = maximize(score, gt.size(), hyp.size());
    truth_total += static_cast<double>(gt.size());
    hyp_total += static_cast<double>(hyp.size());
    for (int a = 0; a < kHotaAlphas; ++a) {
      for (const Match& match : matches) {
        if (iou[match.row * hyp.size() + match.col] < hota_alpha(a) - kEpsilon) continue;
        tp[a] += 1;
        pair_matches[a][truth_ids(gt[match.row].id) * nh + hyp_ids(hyp[match.col].id)] += 1;
      }
    }
  }
  HotaMetrics m;
  for (int a = 0; a < kHotaAlphas; ++a) {
    // AssA: the mean over true positives of their pair's association IoU, TPA / (TPA + FNA + FPA),
    // where TPA = the pair's matches, TPA + FNA = |g| and TPA + FPA = |h|.
    double association = 0.0;
    for (std::size_t g = 0; g < truth_ids.size(); ++g) {
      for (std::size_t h = 0; h < nh; ++h) {
        const double tpa = pair_matches[a][g * nh + h];
        if (tpa > 0) association += tpa * tpa / (truth_len[g] + hyp_len[h] - tpa);
      }
    }
    const double assa = association / std::max(1.0, tp[a]);
    const double fn = truth_total - tp[a], fp = hyp_total - tp[a];
    const double deta = tp[a] / std::max(1.0, tp[a] + fn + fp);
    m.hota_at[a] = std::sqrt(deta * assa);
    m.hota += m.hota_at[a] / kHotaAlphas;
    m.deta += deta / kHotaAlphas;
    m.assa += assa / kHotaAlphas;
  }
  return m;
}

}  // namespace fovea::track
