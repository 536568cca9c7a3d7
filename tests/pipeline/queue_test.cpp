#include "pipeline/queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace fovea::pipeline {
namespace {

TEST(BoundedQueue, PopsInPushOrder) {
  BoundedQueue<int> queue(3);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(queue.push(int{i}), PushResult::kPushed);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(queue.pop(), i);
}

TEST(BoundedQueue, TryVariantsNeverBlock) {
  BoundedQueue<int> queue(1);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
  EXPECT_EQ(queue.try_push(1), PushResult::kPushed);
  EXPECT_EQ(queue.try_push(2), PushResult::kTimedOut);
  EXPECT_EQ(queue.try_pop(), 1);
}

TEST(BoundedQueue, TimedVariantsGiveUpAtTheDeadline) {
  BoundedQueue<int> queue(1);
  EXPECT_EQ(queue.pop_for(std::chrono::microseconds(500)), std::nullopt);
  EXPECT_FALSE(queue.is_closed());
  ASSERT_EQ(queue.push(1), PushResult::kPushed);
  EXPECT_EQ(queue.push_for(std::chrono::microseconds(500), 2), PushResult::kTimedOut);
  EXPECT_EQ(queue.counters().depth, 1u);
}

TEST(BoundedQueue, AFailedPushLeavesTheItemWithTheCaller) {
  BoundedQueue<std::unique_ptr<int>> queue(1);
  ASSERT_EQ(queue.push(std::make_unique<int>(1)), PushResult::kPushed);
  auto item = std::make_unique<int>(2);
  EXPECT_EQ(queue.try_push(std::move(item)), PushResult::kTimedOut);
  ASSERT_NE(item, nullptr);
  queue.close();
  EXPECT_EQ(queue.push(std::move(item)), PushResult::kClosed);
  EXPECT_NE(item, nullptr);
}

TEST(BoundedQueue, CloseDrainsWhatIsQueuedThenEnds) {
  BoundedQueue<int> queue(4);
  ASSERT_EQ(queue.push(1), PushResult::kPushed);
  ASSERT_EQ(queue.push(2), PushResult::kPushed);
  queue.close();
  EXPECT_EQ(queue.push(3), PushResult::kClosed);
  EXPECT_EQ(queue.pop(), 1);
  EXPECT_EQ(queue.pop(), 2);
  EXPECT_EQ(queue.pop(), std::nullopt);
  EXPECT_EQ(queue.pop(), std::nullopt);
}

TEST(BoundedQueue, CloseWakesABlockedConsumer) {
  BoundedQueue<int> queue(1);
  std::optional<int> popped = 7;
  std::thread consumer([&] { popped = queue.pop(); });
  queue.close();
  consumer.join();
  EXPECT_EQ(popped, std::nullopt);
}

TEST(BoundedQueue, CloseWakesABlockedProducer) {
  BoundedQueue<int> queue(1);
  ASSERT_EQ(queue.push(1), PushResult::kPushed);
  PushResult result = PushResult::kPushed;
  std::thread producer([&] { result = queue.push(2); });
  queue.close();
  producer.join();
  EXPECT_EQ(result, PushResult::kClosed);
}

// A slow consumer: the producer blocks on the full queue instead of running ahead, so the depth
// never exceeds the capacity. Checked by counting, not timing: the consumer samples the depth and
// how far the producer got before each pop.
TEST(BoundedQueue, BackPressureBlocksTheProducer) {
  constexpr int kItems = 200;
  constexpr std::size_t kCapacity = 3;
  BoundedQueue<int> queue(kCapacity);
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      ASSERT_EQ(queue.push(int{i}), PushResult::kPushed);
      pushed.fetch_add(1);
    }
    queue.close();
  });
  int popped = 0;
  int max_ahead = 0;
  while (std::optional<int> item = queue.pop()) {
    EXPECT_EQ(*item, popped);
    ++popped;
    std::this_thread::yield();  // slow: give the producer every chance to run ahead
    EXPECT_LE(queue.counters().depth, kCapacity);
    max_ahead = std::max(max_ahead, pushed.load() - popped);
  }
  producer.join();
  EXPECT_EQ(popped, kItems);
  // Pushed but not yet popped: at most the queued items plus the one the producer counts late.
  EXPECT_LE(max_ahead, static_cast<int>(kCapacity) + 1);
  const QueueCounters counters = queue.counters();
  EXPECT_LE(counters.high_water, kCapacity);
  EXPECT_EQ(counters.pushed, static_cast<std::size_t>(kItems));
  EXPECT_EQ(counters.capacity, kCapacity);
}

}  // namespace
}  // namespace fovea::pipeline
