#include "track/assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace fovea::track {
namespace {

// The Hungarian method for n <= m (rows <= cols), with row and column potentials u, v and the
// shortest augmenting path grown one row at a time. Indices are 1-based inside, 0 meaning "none",
// as in the textbook form; `at(i, j)` reads the caller's 0-based matrix.
template <typename At>
std::vector<std::uint32_t> hungarian_rows(std::uint32_t n, std::uint32_t m, At at) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0.0), v(m + 1, 0.0), min_to(m + 1);
  std::vector<std::uint32_t> row_of(m + 1, 0), way(m + 1, 0);
  std::vector<char> used(m + 1);
  for (std::uint32_t i = 1; i <= n; ++i) {
    row_of[0] = i;
    std::uint32_t j0 = 0;
    std::fill(min_to.begin(), min_to.end(), inf);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[j0] = 1;
      const std::uint32_t i0 = row_of[j0];
      double delta = inf;
      std::uint32_t j1 = 0;
      for (std::uint32_t j = 1; j <= m; ++j) {
        if (used[j]) continue;
        const double reduced = at(i0 - 1, j - 1) - u[i0] - v[j];
        if (reduced < min_to[j]) {
          min_to[j] = reduced;
          way[j] = j0;
        }
        if (min_to[j] < delta) {
          delta = min_to[j];
          j1 = j;
        }
      }
      for (std::uint32_t j = 0; j <= m; ++j) {
        if (used[j]) {
          u[row_of[j]] += delta;
          v[j] -= delta;
        } else {
          min_to[j] -= delta;
        }
      }
      j0 = j1;
    } while (row_of[j0] != 0);
    do {
      const std::uint32_t j1 = way[j0];
      row_of[j0] = row_of[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  // col_of_row[i] for 0-based rows.
  std::vector<std::uint32_t> col_of_row(n);
  for (std::uint32_t j = 1; j <= m; ++j) {
    if (row_of[j] != 0) col_of_row[row_of[j] - 1] = j - 1;
  }
  return col_of_row;
}

// Union-find over rows (0..rows-1) and columns (rows..rows+cols-1), to split the candidate graph.
class DisjointSets {
 public:
  explicit DisjointSets(std::uint32_t size) : parent_(size) { std::iota(parent_.begin(), parent_.end(), 0u); }
  std::uint32_t find(std::uint32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void unite(std::uint32_t a, std::uint32_t b) { parent_[find(a)] = find(b); }

 private:
  std::vector<std::uint32_t> parent_;
};

std::vector<Match> assign_greedy(std::span<const Candidate> candidates, std::uint32_t rows,
                                 std::uint32_t cols) {
  std::vector<Candidate> sorted(candidates.begin(), candidates.end());
  // Ties broken by (row, col) so the result never depends on the candidates' order.
  std::sort(sorted.begin(), sorted.end(), [](const Candidate& a, const Candidate& b) {
    if (a.cost != b.cost) return a.cost < b.cost;
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  std::vector<char> row_taken(rows, 0), col_taken(cols, 0);
  std::vector<Match> matches;
  for (const Candidate& c : sorted) {
    if (row_taken[c.row] || col_taken[c.col]) continue;
    row_taken[c.row] = col_taken[c.col] = 1;
    matches.push_back({c.row, c.col});
  }
  return matches;
}

// One component: its candidates with local indices, solved densely. Pairs that are not candidates
// cost `forbidden`, more than any sum of allowed costs, so the solver first uses as few of them as
// possible (the most allowed pairs) and then minimizes the allowed cost; forbidden pairs are dropped.
void solve_component(std::span<const Candidate> component, std::vector<Match>& matches) {
  std::vector<std::uint32_t> row_ids, col_ids;
  double magnitude = 0.0;
  for (const Candidate& c : component) {
    row_ids.push_back(c.row);
    col_ids.push_back(c.col);
    magnitude += std::fabs(c.cost);
  }
  for (std::vector<std::uint32_t>* ids : {&row_ids, &col_ids}) {
    std::sort(ids->begin(), ids->end());
    ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
  }
  const auto local = [](const std::vector<std::uint32_t>& ids, std::uint32_t id) {
    return static_cast<std::uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  };
  const auto rows = static_cast<std::uint32_t>(row_ids.size());
  const auto cols = static_cast<std::uint32_t>(col_ids.size());
  const double forbidden = 2.0 * magnitude + 1.0;
  std::vector<double> cost(std::size_t{rows} * cols, forbidden);
  std::vector<char> allowed(cost.size(), 0);
  for (const Candidate& c : component) {
    const std::size_t at = std::size_t{local(row_ids, c.row)} * cols + local(col_ids, c.col);
    cost[at] = c.cost;
    allowed[at] = 1;
  }
  for (const Match& m : solve_assignment(cost, rows, cols)) {
    if (allowed[std::size_t{m.row} * cols + m.col]) matches.push_back({row_ids[m.row], col_ids[m.col]});
  }
}

std::vector<Match> assign_optimal(std::span<const Candidate> candidates, std::uint32_t rows,
                                  std::uint32_t cols) {
  DisjointSets sets(rows + cols);
  for (const Candidate& c : candidates) sets.unite(c.row, rows + c.col);
  std::vector<Candidate> by_component(candidates.begin(), candidates.end());
  std::vector<std::uint32_t> root(rows);
  for (std::uint32_t r = 0; r < rows; ++r) root[r] = sets.find(r);
  std::stable_sort(by_component.begin(), by_component.end(),
                   [&](const Candidate& a, const Candidate& b) { return root[a.row] < root[b.row]; });
  std::vector<Match> matches;
  for (std::size_t begin = 0; begin < by_component.size();) {
    std::size_t end = begin + 1;
    while (end < by_component.size() && root[by_component[end].row] == root[by_component[begin].row]) ++end;
    if (end - begin == 1) {
      matches.push_back({by_component[begin].row, by_component[begin].col});
    } else {
      solve_component(std::span(by_component).subspan(begin, end - begin), matches);
    }
    begin = end;
  }
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) { return a.row < b.row; });
  return matches;
}

}  // namespace

std::vector<Match> solve_assignment(std::span<const double> cost, std::uint32_t rows, std::uint32_t cols) {
  FOVEA_CHECK(cost.size() == std::size_t{rows} * cols);
  std::vector<Match> matches;
  if (rows == 0 || cols == 0) return matches;
  if (rows <= cols) {
    const auto col_of_row = hungarian_rows(
        rows, cols, [&](std::uint32_t i, std::uint32_t j) { return cost[std::size_t{i} * cols + j]; });
    for (std::uint32_t r = 0; r < rows; ++r) matches.push_back({r, col_of_row[r]});
    return matches;
  }
  const auto row_of_col = hungarian_rows(
      cols, rows, [&](std::uint32_t i, std::uint32_t j) { return cost[std::size_t{j} * cols + i]; });
  for (std::uint32_t c = 0; c < cols; ++c) matches.push_back({row_of_col[c], c});
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) { return a.row < b.row; });
  return matches;
}

std::vector<Match> assign_candidates(std::span<const Candidate> candidates, std::uint32_t rows,
                                     std::uint32_t cols, AssignmentMethod method) {
  for (const Candidate& c : candidates) FOVEA_CHECK(c.row < rows && c.col < cols && std::isfinite(c.cost));
  return method == AssignmentMethod::kGreedy ? assign_greedy(candidates, rows, cols)
                                             : assign_optimal(candidates, rows, cols);
}

}  // namespace fovea::track
