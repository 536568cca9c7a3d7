#include <gtest/gtest.h>

#include "track/assignment.h"
#include "track/kalman.h"

namespace fovea::track {
namespace {

TEST(SolveAssignment, SquareMatrix) {
  // Rows take columns 1, 0, 2 for 1 + 2 + 2 = 5, the cheapest of the six permutations (the
  // identity costs 4 + 0 + 2 = 6, the others 8 or more).
  const std::vector<double> cost = {4, 1, 3,  //
                                    2, 0, 5,  //
                                    3, 2, 2};
  const std::vector<Match> m = solve_assignment(cost, 3, 3);
  EXPECT_EQ(m, (std::vector<Match>{{0, 1}, {1, 0}, {2, 2}}));
}

TEST(SolveAssignment, RectangularBothWays) {
  // 2 rows x 3 columns: every row is assigned; 3 x 2: every column.
  const std::vector<double> wide = {5, 1, 9,  //
                                    1, 5, 9};
  EXPECT_EQ(solve_assignment(wide, 2, 3), (std::vector<Match>{{0, 1}, {1, 0}}));
  const std::vector<double> tall = {5, 1,  //
                                    9, 9,  //
                                    1, 5};
  EXPECT_EQ(solve_assignment(tall, 3, 2), (std::vector<Match>{{0, 1}, {2, 0}}));
  EXPECT_TRUE(solve_assignment({}, 0, 4).empty());
}

TEST(AssignCandidates, OptimalTakesMorePairsThanGreedy) {
  // Row 0 fits column 0 best, but row 1 can only take column 0: greedy pairs (0, 0) and leaves row
  // 1 alone; the optimal assignment pairs (0, 1) and (1, 0).
  const Candidate c[] = {{0, 0, 0.1}, {0, 1, 0.2}, {1, 0, 0.3}};
  EXPECT_EQ(assign_candidates(c, 2, 2, AssignmentMethod::kGreedy), (std::vector<Match>{{0, 0}}));
  EXPECT_EQ(assign_candidates(c, 2, 2, AssignmentMethod::kOptimal), (std::vector<Match>{{0, 1}, {1, 0}}));
}

TEST(AssignCandidates, ComponentsAreSolvedApart) {
  // Two separate conflicts plus a lone pair and a row with no candidate.
  const Candidate c[] = {{0, 0, 0.5}, {0, 1, 0.1}, {1, 1, 0.2},  // -> (0,0), (1,1)
                         {2, 3, 0.4},                            // lone
                         {4, 4, 0.9}, {4, 5, 0.8}};              // -> (4,5)
  EXPECT_EQ(assign_candidates(c, 5, 6, AssignmentMethod::kOptimal),
            (std::vector<Match>{{0, 0}, {1, 1}, {2, 3}, {4, 5}}));
}

TEST(BoxKalman, LearnsAConstantVelocity) {
  // A 50x100 box moving (+4, -2) px per frame: after 30 updates the prediction is within 0.5 px.
  const auto box_at = [](int f) {
    const float x = 100.0f + 4.0f * static_cast<float>(f), y = 500.0f - 2.0f * static_cast<float>(f);
    return Box{x, y, x + 50, y + 100};
  };
  BoxKalman k(box_at(0));
  for (int f = 1; f <= 30; ++f) {
    k.predict(false);
    k.update(box_at(f));
  }
  k.predict(false);
  const Box p = k.box(), e = box_at(31);
  EXPECT_NEAR(p.x1, e.x1, 0.5f);
  EXPECT_NEAR(p.y1, e.y1, 0.5f);
  EXPECT_NEAR(p.x2, e.x2, 0.5f);
  EXPECT_NEAR(p.y2, e.y2, 0.5f);
}

}  // namespace
}  // namespace fovea::track
