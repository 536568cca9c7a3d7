#include "pipeline/stage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <vector>

namespace fovea::pipeline {
namespace {

// Produces 0, 1, 2, ... up to `count` (forever without one), counting the stop_producer calls.
struct Counter {
  std::optional<int> count;
  int next = 0;
  std::atomic<int> stops{0};

  Result<std::optional<int>> produce() {
    if (count && next == *count) {
      return std::optional<int>();
    }
    return std::optional<int>(next++);
  }
};

SourceStage<int> counter_stage(Counter& counter, BoundedQueue<int>& output) {
  return SourceStage<int>(
      "source", output, [&counter] { return counter.produce(); }, [&counter] { counter.stops.fetch_add(1); });
}

Status keep(std::vector<int>& kept, int item) {
  kept.push_back(item);
  return Status::ok();
}

TEST(Stage, ItemsFlowThroughInOrderAndEveryStageEnds) {
  BoundedQueue<int> produced(2);
  BoundedQueue<int> doubled(2);
  Counter counter{.count = 50};
  std::vector<int> kept;
  SourceStage<int> source = counter_stage(counter, produced);
  TransformStage<int, int> twice("twice", produced, doubled, [](int&& x) -> Result<int> { return 2 * x; });
  SinkStage<int> sink("sink", doubled, [&](int&& x) { return keep(kept, x); });
  sink.start();
  twice.start();
  source.start();
  source.join();
  twice.join();
  sink.join();

  ASSERT_EQ(kept.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(kept[i], 2 * i);
  EXPECT_TRUE(source.status().is_ok());
  EXPECT_TRUE(twice.status().is_ok());
  EXPECT_TRUE(sink.status().is_ok());
  EXPECT_EQ(twice.latency().count, 50u);
  EXPECT_EQ(sink.stats().latency.count, 50u);
  EXPECT_EQ(twice.stats().name, "twice");
  EXPECT_EQ(counter.stops.load(), 1);
}

// A failing middle stage: downstream gets everything produced before the error and then ends;
// upstream, blocked on a full queue by an endless source, is released instead of hanging.
TEST(Stage, AnErrorStopsTheStageAndDrainsDownstream) {
  BoundedQueue<int> produced(2);
  BoundedQueue<int> checked(2);
  Counter endless;
  std::vector<int> kept;
  SourceStage<int> source = counter_stage(endless, produced);
  TransformStage<int, int> check("check", produced, checked, [](int&& x) -> Result<int> {
    if (x == 5) {
      return make_error(StatusCode::kCorruptData, "item 5 is damaged");
    }
    return x;
  });
  SinkStage<int> sink("sink", checked, [&](int&& x) { return keep(kept, x); });
  sink.start();
  check.start();
  source.start();
  source.join();
  check.join();
  sink.join();

  EXPECT_EQ(kept, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(check.status().code(), StatusCode::kCorruptData);
  EXPECT_EQ(check.status().message(), "stage check: item 5 is damaged");
  EXPECT_TRUE(source.status().is_ok());
  EXPECT_TRUE(sink.status().is_ok());
  EXPECT_EQ(endless.stops.load(), 1);
}

TEST(Stage, AFailingSinkReleasesUpstream) {
  BoundedQueue<int> produced(1);
  Counter endless;
  SourceStage<int> source = counter_stage(endless, produced);
  SinkStage<int> sink("writer", produced, [](int&& x) {
    return x == 3 ? make_error(StatusCode::kIoError, "out.mp4: disk full") : Status::ok();
  });
  sink.start();
  source.start();
  source.join();
  sink.join();
  EXPECT_EQ(sink.status().code(), StatusCode::kIoError);
  EXPECT_EQ(sink.status().message(), "stage writer: out.mp4: disk full");
  EXPECT_EQ(endless.stops.load(), 1);
}

TEST(Stage, AFailingSourceClosesItsOutput) {
  BoundedQueue<int> produced(4);
  SourceStage<int> source(
      "decode", produced,
      []() -> Result<std::optional<int>> {
        return make_error(StatusCode::kNotFound, "cam.mp4: no such file");
      },
      [] {});
  source.start();
  source.join();
  EXPECT_EQ(source.status().message(), "stage decode: cam.mp4: no such file");
  EXPECT_TRUE(produced.is_closed());
  EXPECT_EQ(produced.pop(), std::nullopt);
}

// Ctrl-C on a stage: what is already queued is still processed and passed on, then it ends.
TEST(Stage, RequestStopDrainsTheInput) {
  BoundedQueue<int> input(8);
  BoundedQueue<int> output(8);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(input.push(int{i}), PushResult::kPushed);
  TransformStage<int, int> plus_one("plus_one", input, output, [](int&& x) -> Result<int> { return x + 1; });
  plus_one.start();
  plus_one.request_stop();
  plus_one.join();
  EXPECT_TRUE(plus_one.status().is_ok());
  std::vector<int> out;
  while (std::optional<int> item = output.pop()) out.push_back(*item);
  EXPECT_EQ(out, (std::vector<int>{1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace fovea::pipeline
