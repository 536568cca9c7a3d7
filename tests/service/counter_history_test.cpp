// The rates the API shows from readings of a source's counters, on readings with known times.
#include "service/counter_history.h"

#include <chrono>

#include <gtest/gtest.h>

namespace fovea::service {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Reading = CounterHistory::Reading;

const CounterHistory::Clock::time_point kT0{seconds(1000)};

TEST(CounterHistoryTest, NoRateBeforeTwoReadingsApart) {
  CounterHistory history;
  EXPECT_TRUE(history.empty());
  EXPECT_EQ(history.frames_per_second(seconds(5)), 0.0);
  EXPECT_EQ(history.dropped_over(seconds(10)), 0u);
  history.add({.time = kT0, .frames = 40, .dropped = 3});
  EXPECT_FALSE(history.empty());
  EXPECT_EQ(history.frames_per_second(seconds(5)), 0.0);
  EXPECT_EQ(history.dropped_over(seconds(10)), 0u);
}

TEST(CounterHistoryTest, TheWindowStartsAtTheNewestReadingThatOld) {
  CounterHistory history;
  // 25 fps for 20 s, read every second, 1 drop in the 4th second and 2 in the 15th.
  for (int s = 0; s <= 20; ++s) {
    history.add({.time = kT0 + seconds(s),
                 .frames = static_cast<std::uint64_t>(25 * s),
                 .dropped = static_cast<std::uint64_t>((s >= 4 ? 1 : 0) + (s >= 15 ? 2 : 0))});
  }
  EXPECT_DOUBLE_EQ(history.frames_per_second(seconds(5)), 25.0);
  EXPECT_EQ(history.dropped_over(seconds(10)), 2u);  // the drop at 4 s is older than 10 s
  EXPECT_EQ(history.dropped_over(seconds(5)), 0u);
}

TEST(CounterHistoryTest, SparseReadingsSpanSinceThePreviousOne) {
  CounterHistory history;
  history.add({.time = kT0, .frames = 0});
  history.add({.time = kT0 + seconds(15), .frames = 300, .dropped = 1});
  EXPECT_DOUBLE_EQ(history.frames_per_second(seconds(5)), 20.0);
  EXPECT_EQ(history.dropped_over(seconds(10)), 1u);
  history.add({.time = kT0 + seconds(30), .frames = 300, .dropped = 1});
  EXPECT_DOUBLE_EQ(history.frames_per_second(seconds(5)), 0.0);  // stalled since the last scrape
  EXPECT_EQ(history.dropped_over(seconds(10)), 0u);
}

TEST(CounterHistoryTest, ABurstOfReadingsKeepsTheBaseAndTheLatest) {
  CounterHistory history;
  history.add({.time = kT0, .frames = 0});
  // A thousand requests within a tenth of a second: the base stays, the latest wins.
  for (int i = 1; i <= 1000; ++i) {
    history.add({.time = kT0 + seconds(2) + std::chrono::microseconds(100 * i), .frames = 50});
  }
  EXPECT_NEAR(history.frames_per_second(seconds(5)), 50.0 / 2.1, 1e-9);
  history.add({.time = kT0 + seconds(4), .frames = 100});
  EXPECT_DOUBLE_EQ(history.frames_per_second(seconds(5)), 25.0);
}

TEST(CounterHistoryTest, ACounterThatWentDownIsNoChange) {
  CounterHistory history;
  history.add({.time = kT0, .frames = 100, .dropped = 5});
  history.add({.time = kT0 + milliseconds(500), .frames = 10, .dropped = 0});
  EXPECT_EQ(history.frames_per_second(seconds(5)), 0.0);
  EXPECT_EQ(history.dropped_over(seconds(10)), 0u);
}

}  // namespace
}  // namespace fovea::service
