// Assignment problems shared by the trackers (matching tracks to detections) and the metrics
// (matching ground truth to hypotheses): an optimal solver (the Hungarian method) on dense cost
// matrices, and a sparse front end that takes only the pairs allowed by a gate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fovea::track {

// One assigned pair: row `row` (a track, a ground-truth object) takes column `col`.
struct Match {
  std::uint32_t row = 0;
  std::uint32_t col = 0;
  friend bool operator==(const Match&, const Match&) = default;
};

// Minimum-cost assignment on a dense rows x cols matrix (row-major): every row is assigned when
// rows <= cols, every column otherwise, so min(rows, cols) pairs come back, sorted by row. The
// shortest-augmenting-path form of the Hungarian method (Kuhn 1955, Munkres 1957; Jonker and
// Volgenant's potentials), O(n^2 m) for n = min(rows, cols), m = max(rows, cols).
std::vector<Match> solve_assignment(std::span<const double> cost, std::uint32_t rows, std::uint32_t cols);

// A pair allowed by the caller's gate, with its cost (lower is better).
struct Candidate {
  std::uint32_t row = 0;
  std::uint32_t col = 0;
  double cost = 0.0;
};

enum class AssignmentMethod {
  kGreedy,   // pairs by ascending cost, each row and column taken once (DeepStream's IOU tracker)
  kOptimal,  // the most pairs possible among the candidates, then the least total cost
};

// Assigns rows to columns using only `candidates` (at most one per (row, col)). kOptimal splits
// the candidate graph into connected components and solves each one densely: at 100 objects per
// frame almost every component is one track and one detection, so the cubic solver runs on tiny
// matrices and the cost stays linear in the number of objects. Pairs come back sorted by row.
std::vector<Match> assign_candidates(std::span<const Candidate> candidates, std::uint32_t rows,
                                     std::uint32_t cols, AssignmentMethod method);

}  // namespace fovea::track
