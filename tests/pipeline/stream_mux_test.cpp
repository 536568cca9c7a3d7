#include "pipeline/stream_mux.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace fovea::pipeline {
namespace {

// Sources are named "A", "B", ...; a frame prints as its source's name and index ("B1").
std::vector<std::string> names(std::size_t count) {
  std::vector<std::string> result;
  for (std::size_t i = 0; i < count; ++i) result.emplace_back(1, static_cast<char>('A' + i));
  return result;
}

std::string describe(const Batch<int>& batch) {
  std::string text;
  for (const MuxFrame<int>& frame : batch.frames) {
    text +=
        fmt::format("{}{}{}", text.empty() ? "" : " ", static_cast<char>('A' + frame.source), frame.index);
  }
  return text;
}

std::vector<std::string> drain(StreamMux<int>& mux) {
  std::vector<std::string> batches;
  const std::uint64_t first_number = mux.batches();
  while (std::optional<Batch<int>> batch = mux.next_batch()) {
    EXPECT_EQ(batch->number, first_number + batches.size());
    batches.push_back(describe(*batch));
  }
  return batches;
}

// Pushes `count` frames (payload 100 * source + index, pts 40 ms apart) and, when `end`, the end.
void feed(StreamMux<int>& mux, std::size_t source, int count, bool end = true) {
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(mux.push(source, static_cast<int>(100 * source) + i, std::int64_t{40'000} * i));
  }
  if (end) mux.end(source);
}

MuxOptions options(std::size_t batch_size) {
  return {.batch_size = batch_size, .source_queue_capacity = 16};
}

TEST(StreamMux, RoundRobinOverSourcesOfDifferentLengths) {
  StreamMux<int> mux(options(4), names(3));
  feed(mux, 0, 5);
  feed(mux, 1, 2);
  feed(mux, 2, 3);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0 A1", "B1 C1 A2 C2", "A3 A4"}));
  const std::vector<SourceStats> stats = mux.source_stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].name, "A");
  EXPECT_EQ(stats[0].frames, 5u);
  EXPECT_EQ(stats[1].frames, 2u);
  EXPECT_EQ(stats[2].frames, 3u);
  EXPECT_TRUE(stats[1].ended);
  EXPECT_FALSE(stats[1].failed);
  EXPECT_EQ(mux.batches(), 3u);
}

// File mode waits for each source in turn, so the composition does not depend on thread timing.
TEST(StreamMux, FileModeCompositionIsIndependentOfTiming) {
  StreamMux<int> mux({.batch_size = 4, .source_queue_capacity = 1}, names(3));
  std::vector<std::thread> sources;
  for (std::size_t s = 0; s < 3; ++s) {
    sources.emplace_back([&mux, s] { feed(mux, s, s == 0 ? 5 : static_cast<int>(s) + 1); });
  }
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0 A1", "B1 C1 A2 C2", "A3 A4"}));
  for (std::thread& source : sources) source.join();
}

TEST(StreamMux, FramesCarrySourceIndexPtsAndPayload) {
  StreamMux<int> mux(options(2), names(2));
  feed(mux, 0, 1);
  ASSERT_TRUE(mux.push(1, 7, std::nullopt));
  mux.end(1);
  const std::optional<Batch<int>> batch = mux.next_batch();
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->frames.size(), 2u);
  EXPECT_EQ(batch->frames[0].payload, 0);
  EXPECT_EQ(batch->frames[0].pts_us, 0);
  EXPECT_EQ(batch->frames[1].source, 1u);
  EXPECT_EQ(batch->frames[1].index, 0);
  EXPECT_EQ(batch->frames[1].payload, 7);
  EXPECT_EQ(batch->frames[1].pts_us, std::nullopt);
  EXPECT_FALSE(mux.next_batch().has_value());
}

TEST(StreamMux, PerSourceCapLimitsEachSourcesShare) {
  MuxOptions capped = options(4);
  capped.max_frames_per_source_per_batch = 1;
  StreamMux<int> mux(capped, names(3));
  feed(mux, 0, 5);
  feed(mux, 1, 2);
  feed(mux, 2, 3);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0", "A1 B1 C1", "A2 C2", "A3", "A4"}));
}

TEST(StreamMux, CapOfTwoWithOneSource) {
  MuxOptions capped = options(4);
  capped.max_frames_per_source_per_batch = 2;
  StreamMux<int> mux(capped, names(1));
  feed(mux, 0, 5);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 A1", "A2 A3", "A4"}));
}

// B never delivers: with a push timeout the batch goes out partial instead of waiting for it.
TEST(StreamMux, PushTimeoutFlushesAPartialBatch) {
  MuxOptions timed = options(4);
  timed.push_timeout_us = 2'000;
  StreamMux<int> mux(timed, names(2));
  feed(mux, 0, 3, /*end=*/false);
  const std::optional<Batch<int>> first = mux.next_batch();
  ASSERT_TRUE(first.has_value());
  // File mode waits for B after A0 and B is silent: the timeout flushes A0 alone.
  EXPECT_EQ(describe(*first), "A0");
  mux.end(1);
  mux.end(0);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A1 A2"}));
}

// Live mode does not wait for a silent source while another has frames.
TEST(StreamMux, LiveModeTakesWhatIsThere) {
  MuxOptions live = options(4);
  live.push_timeout_us = 2'000;
  live.live = true;
  StreamMux<int> mux(live, names(3));
  feed(mux, 0, 3, /*end=*/false);
  feed(mux, 2, 1, /*end=*/false);
  const std::optional<Batch<int>> first = mux.next_batch();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(describe(*first), "A0 C0 A1 A2");
  mux.end(0);
  mux.end(1);
  mux.end(2);
  EXPECT_FALSE(mux.next_batch().has_value());
}

TEST(StreamMux, LiveSourceDropsItsOldestFrameWhenFull) {
  StreamMux<int> mux({.batch_size = 8, .live = true, .source_queue_capacity = 2}, names(1));
  feed(mux, 0, 5);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A3 A4"}));
  EXPECT_EQ(mux.source_stats()[0].dropped, 3u);
  EXPECT_EQ(mux.source_stats()[0].frames, 2u);
}

// A file source's push blocks while its queue is full (back-pressure), it does not drop.
TEST(StreamMux, FileSourceBlocksWhenFull) {
  StreamMux<int> mux({.batch_size = 1, .source_queue_capacity = 2}, names(1));
  std::thread source([&mux] { feed(mux, 0, 20); });
  std::vector<std::string> batches = drain(mux);
  source.join();
  EXPECT_EQ(batches.size(), 20u);
  EXPECT_EQ(batches.back(), "A19");
  EXPECT_EQ(mux.source_stats()[0].dropped, 0u);
}

TEST(StreamMux, AFailingSourceIsRemovedWhileTheOthersComplete) {
  StreamMux<int> mux(options(3), names(3));
  feed(mux, 0, 4);
  feed(mux, 1, 1, /*end=*/false);
  mux.fail(1, make_error(StatusCode::kCorruptData, "b.mp4: invalid NAL unit"));
  feed(mux, 2, 3);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0", "A1 C1 A2", "C2 A3"}));
  const std::vector<SourceStats> stats = mux.source_stats();
  EXPECT_TRUE(stats[1].failed);
  EXPECT_EQ(stats[1].error, "b.mp4: invalid NAL unit");
  EXPECT_EQ(stats[1].frames, 1u);
  EXPECT_FALSE(stats[0].failed);
  EXPECT_EQ(stats[0].frames, 4u);
  EXPECT_EQ(stats[2].frames, 3u);
}

// A source failing while the mux waits for it (file mode) does not hold up the others.
TEST(StreamMux, ASourceFailingWhileWaitedForIsSkipped) {
  StreamMux<int> mux(options(2), names(2));
  feed(mux, 0, 2);
  std::thread failing(
      [&mux] { mux.fail(1, make_error(StatusCode::kTimeout, "rtsp://cam1: no data for 5 s")); });
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 A1"}));
  failing.join();
  EXPECT_TRUE(mux.source_stats()[1].failed);
}

TEST(StreamMux, EndsAtOnceWhenEverySourceEndsEmpty) {
  StreamMux<int> mux(options(2), names(2));
  mux.end(0);
  mux.end(1);
  EXPECT_FALSE(mux.next_batch().has_value());
  EXPECT_EQ(mux.batches(), 0u);
}

TEST(StreamMux, RequestStopDrainsAndRefusesNewFrames) {
  StreamMux<int> mux(options(4), names(2));
  feed(mux, 0, 3, /*end=*/false);
  mux.request_stop();
  EXPECT_FALSE(mux.push(1, 0, std::nullopt));
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 A1 A2"}));
}

// A source blocked on its full queue is released by the stop (or, if it gets there after the
// stop, refused at once: the result is the same either way).
TEST(StreamMux, RequestStopReleasesABlockedSource) {
  StreamMux<int> mux({.batch_size = 1, .source_queue_capacity = 1}, names(1));
  ASSERT_TRUE(mux.push(0, 0, std::nullopt));
  bool second_push = true;
  std::thread source([&] { second_push = mux.push(0, 1, std::nullopt); });
  mux.request_stop();
  source.join();
  EXPECT_FALSE(second_push);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0"}));
}

TEST(StreamMux, ValidateNamesTheOption) {
  EXPECT_TRUE(validate(MuxOptions{}).is_ok());
  EXPECT_NE(validate({.batch_size = 0}).message().find("batch_size"), std::string::npos);
  EXPECT_NE(validate({.push_timeout_us = -2}).message().find("push_timeout_us"), std::string::npos);
  EXPECT_NE(
      validate({.max_frames_per_source_per_batch = 0}).message().find("max_frames_per_source_per_batch"),
      std::string::npos);
  EXPECT_NE(validate({.source_queue_capacity = 0}).message().find("source_queue_capacity"),
            std::string::npos);
}

}  // namespace
}  // namespace fovea::pipeline
